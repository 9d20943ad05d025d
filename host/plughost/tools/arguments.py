"""Prepare a model's tool arguments before a call: parse, unwrap, cast, validate.

Models make small, predictable mistakes: ``"60"`` for an integer, arguments
sent as a JSON string, the whole object wrapped in ``{"arguments": ...}``, a
misspelled field. :func:`prepare_arguments` repairs what has one obvious
meaning and reports the rest, every problem at once, with its path and a
fix, so the model can correct the call in one step. It never raises.

The steps:

1. **Parse.** A dict is used as is; a JSON string is decoded; ``None`` and
   ``""`` mean no arguments.
2. **Unwrap.** ``{"arguments": {...}}`` (the inner value may itself be a JSON
   string) is unwrapped, unless the schema has an ``arguments`` property.
3. **Cast**, only where the schema makes the intent clear: a numeric string
   to ``integer``/``number`` (``60.0`` to an integer too), ``true``/``false``/
   ``yes``/``no``/``1``/``0`` to ``boolean``, a number to ``string``, a JSON
   string to ``array``/``object``. Casting recurses into ``items``,
   ``prefixItems``, ``properties``, ``patternProperties`` and
   ``additionalProperties``, and follows local ``$ref``\\ s. A ``bool`` is never
   cast to a number. A value that already fits one of the allowed types is
   left alone, so ``"5"`` stays a string where ``["integer", "string"]`` is
   allowed.
4. **Validate** with the jsonschema library (Draft 2020-12). Compiled
   validators are cached per schema object and per schema JSON text, since
   validation runs on every call.

**Fast path.** Most tools take a flat object of plain scalars (the schema
``@Tool`` builds from ``ToolParameterInfo``). For such a schema a precompiled
check answers "valid as sent" in a microsecond or two; it only ever accepts
a dict that needs no cast and that the jsonschema validator would accept too,
and anything else (a cast, an error, any other keyword) takes the full path
above, so results and messages are the same either way.

**Unknown fields.** A top-level schema with no ``additionalProperties`` (and no
``unevaluatedProperties``) key is treated as ``additionalProperties: false``:
a misspelled field is an error with a suggestion, not a silently ignored
value. Nested objects follow plain JSON Schema (extra fields allowed unless
the schema says otherwise), and a top-level schema built from ``allOf``,
``anyOf``, ``oneOf``, ``$ref`` or ``if`` must opt in itself, because adding
``additionalProperties`` beside those keywords would reject valid fields.

Defaults are not filled in: a handler's own defaults apply.

What does not live here: finding the tool (the registry) and describing
tools to the model (:mod:`plughost.tools.definitions`).
"""

from __future__ import annotations

import difflib
import json
import logging
import math
import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from jsonschema import Draft202012Validator, ValidationError
from jsonschema.exceptions import SchemaError, best_match

from plughost_sdk.models import ToolExecutionResult

__all__ = ["ArgumentErrors", "PreparedArguments", "prepare_arguments"]

log = logging.getLogger(__name__)

_COMPOSITION_KEYS = frozenset({"allOf", "anyOf", "oneOf", "$ref", "if", "dependentSchemas"})
_TRUE_WORDS = frozenset({"true", "yes", "1"})
_FALSE_WORDS = frozenset({"false", "no", "0"})
_INTEGER_TEXT = re.compile(r"[+-]?\d+")
_NUMBER_TEXT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_MAX_REF_HOPS = 16
_CACHE_SIZE = 256
_NO_CAST: Final = object()


@dataclass(frozen=True, slots=True)
class PreparedArguments:
    """Arguments that passed validation, after casting; ready for the handler."""

    values: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ArgumentErrors:
    """Why the arguments were rejected.

    Attributes:
        problems: One line per problem, each naming its path and the fix.
        expected: A one-line summary of the parameters the tool takes.
        schema_fault: True when the tool's own schema is broken, so the
            model cannot fix the call; the registry reports it differently.
    """

    problems: tuple[str, ...]
    expected: str
    schema_fault: bool = False

    def message(self, tool_name: str) -> str:
        """The failure text for the model: every problem, then what is expected."""
        lines = [f"Invalid arguments for tool {tool_name}:"]
        lines.extend(f"- {problem}" for problem in self.problems)
        if self.expected:
            lines.append(self.expected)
        return "\n".join(lines)

    def failure(self, tool_name: str) -> ToolExecutionResult:
        """The failed result (``invalid_tool_schema`` when the schema is at fault)."""
        code = "invalid_tool_schema" if self.schema_fault else "invalid_arguments"
        return ToolExecutionResult.failure(tool_name, self.message(tool_name), code)


