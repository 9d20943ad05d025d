"""Cast a model's argument values to the types a JSON Schema asks for, where intent is clear.

Part of argument preparation (:mod:`plughost.tools.arguments` runs it before
validation): ``"60"`` becomes ``60`` for an ``integer``, ``"yes"`` becomes ``True``
for a ``boolean``, a JSON string becomes the array or object it spells. A value
that already fits one of the allowed types is left alone, a ``bool`` is never
cast to a number, and anything without one obvious meaning is left for the
validator to report. Casting recurses into ``items``, ``prefixItems``,
``properties``, ``patternProperties`` and ``additionalProperties`` and follows
local ``$ref``\\ s, at most a bounded number of hops.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from plughost.tools.patterns import safe_search

__all__ = ["DecodeProblem", "cast_value", "decode_json", "schema_types"]

_TRUE_WORDS = frozenset({"true", "yes", "1"})
_FALSE_WORDS = frozenset({"false", "no", "0"})
_INTEGER_TEXT = re.compile(r"[+-]?\d+")
_NUMBER_TEXT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_MAX_REF_HOPS = 16
_NO_CAST: Final = object()


@dataclass(frozen=True, slots=True)
class DecodeProblem:
    text: str


def decode_json(raw: Any) -> Any:
    if isinstance(raw, bytes | bytearray):
        raw = bytes(raw).decode("utf-8", "replace")
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except ValueError as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        return DecodeProblem(
            f"arguments are not valid JSON ({reason}); send a JSON object such as "
            '{"name": "value"}'
        )


# --- casting -----------------------------------------------------------------------------


def cast_value(value: Any, schema: Any, root: Mapping[str, Any], hops: int) -> Any:
    """Return ``value`` cast towards ``schema`` where the intent is clear; never raises."""
    schema = _dereference(schema, root)
    if not isinstance(schema, Mapping):
        return value
    types = schema_types(schema)
    if not types:
        branch = _single_branch(schema)
        if branch is not None and hops < _MAX_REF_HOPS:
            return cast_value(value, branch, root, hops + 1)
        return _descend(value, schema, root)
    if any(_fits(value, json_type) for json_type in types):
        return _descend(value, schema, root)
    for json_type in types:
        converted = _convert(value, json_type)
        if converted is not _NO_CAST:
            return _descend(converted, schema, root)
    return value


def _dereference(schema: Any, root: Mapping[str, Any]) -> Any:
    for _ in range(_MAX_REF_HOPS):
        if not isinstance(schema, Mapping) or "type" in schema:
            return schema
        ref = schema.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#"):
            return schema
        target: Any = root
        for part in ref[1:].split("/")[1:]:
            key = part.replace("~1", "/").replace("~0", "~")
            target = target.get(key) if isinstance(target, Mapping) else None
        schema = target
    return schema


def schema_types(schema: Mapping[str, Any]) -> list[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list):
        return [t for t in declared if isinstance(t, str)]
    return []


def _single_branch(schema: Mapping[str, Any]) -> Any:
    """The one non-null branch of an ``anyOf``/``oneOf`` (``Optional[X]``), if any."""
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            useful = [
                b for b in branches if not (isinstance(b, Mapping) and b.get("type") == "null")
            ]
            return useful[0] if len(useful) == 1 else None
    return None


def _fits(value: Any, json_type: str) -> bool:
    if json_type == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if json_type == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    checks: dict[str, type | tuple[type, ...]] = {
        "string": str,
        "boolean": bool,
        "array": list,
        "object": dict,
        "null": type(None),
    }
    expected = checks.get(json_type)
    return expected is not None and isinstance(value, expected)


def _convert(value: Any, json_type: str) -> Any:
    if isinstance(value, bool):  # never a number, never a string: the model meant a flag
        return _NO_CAST
    if json_type in ("integer", "number"):
        return _to_number(value, integer=json_type == "integer")
    if json_type == "boolean" and isinstance(value, str):
        word = value.strip().lower()
        return True if word in _TRUE_WORDS else False if word in _FALSE_WORDS else _NO_CAST
    if json_type == "string" and isinstance(value, int | float) and math.isfinite(value):
        return str(value)
    if json_type in ("array", "object") and isinstance(value, str):
        decoded = decode_json(value) if value.strip()[:1] in ("[", "{") else None
        return decoded if _fits(decoded, json_type) else _NO_CAST
    return _NO_CAST


def _to_number(value: Any, *, integer: bool) -> Any:
    number: int | float
    if isinstance(value, float):
        number = value
    elif isinstance(value, str) and _INTEGER_TEXT.fullmatch(text := value.strip()):
        try:
            return int(text)
        except ValueError:  # more digits than int() accepts
            return _NO_CAST
    elif isinstance(value, str) and _NUMBER_TEXT.fullmatch(text := value.strip()):
        number = float(text)
    else:
        return _NO_CAST
    if not math.isfinite(number):
        return _NO_CAST
    if integer:
        return int(number) if number.is_integer() else _NO_CAST
    return number


def _descend(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> Any:
    if isinstance(value, list):
        prefix = schema.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        items = schema.get("items")
        return [
            cast_value(item, prefix[i] if i < len(prefix) else items, root, 0)
            for i, item in enumerate(value)
        ]
    if isinstance(value, dict):
        return {
            key: cast_value(item, _field_schema(schema, key), root, 0)
            for key, item in value.items()
        }
    return value


def _field_schema(schema: Mapping[str, Any], key: Any) -> Any:
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and key in properties:
        return properties[key]
    patterns = schema.get("patternProperties")
    if isinstance(patterns, Mapping) and isinstance(key, str):
        for pattern, fragment in patterns.items():
            if safe_search(pattern, key):
                return fragment
    return schema.get("additionalProperties")


# --- validation messages -----------------------------------------------------------------
