"""Turn JSON Schema validation errors into lines a model can act on.

Every problem with a tool call's arguments becomes one line with its path, what
was expected, what came instead and, for a misspelled field, the likely fix.
All problems are reported at once, in path order, so the model can correct the
whole call in one step. Used by :mod:`plughost.tools.arguments`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from plughost.tools.casting import schema_types
from plughost.tools.patterns import safe_search

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator, ValidationError

__all__ = ["describe_value", "expected_summary", "find_problems"]

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def find_problems(validator: Draft202012Validator | None, values: dict[str, Any]) -> list[str]:
    if validator is None:
        return []
    errors = sorted(validator.iter_errors(values), key=lambda e: _path_key(e.absolute_path))
    seen: dict[str, None] = {}
    for error in errors:
        for line in _describe(error):
            seen.setdefault(line, None)
    return list(seen)


def _describe(error: ValidationError) -> list[str]:
    path = _path(error.absolute_path)
    # jsonschema types these as possibly unset; on a reported error they are set.
    kind = error.validator
    expected: Any = error.validator_value
    instance: Any = error.instance
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    if kind == "required" and isinstance(instance, dict):
        missing = [name for name in expected if name not in instance]
        return [f"missing required field '{_join(error.absolute_path, name)}'" for name in missing]
    if kind == "additionalProperties" and expected is False and isinstance(instance, dict):
        extras = _extras(schema, instance)
        return [_unexpected(error.absolute_path, schema, instance, name) for name in extras]
    if kind == "type":
        wanted = " or ".join(expected) if isinstance(expected, list) else str(expected)
        return [f"{path} must be {wanted}, got {describe_value(instance)}"]
    if kind == "enum":
        allowed = ", ".join(_literal(v) for v in expected)
        return [f"{path} must be one of {allowed}, got {_literal(instance)}"]
    if kind in ("anyOf", "oneOf"):
        return [_no_branch(path, error)]
    return [_bound(path, str(kind), expected, instance) or f"{path}: {error.message}"]


def _bound(path: str, kind: str, limit: Any, instance: Any) -> str | None:
    size = len(instance) if isinstance(instance, str | list | dict) else 0
    messages = {
        "const": f"{path} must be {_literal(limit)}",
        "minimum": f"{path} must be >= {limit}, got {_literal(instance)}",
        "maximum": f"{path} must be <= {limit}, got {_literal(instance)}",
        "exclusiveMinimum": f"{path} must be > {limit}, got {_literal(instance)}",
        "exclusiveMaximum": f"{path} must be < {limit}, got {_literal(instance)}",
        "multipleOf": f"{path} must be a multiple of {limit}, got {_literal(instance)}",
        "minLength": f"{path} must be at least {limit} characters long, got {size}",
        "maxLength": f"{path} must be at most {limit} characters long, got {size}",
        "minItems": f"{path} must have at least {limit} items, got {size}",
        "maxItems": f"{path} must have at most {limit} items, got {size}",
        "minProperties": f"{path} must have at least {limit} fields, got {size}",
        "maxProperties": f"{path} must have at most {limit} fields, got {size}",
        "uniqueItems": f"{path} must not contain duplicate items",
        "pattern": f"{path} must match the pattern {limit!r}, got {_literal(instance)}",
        "format": f"{path} must be a valid {limit}, got {_literal(instance)}",
        "not": f"{path} has a value that is not allowed here",
    }
    return messages.get(kind)


def _no_branch(path: str, error: ValidationError) -> str:
    if not error.context:
        return f"{path} matches more than one of the allowed forms; make it match exactly one"
    from jsonschema.exceptions import best_match  # loaded by then: a validator produced error

    closest = best_match(error.context)
    lines = _describe(closest) if closest is not None else []
    detail = lines[0] if lines else ""
    suffix = f" (closest: {detail})" if detail else ""
    return f"{path} does not match any of the allowed forms{suffix}"


def _extras(schema: Mapping[str, Any], instance: dict[str, Any]) -> list[str]:
    properties = schema.get("properties") or {}
    patterns = schema.get("patternProperties") or {}
    return [
        key
        for key in instance
        if key not in properties and not any(safe_search(p, str(key)) for p in patterns)
    ]


def _unexpected(
    parts: Iterable[Any], schema: Mapping[str, Any], instance: dict[str, Any], name: str
) -> str:
    where = _join(parts, name)
    properties = [str(p) for p in (schema.get("properties") or {})]
    unused = [p for p in properties if p not in instance]
    match = difflib.get_close_matches(name, unused or properties, n=1, cutoff=0.6)
    if match:
        return f"unexpected field '{where}' (did you mean '{match[0]}'?)"
    if properties:
        return f"unexpected field '{where}' (allowed fields: {', '.join(properties)})"
    return f"unexpected field '{where}' (no fields are accepted here)"


def _path(parts: Iterable[Any]) -> str:
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(str(part)):
            text += f".{part}" if text else str(part)
        else:
            text += f"[{str(part)!r}]"
    return text or "arguments"


def _join(parts: Iterable[Any], name: str) -> str:
    return _path([*parts, name])


def _path_key(parts: Iterable[Any]) -> tuple[tuple[int, Any], ...]:
    return tuple((0, p) if isinstance(p, int) else (1, str(p)) for p in parts)


def describe_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {_literal(value)}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"number {value}"
    if isinstance(value, str):
        return f"string {_literal(value)}"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return repr(value if len(value) <= 40 else value[:37] + "...")
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return repr(value)
    return "an array" if isinstance(value, list) else "an object"


# --- summary -----------------------------------------------------------------------------


def expected_summary(schema: Mapping[str, Any]) -> str:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return "Expected parameters: none (call the tool with {})."
    required = set(schema.get("required") or ())
    parts = [
        _parameter_summary(str(name), fragment, str(name) in required)
        for name, fragment in properties.items()
    ]
    return "Expected parameters: " + "; ".join(parts) + "."


def _parameter_summary(name: str, fragment: Any, required: bool) -> str:
    fragment = fragment if isinstance(fragment, Mapping) else {}
    types = schema_types(fragment)
    details = ["/".join(types) if types else "any"]
    details.append("required" if required else "optional")
    enum = fragment.get("enum")
    if isinstance(enum, list) and enum:
        shown = ", ".join(_literal(v) for v in enum[:10])
        details.append(f"one of {shown}" + (", ..." if len(enum) > 10 else ""))
    return f"{name} ({', '.join(details)})"
