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
check answers "valid as sent" in a microsecond or two (a ``$schema`` naming the
dialect, as MCP servers built with zod send, changes nothing); it only ever accepts
a dict that needs no cast and that the jsonschema validator would accept too,
and anything else (a cast, an error, any other keyword) takes the full path
above, so results and messages are the same either way. For such a schema
jsonschema is not even imported (about 0.1 s) until a call takes the full
path: a flat schema whose annotations are well formed cannot fail the
metaschema check.

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

import dataclasses
import json
import logging
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from plughost.tools.argument_messages import describe_value, expected_summary, find_problems
from plughost.tools.casting import DecodeProblem, cast_value, decode_json
from plughost.tools.patterns import PatternError, check_patterns, safe_validator_class
from plughost_sdk.models import ToolExecutionResult

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

__all__ = ["ArgumentErrors", "PreparedArguments", "prepare_arguments"]

log = logging.getLogger(__name__)

_COMPOSITION_KEYS = frozenset({"allOf", "anyOf", "oneOf", "$ref", "if", "dependentSchemas"})
_CACHE_SIZE = 256


@dataclass(frozen=True, slots=True)
class PreparedArguments:
    """Arguments that passed validation, after casting; ready for the handler.

    ``unchanged`` says the values equal the dict the model sent, key for key and
    type for type (nothing parsed, cast or unwrapped), so a caller may keep using it.
    """

    values: dict[str, Any]
    unchanged: bool = dataclasses.field(default=False, repr=False, compare=False)


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
            return PreparedArguments(values, unchanged=True)
    if compiled.deferred:  # the full path needs jsonschema's validator: built once, now
        compiled = _CACHE.complete(schema, compiled)
        if compiled.fault is not None:
            return ArgumentErrors((compiled.fault,), "", schema_fault=True)
    try:
        parsed = _parse(raw, compiled.property_names)
        if isinstance(parsed, str):
            return ArgumentErrors((parsed,), compiled.expected)
        values = cast_value(parsed, compiled.schema, compiled.schema, 0)
        problems = find_problems(compiled.validator, values)
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

    @property
    def deferred(self) -> bool:
        """A flat schema whose validator is built at its first full-path call."""
        return self.validator is None and self.fault is None


def _compile(schema: Any) -> _Compiled:
    """The compiled form of ``schema``, without jsonschema for a flat, well-formed one.

    Such a schema is valid against the metaschema by construction
    (:func:`_flat_well_formed`), and its calls mostly pass the flat check, so
    importing jsonschema (about 0.1 s) and building its validator wait until a
    call needs the full path (:meth:`_ValidatorCache.complete`).
    """
    if not isinstance(schema, Mapping):
        fault = f"the tool's parameter schema is a {type(schema).__name__}, not a JSON object"
        return _Compiled({}, None, frozenset(), "", fault)
    flat = _FlatCheck.compile(schema)
    if flat is not None and _flat_well_formed(schema):
        names = frozenset(flat.fields)
        return _Compiled(schema, None, names, expected_summary(schema), flat=flat)
    return _compile_fully(schema)


def _compile_fully(schema: Mapping[str, Any]) -> _Compiled:
    import jsonschema  # 70 ms: paid by the first call, not by every CLI command that imports this

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        fault = f"the tool's parameter schema is invalid ({exc.message}); the tool must be fixed"
        return _Compiled(schema, None, frozenset(), "", fault)
    except Exception as exc:  # a schema the checker itself chokes on is just as broken
        fault = f"the tool's parameter schema cannot be read ({type(exc).__name__}: {exc})"
        return _Compiled(schema, None, frozenset(), "", fault)
    try:
        check_patterns(schema)
    except PatternError as exc:
        return _Compiled(schema, None, frozenset(), "", f"the tool's parameter schema: {exc}")
    properties = schema.get("properties")
    names = frozenset(properties) if isinstance(properties, Mapping) else frozenset()
    validator = safe_validator_class()(_closed(schema))
    flat = _FlatCheck.compile(schema)
    return _Compiled(schema, validator, names, expected_summary(schema), flat=flat)


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
# "$schema" names a dialect: every draft judges a closed object of typed scalars alike.
_FLAT_ROOT_KEYS: Final = frozenset(
    {"type", "properties", "required", "additionalProperties", "title", "description", "$schema"}
)
# The JSON Schema dialects a schema's "$schema" names in practice (zod, pydantic, the SDK).
_DIALECTS: Final = tuple(
    f"{scheme}://json-schema.org/{path}{end}"
    for scheme in ("https", "http")
    for path in ("draft/2020-12/schema", "draft/2019-09/schema", "draft-07/schema")
    for end in ("", "#")
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


def _flat_well_formed(schema: Mapping[str, Any]) -> bool:
    """Whether a schema :class:`_FlatCheck` compiled carries only well-formed annotations.

    The flat check reads ``type``, ``enum``, ``properties`` and ``required``
    (a list of strings); the metaschema also constrains what surrounds them:
    ``title`` and ``description`` strings, ``examples`` an array, ``required``
    without repeats, ``$schema`` a URI (here one of the published dialects, so
    that no format check of a URI can tell the two apart). A schema passing both
    passes ``check_schema`` (tests/host/tools/test_arguments.py compares the two
    over generated schemas).
    """
    required = schema.get("required", [])
    return (
        schema.get("$schema", _DIALECTS[0]) in _DIALECTS
        and len(set(required)) == len(required)
        and _annotations_well_formed(schema)
        and all(_annotations_well_formed(field) for field in schema.get("properties", {}).values())
    )


def _annotations_well_formed(fragment: Mapping[str, Any]) -> bool:
    return (
        isinstance(fragment.get("title", ""), str)
        and isinstance(fragment.get("description", ""), str)
        and isinstance(fragment.get("examples", []), list)
    )


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

    def complete(self, schema: Any, deferred: _Compiled) -> _Compiled:
        """``deferred`` with its validator built, kept in its place for the next calls."""
        compiled = _compile_fully(deferred.schema)
        text = _schema_text(schema)
        if text is not None and text in self._by_text:
            self._by_text[text] = compiled
        hit = self._by_id.get(id(schema))
        if hit is not None and hit[0] is schema:
            self._by_id[id(schema)] = (schema, compiled)
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
    value = decode_json(raw)
    if isinstance(value, DecodeProblem):
        return value.text
    if not isinstance(value, dict):
        return f"arguments must be a JSON object of parameters, got {describe_value(value)}"
    if set(value) == {"arguments"} and "arguments" not in property_names:
        inner = decode_json(value["arguments"])
        if isinstance(inner, dict):
            return inner
    return value