def prepare_arguments(raw: Any, schema: Mapping[str, Any]) -> PreparedArguments | ArgumentErrors:
    """Parse, unwrap, cast and validate one call's arguments; never raises.

    Args:
        raw: The arguments as the model sent them: a dict, a JSON string or None.
        schema: The tool's parameters JSON Schema.

    Returns:
        The prepared values, or every problem found.
    """
    compiled = _CACHE.get(schema)
    if compiled.fault is not None:
        return ArgumentErrors((compiled.fault,), "", schema_fault=True)
    if compiled.flat is not None and type(raw) is dict:
        values = dict(raw)
        if compiled.flat.accepts(values):
            return PreparedArguments(values)
    try:
        parsed = _parse(raw, compiled.property_names)
        if isinstance(parsed, str):
            return ArgumentErrors((parsed,), compiled.expected)
        values = _cast(parsed, compiled.schema, compiled.schema, 0)
        problems = _problems(compiled.validator, values)
    except RecursionError:
        return ArgumentErrors(("arguments are nested too deeply",), compiled.expected)
    except Exception as exc:  # the promise is "never raises", whatever the input holds
        log.exception("argument check failed schema=%s", compiled.expected)
        problem = f"arguments could not be checked ({type(exc).__name__}: {exc})"
        return ArgumentErrors((problem,), compiled.expected)
    if problems:
        return ArgumentErrors(tuple(problems), compiled.expected)
    return PreparedArguments(values)


# --- compiled schemas --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Compiled:
    schema: Mapping[str, Any]
    validator: Draft202012Validator | None
    property_names: frozenset[str]
    expected: str
    fault: str | None = None
    flat: _FlatCheck | None = None


def _compile(schema: Any) -> _Compiled:
    if not isinstance(schema, Mapping):
        fault = f"the tool's parameter schema is a {type(schema).__name__}, not a JSON object"
        return _Compiled({}, None, frozenset(), "", fault)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        fault = f"the tool's parameter schema is invalid ({exc.message}); the tool must be fixed"
        return _Compiled(schema, None, frozenset(), "", fault)
    except Exception as exc:  # a schema the checker itself chokes on is just as broken
        fault = f"the tool's parameter schema cannot be read ({type(exc).__name__}: {exc})"
        return _Compiled(schema, None, frozenset(), "", fault)
    properties = schema.get("properties")
    names = frozenset(properties) if isinstance(properties, Mapping) else frozenset()
    validator = Draft202012Validator(_closed(schema))
    flat = _FlatCheck.compile(schema)
    return _Compiled(schema, validator, names, _expected_summary(schema), flat=flat)


def _is_string(value: Any) -> bool:
    return isinstance(value, str)


def _is_integer(value: Any) -> bool:
    # jsonschema also accepts an integral float, which _cast turns into an int: full path.
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_boolean(value: Any) -> bool:
    return isinstance(value, bool)


def _is_null(value: Any) -> bool:
    return value is None


_FLAT_TYPES: Final = {
    "string": _is_string,
    "integer": _is_integer,
    "number": _is_number,
    "boolean": _is_boolean,
    "null": _is_null,
}
_FLAT_ROOT_KEYS: Final = frozenset(
    {"type", "properties", "required", "additionalProperties", "title", "description"}
)
# Annotations only: they never make a value invalid.
_FLAT_FIELD_KEYS: Final = frozenset({"type", "enum", "title", "description", "default", "examples"})


@dataclass(frozen=True, slots=True)
class _FlatCheck:
    """An exact check for a closed object of scalar fields (see "Fast path" above).

    Attributes:
        fields: Per property, its type test and its allowed values (string enums only).
        required: The properties that must be present.
    """

    fields: dict[str, tuple[Any, frozenset[str] | None]]
    required: tuple[str, ...]

    @classmethod
    def compile(cls, schema: Mapping[str, Any]) -> _FlatCheck | None:
        """The check for ``schema``, or None when the schema is not that simple."""
        if schema.get("type") != "object" or not _FLAT_ROOT_KEYS.issuperset(schema):
            return None
        if schema.get("additionalProperties", False) is not False:
            return None  # an open schema may need the "arguments" wrapper unwrapped
        properties, required = schema.get("properties", {}), schema.get("required", [])
        if not isinstance(properties, dict) or not isinstance(required, list):
            return None
        if not all(isinstance(name, str) for name in required):
            return None
        fields: dict[str, tuple[Any, frozenset[str] | None]] = {}
        for name, fragment in properties.items():
            field = _flat_field(fragment)
            if field is None:
                return None
            fields[name] = field
        return cls(fields, tuple(required))

    def accepts(self, values: dict[Any, Any]) -> bool:
        """True when ``values`` is valid exactly as it is; False means "take the full path"."""
        fields = self.fields
        for key, value in values.items():
            field = fields.get(key)
            if field is None:
                return False
            is_type, allowed = field
            if not is_type(value) or (allowed is not None and value not in allowed):
                return False
        return all(name in values for name in self.required)


