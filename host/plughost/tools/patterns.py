"""JSON Schema ``pattern`` matching in linear time, with RE2.

A tool's schema comes from a plugin or an MCP server, and its arguments from a
model: with Python's backtracking ``re``, a pattern like ``^(a+)+$`` against a
long argument stalls the host's event loop for seconds per call. RE2 matches in
time linear in the input, whatever the pattern. It has no backreferences and no
lookaround; a schema that uses them is refused as a faulty schema (its tool
fails with ``invalid_tool_schema``, and a plugin declaring one fails to load)
rather than matched with an engine that can be made to hang.

:func:`safe_validator_class` is ``Draft202012Validator`` with ``pattern``,
``patternProperties`` and ``additionalProperties`` matched through RE2.

What does not live here: the rest of argument checking (:mod:`plughost.tools.arguments`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

import re2

__all__ = ["PatternError", "check_patterns", "safe_search", "safe_validator_class"]

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is reported by us, not on stderr
_OPTIONS.max_mem = 8 << 20  # bytes for one compiled pattern; a larger one is refused


class PatternError(ValueError):
    """A pattern RE2 cannot compile (a backreference, lookaround, or too large)."""


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> Any:
    try:
        return re2.compile(pattern, options=_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise PatternError(
            f"pattern {pattern!r} cannot be matched safely ({reason}); the host matches "
            "patterns with RE2, which has no backreferences or lookaround"
        ) from None


def safe_search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches somewhere in ``text`` (JSON Schema semantics), in linear time.

    Raises:
        PatternError: RE2 cannot compile ``pattern``.
    """
    return _compiled(pattern).search(text) is not None


def check_patterns(schema: Any) -> None:
    """Compile every ``pattern`` and ``patternProperties`` key in ``schema``, at any depth.

    Raises:
        PatternError: one of them cannot be matched safely.
    """
    for pattern in _patterns(schema):
        _compiled(pattern)


def _patterns(node: Any) -> Iterator[str]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "pattern" and isinstance(value, str):
                yield value
            elif key == "patternProperties" and isinstance(value, Mapping):
                yield from (k for k in value if isinstance(k, str))
            yield from _patterns(value)
    elif isinstance(node, list):
        for item in node:
            yield from _patterns(item)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    if validator.is_type(instance, "string") and not safe_search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if safe_search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [
        key
        for key in instance
        if key not in properties and not any(safe_search(p, key) for p in patterns)
    ]
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        from jsonschema import ValidationError

        listed = ", ".join(repr(extra) for extra in sorted(extras))
        yield ValidationError(f"Additional properties are not allowed ({listed} unexpected)")


@functools.cache
def safe_validator_class() -> Any:
    """``Draft202012Validator`` whose pattern keywords match with RE2."""
    import jsonschema  # 70 ms: paid by the first call, not by every importer of this module

    return jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        jsonschema.Draft202012Validator,
        {
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
            "additionalProperties": _additional_properties,
        },
    )
