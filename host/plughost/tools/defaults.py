"""Declared defaults, filled in before a call so a handler never misses a parameter.

A tool may declare ``"default": 5`` for a parameter the model can leave out
(``ToolParameterInfo(..., required=False, default=5)`` in the SDK) and write its
handler without a Python default, as the MaiBot tool pages do. The registry
therefore fills every top-level property that has a declared default and was
not sent, after the arguments passed their check, for plugin, built-in and MCP
tools alike. Nested objects are left as sent: their defaults are the tool's
business.

What does not live here: checking and casting (:mod:`plughost.tools.arguments`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

__all__ = ["fill_defaults"]

_IMMUTABLE = (str, int, float, bool, type(None))
_CACHE_SIZE = 512
_cache: dict[int, tuple[Mapping[str, Any], tuple[tuple[str, Any], ...]]] = {}


def fill_defaults(values: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """Add the declared default of every top-level property missing from ``values``.

    Args:
        values: Checked arguments; changed in place.
        schema: The tool's parameters JSON Schema.

    Returns:
        ``values``, for chaining.
    """
    for name, default in _defaults(schema):
        if name not in values:
            values[name] = default if isinstance(default, _IMMUTABLE) else copy.deepcopy(default)
    return values


def _defaults(schema: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    # Specs are long-lived objects, so their schema's identity is a cheap key; the
    # schema is kept in the entry so a recycled id can never match another schema.
    cached = _cache.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    properties = schema.get("properties")
    found: tuple[tuple[str, Any], ...] = ()
    if isinstance(properties, Mapping):
        found = tuple(
            (str(name), fragment["default"])
            for name, fragment in properties.items()
            if isinstance(fragment, Mapping) and "default" in fragment
        )
    if len(_cache) >= _CACHE_SIZE:
        _cache.clear()
    _cache[id(schema)] = (schema, found)
    return found