def _flat_field(fragment: Any) -> tuple[Any, frozenset[str] | None] | None:
    if not isinstance(fragment, dict) or not _FLAT_FIELD_KEYS.issuperset(fragment):
        return None
    json_type = fragment.get("type")
    is_type = _FLAT_TYPES.get(json_type) if isinstance(json_type, str) else None
    if is_type is None:
        return None
    if "enum" not in fragment:
        return is_type, None
    enum = fragment["enum"]
    if is_type is not _is_string or not isinstance(enum, list):
        return None
    if not all(isinstance(v, str) for v in enum):
        return None
    return is_type, frozenset(enum)


def _closed(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema to validate with: unknown top-level fields rejected unless allowed."""
    effective = dict(schema)
    open_keys = {"additionalProperties", "unevaluatedProperties"} | _COMPOSITION_KEYS
    if not open_keys & effective.keys():
        effective["additionalProperties"] = False
    return effective


class _ValidatorCache:
    """Compiled schemas by object identity (fast path), then by JSON text.

    The identity entry holds the schema object itself, so its id cannot be
    reused while cached; a schema is assumed not to change once it is in use.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._by_id: OrderedDict[int, tuple[Any, _Compiled]] = OrderedDict()
        self._by_text: OrderedDict[str, _Compiled] = OrderedDict()

    def get(self, schema: Any) -> _Compiled:
        hit = self._by_id.get(id(schema))
        if hit is not None and hit[0] is schema:
            self._by_id.move_to_end(id(schema))
            return hit[1]
        text = _schema_text(schema)
        compiled = self._by_text.get(text) if text is not None else None
        if compiled is None:
            compiled = _compile(schema)
            if text is not None:
                _remember(self._by_text, text, compiled, self._size)
        _remember(self._by_id, id(schema), (schema, compiled), self._size)
        return compiled


def _remember(cache: OrderedDict[Any, Any], key: Any, value: Any, size: int) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > size:
        cache.popitem(last=False)


def _schema_text(schema: Any) -> str | None:
    try:
        return json.dumps(schema, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        return None


_CACHE = _ValidatorCache(_CACHE_SIZE)


# --- parsing -----------------------------------------------------------------------------


def _parse(raw: Any, property_names: frozenset[str]) -> dict[str, Any] | str:
    """Return the argument object, or a problem line."""
    value = _decode(raw)
    if isinstance(value, _Problem):
        return value.text
    if not isinstance(value, dict):
        return f"arguments must be a JSON object of parameters, got {_got(value)}"
    if set(value) == {"arguments"} and "arguments" not in property_names:
        inner = _decode(value["arguments"])
        if isinstance(inner, dict):
            return inner
    return value


@dataclass(frozen=True, slots=True)
class _Problem:
    text: str


def _decode(raw: Any) -> Any:
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
        return _Problem(
            f"arguments are not valid JSON ({reason}); send a JSON object such as "
            '{"name": "value"}'
        )


# --- casting -----------------------------------------------------------------------------


def _cast(value: Any, schema: Any, root: Mapping[str, Any], hops: int) -> Any:
    """Return ``value`` cast towards ``schema`` where the intent is clear; never raises."""
    schema = _dereference(schema, root)
    if not isinstance(schema, Mapping):
        return value
    types = _types(schema)
    if not types:
        branch = _single_branch(schema)
        if branch is not None and hops < _MAX_REF_HOPS:
            return _cast(value, branch, root, hops + 1)
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


def _types(schema: Mapping[str, Any]) -> list[str]:
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
        decoded = _decode(value) if value.strip()[:1] in ("[", "{") else None
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
            _cast(item, prefix[i] if i < len(prefix) else items, root, 0)
            for i, item in enumerate(value)
        ]
    if isinstance(value, dict):
        return {
            key: _cast(item, _field_schema(schema, key), root, 0) for key, item in value.items()
        }
    return value


def _field_schema(schema: Mapping[str, Any], key: Any) -> Any:
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and key in properties:
        return properties[key]
    patterns = schema.get("patternProperties")
    if isinstance(patterns, Mapping) and isinstance(key, str):
        for pattern, fragment in patterns.items():
            if re.search(pattern, key):
                return fragment
    return schema.get("additionalProperties")


# --- validation messages -----------------------------------------------------------------


def _problems(validator: Draft202012Validator | None, values: dict[str, Any]) -> list[str]:
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
        return [f"{path} must be {wanted}, got {_got(instance)}"]
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
        if key not in properties and not any(re.search(p, str(key)) for p in patterns)
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


def _got(value: Any) -> str:
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


def _expected_summary(schema: Mapping[str, Any]) -> str:
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
    types = _types(fragment)
    details = ["/".join(types) if types else "any"]
    details.append("required" if required else "optional")
    enum = fragment.get("enum")
    if isinstance(enum, list) and enum:
        shown = ", ".join(_literal(v) for v in enum[:10])
        details.append(f"one of {shown}" + (", ..." if len(enum) > 10 else ""))
    return f"{name} ({', '.join(details)})"
