"""Tests for argument preparation: parsing, unwrapping, casting and validation."""

from __future__ import annotations

import json
import subprocess
import sys
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import plughost.tools.arguments as arguments_module
from plughost.tools.arguments import ArgumentErrors, PreparedArguments, prepare_arguments

WEATHER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["c", "f"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "detailed": {"type": "boolean"},
        "ratio": {"type": "number"},
    },
    "required": ["city"],
}

ITEMS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "integer"}, "tags": {"type": "array"}},
                "required": ["name"],
            },
        },
        "labels": {"type": "object", "additionalProperties": {"type": "integer"}},
    },
}


def _values(raw: Any, schema: dict[str, Any]) -> dict[str, Any]:
    prepared = prepare_arguments(raw, schema)
    assert isinstance(prepared, PreparedArguments), prepared
    return prepared.values


def _problems(raw: Any, schema: dict[str, Any]) -> tuple[str, ...]:
    prepared = prepare_arguments(raw, schema)
    assert isinstance(prepared, ArgumentErrors), prepared
    return prepared.problems


# --- parsing and unwrapping --------------------------------------------------------------


def test_prepare_arguments_accepts_a_valid_dict_unchanged() -> None:
    raw = {"city": "Paris", "unit": "c", "days": 3}
    assert _values(raw, WEATHER) == raw


def test_prepare_arguments_does_not_fill_in_defaults() -> None:
    schema = {"type": "object", "properties": {"limit": {"type": "integer", "default": 5}}}
    assert _values({}, schema) == {}


@pytest.mark.parametrize("raw", [None, "", "   "])
def test_prepare_arguments_treats_none_and_empty_text_as_no_arguments(raw: Any) -> None:
    assert _values(raw, {"type": "object", "properties": {}}) == {}


def test_prepare_arguments_decodes_a_json_string() -> None:
    assert _values('{"city": "Oslo", "days": 2}', WEATHER) == {"city": "Oslo", "days": 2}


def test_prepare_arguments_reports_invalid_json_with_a_fix() -> None:
    (problem,) = _problems('{"city": ', WEATHER)
    assert problem.startswith("arguments are not valid JSON")
    assert "send a JSON object" in problem


def test_prepare_arguments_rejects_a_json_value_that_is_not_an_object() -> None:
    assert _problems("[1, 2]", WEATHER) == (
        "arguments must be a JSON object of parameters, got array",
    )


def test_prepare_arguments_unwraps_a_stray_arguments_wrapper() -> None:
    assert _values({"arguments": {"city": "Rome"}}, WEATHER) == {"city": "Rome"}


def test_prepare_arguments_unwraps_a_wrapper_holding_a_json_string() -> None:
    raw = json.dumps({"arguments": json.dumps({"city": "Rome", "days": "4"})})
    assert _values(raw, WEATHER) == {"city": "Rome", "days": 4}


def test_prepare_arguments_keeps_a_real_arguments_parameter() -> None:
    schema = {"type": "object", "properties": {"arguments": {"type": "object"}}}
    assert _values({"arguments": {"x": 1}}, schema) == {"arguments": {"x": 1}}


# --- casting -----------------------------------------------------------------------------


def test_prepare_arguments_casts_numeric_strings_to_integer_and_number() -> None:
    values = _values({"city": "Lima", "days": "7", "ratio": "1.5"}, WEATHER)
    assert values == {"city": "Lima", "days": 7, "ratio": 1.5}
    assert type(values["days"]) is int


def test_prepare_arguments_casts_an_integral_float_to_integer() -> None:
    values = _values({"city": "Lima", "days": 3.0}, WEATHER)
    assert type(values["days"]) is int


@pytest.mark.parametrize(
    ("text", "expected"),
    [("true", True), ("False", False), ("yes", True), ("no", False), ("1", True), ("0", False)],
)
def test_prepare_arguments_casts_boolean_words(text: str, expected: bool) -> None:
    assert _values({"city": "Lima", "detailed": text}, WEATHER)["detailed"] is expected


def test_prepare_arguments_casts_numbers_to_string_fields() -> None:
    assert _values({"city": 42}, WEATHER) == {"city": "42"}


def test_prepare_arguments_never_casts_a_boolean_to_an_integer() -> None:
    assert _problems({"city": "Lima", "days": True}, WEATHER) == (
        "days must be integer, got boolean true",
    )


def test_prepare_arguments_never_casts_a_boolean_to_a_string() -> None:
    assert _problems({"city": False}, WEATHER) == ("city must be string, got boolean false",)


def test_prepare_arguments_does_not_cast_a_fractional_string_to_integer() -> None:
    assert _problems({"city": "Lima", "days": "2.5"}, WEATHER) == (
        "days must be integer, got string '2.5'",
    )


def test_prepare_arguments_leaves_a_string_alone_when_the_union_allows_strings() -> None:
    schema = {"type": "object", "properties": {"id": {"type": ["integer", "string"]}}}
    assert _values({"id": "5"}, schema) == {"id": "5"}


def test_prepare_arguments_casts_into_nested_arrays_objects_and_additional_properties() -> None:
    raw = {"items": [{"name": "1"}, {"name": 2}], "labels": {"a": "3", "b": 4}}
    assert _values(raw, ITEMS) == {
        "items": [{"name": 1}, {"name": 2}],
        "labels": {"a": 3, "b": 4},
    }


def test_prepare_arguments_decodes_a_json_string_where_an_array_is_expected() -> None:
    assert _values({"items": '[{"name": "5"}]'}, ITEMS) == {"items": [{"name": 5}]}


def test_prepare_arguments_casts_through_an_optional_any_of() -> None:
    schema = {
        "type": "object",
        "properties": {"limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
    }
    assert _values({"limit": "10"}, schema) == {"limit": 10}
    assert _values({"limit": None}, schema) == {"limit": None}


def test_prepare_arguments_casts_through_a_local_ref() -> None:
    schema = {
        "type": "object",
        "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "integer"}}}},
        "properties": {"at": {"$ref": "#/$defs/Point"}},
        "additionalProperties": False,
    }
    assert _values({"at": {"x": "3"}}, schema) == {"at": {"x": 3}}


# --- validation messages -----------------------------------------------------------------


def test_prepare_arguments_reports_a_missing_required_field() -> None:
    assert _problems({}, WEATHER) == ("missing required field 'city'",)


def test_prepare_arguments_suggests_the_intended_field_for_a_misspelling() -> None:
    assert _problems({"cty": "Paris"}, WEATHER) == (
        "missing required field 'city'",
        "unexpected field 'cty' (did you mean 'city'?)",
    )


def test_prepare_arguments_lists_allowed_fields_when_nothing_is_close() -> None:
    (problem,) = _problems({"city": "Paris", "zzz": 1}, WEATHER)
    assert problem == "unexpected field 'zzz' (allowed fields: city, unit, days, detailed, ratio)"


def test_prepare_arguments_rejects_any_field_for_a_tool_without_parameters() -> None:
    assert _problems({"x": 1}, {"type": "object", "properties": {}}) == (
        "unexpected field 'x' (no fields are accepted here)",
    )


def test_prepare_arguments_accepts_unknown_fields_when_additional_properties_allows_them() -> None:
    schema = {**WEATHER, "additionalProperties": True}
    assert _values({"city": "Paris", "extra": 1}, schema) == {"city": "Paris", "extra": 1}


def test_prepare_arguments_allows_extra_fields_in_nested_objects_by_default() -> None:
    assert _values({"items": [{"name": 1, "note": "x"}]}, ITEMS) == {
        "items": [{"name": 1, "note": "x"}]
    }


def test_prepare_arguments_reports_enum_values() -> None:
    assert _problems({"city": "Paris", "unit": "k"}, WEATHER) == (
        "unit must be one of 'c', 'f', got 'k'",
    )


def test_prepare_arguments_reports_bounds() -> None:
    assert _problems({"city": "Paris", "days": "40"}, WEATHER) == ("days must be <= 14, got 40",)


def test_prepare_arguments_reports_nested_paths() -> None:
    raw = {"items": [{"name": 1}, {"name": 2}, {"name": "x"}, {}]}
    assert _problems(raw, ITEMS) == (
        "items[2].name must be integer, got string 'x'",
        "missing required field 'items[3].name'",
    )


def test_prepare_arguments_reports_every_problem_at_once() -> None:
    problems = _problems({"cty": "x", "unit": "k", "days": True}, WEATHER)
    assert len(problems) == 4


def test_argument_errors_message_lists_problems_and_expected_parameters() -> None:
    prepared = prepare_arguments({"unit": "k"}, WEATHER)
    assert isinstance(prepared, ArgumentErrors)
    assert prepared.message("get_weather") == (
        "Invalid arguments for tool get_weather:\n"
        "- missing required field 'city'\n"
        "- unit must be one of 'c', 'f', got 'k'\n"
        "Expected parameters: city (string, required); unit (string, optional, one of 'c', "
        "'f'); days (integer, optional); detailed (boolean, optional); ratio (number, optional)."
    )


def test_prepare_arguments_reports_a_broken_schema_as_the_tools_fault() -> None:
    prepared = prepare_arguments({}, {"type": "object", "properties": {"a": {"type": "strnig"}}})
    assert isinstance(prepared, ArgumentErrors)
    assert prepared.schema_fault
    assert "parameter schema is invalid" in prepared.problems[0]


def test_prepare_arguments_compiles_each_schema_once(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[Any] = []
    original = arguments_module._compile

    def counting(schema: Any) -> Any:
        compiled.append(schema)
        return original(schema)

    monkeypatch.setattr(arguments_module, "_compile", counting)
    schema = {"type": "object", "properties": {"compile_once_marker": {"type": "integer"}}}
    for _ in range(3):
        _values({"compile_once_marker": 1}, schema)
    _values({"compile_once_marker": 2}, json.loads(json.dumps(schema)))
    assert compiled == [schema]


# --- properties --------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["1", "0", "yes", "1.5", "60", "-3", "[1]", '{"a": 1}', "true"]),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["city", "days", "items", "name", "x"]), children, max_size=4
        )
    ),
    max_leaves=12,
)
SCHEMAS = st.sampled_from([WEATHER, ITEMS, {"type": "object", "properties": {}}])


def _closed(schema: dict[str, Any]) -> dict[str, Any]:
    return {"additionalProperties": False, **schema}


@settings(max_examples=300)
@given(raw=JSON_VALUES | JSON_VALUES.map(json.dumps), schema=SCHEMAS)
def test_prepare_arguments_never_raises_and_gives_a_valid_value_or_clear_errors(
    raw: Any, schema: dict[str, Any]
) -> None:
    prepared = prepare_arguments(raw, schema)
    if isinstance(prepared, PreparedArguments):
        assert Draft202012Validator(_closed(schema)).is_valid(prepared.values)
    else:
        assert prepared.problems
        assert all(isinstance(p, str) and p for p in prepared.problems)
        assert prepared.message("t").startswith("Invalid arguments for tool t:\n- ")


VALID_WEATHER = st.fixed_dictionaries(
    {"city": st.text(max_size=10)},
    optional={
        "unit": st.sampled_from(["c", "f"]),
        "days": st.integers(min_value=1, max_value=14),
        "detailed": st.booleans(),
        "ratio": st.floats(allow_nan=False, allow_infinity=False),
    },
)


@given(VALID_WEATHER)
def test_prepare_arguments_passes_valid_arguments_through_unchanged(raw: dict[str, Any]) -> None:
    assert _values(raw, WEATHER) == raw


@given(st.integers(min_value=1, max_value=14))
def test_prepare_arguments_casts_any_integer_text(days: int) -> None:
    assert _values({"city": "x", "days": f" {days} "}, WEATHER)["days"] == days


LEAF_SCHEMAS = st.sampled_from(
    [
        {"type": "string"},
        {"type": "integer", "minimum": 0},
        {"type": "number"},
        {"type": "boolean"},
        {"type": ["integer", "null"]},
        {"type": "string", "enum": ["a", "b"]},
        {"anyOf": [{"type": "integer"}, {"type": "null"}]},
    ]
)
FIELD_SCHEMAS = st.recursive(
    LEAF_SCHEMAS,
    lambda children: (
        st.builds(lambda items: {"type": "array", "items": items}, children)
        | st.builds(
            lambda props: {"type": "object", "properties": props},
            st.dictionaries(st.sampled_from(["a", "b", "c"]), children, max_size=3),
        )
    ),
    max_leaves=6,
)


@st.composite
def object_schemas(draw: st.DrawFn) -> dict[str, Any]:
    properties = draw(st.dictionaries(st.sampled_from(["city", "days", "x"]), FIELD_SCHEMAS))
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    required = draw(st.lists(st.sampled_from(sorted(properties) or ["city"]), unique=True))
    if required:
        schema["required"] = required
    if draw(st.booleans()):
        schema["additionalProperties"] = draw(st.booleans())
    return schema


@settings(max_examples=300)
@given(raw=JSON_VALUES | JSON_VALUES.map(json.dumps), schema=object_schemas())
def test_prepare_arguments_holds_its_promise_for_generated_schemas(
    raw: Any, schema: dict[str, Any]
) -> None:
    prepared = prepare_arguments(raw, schema)
    if isinstance(prepared, PreparedArguments):
        assert Draft202012Validator(_closed(schema)).is_valid(prepared.values)
    else:
        assert not prepared.schema_fault
        assert prepared.problems
        assert all(isinstance(p, str) and p for p in prepared.problems)


FLAT_FIELDS = [
    {"type": "string"},
    {"type": "string", "description": "a city", "title": "City", "default": "Paris"},
    {"type": "string", "enum": ["c", "f"]},
    {"type": "integer", "examples": [3]},
    {"type": "number"},
    {"type": "boolean"},
    {"type": "null"},
]
PROBES: list[Any] = [
    *(None, True, False, 0, 1, 3, -7, 10**30, 2.0, 1.5, -0.0, float("nan"), float("inf")),
    *("x", "c", "f", "60", " 60 ", "1.5", "true", "no", "", "[1]"),
    *([1], {"a": 1}),
]


def _calls(probe: Any) -> list[Any]:
    return [
        {"value": probe},
        {"value": probe, "other": "o"},
        {"value": probe, "extra": 1},
        {"arguments": {"value": probe}},
        {"arguments": json.dumps({"value": probe})},
    ]


DIALECTS = [None, "http://json-schema.org/draft-07/schema#"]


@pytest.mark.parametrize("field", FLAT_FIELDS)
@pytest.mark.parametrize("required", [True, False])
@pytest.mark.parametrize("closed", [True, False])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_flat_fast_path_answers_exactly_as_the_full_path(
    field: dict[str, Any], required: bool, closed: bool, dialect: str | None
) -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"value": field, "other": {"type": "string"}},
    }
    if dialect is not None:  # as an MCP server built with zod declares it
        schema["$schema"] = dialect
    if required:
        schema["required"] = ["value"]
    if closed:
        schema["additionalProperties"] = False
    assert arguments_module._CACHE.get(schema).flat is not None
    raws: list[Any] = [{}, {"other": "o"}, *(c for probe in PROBES for c in _calls(probe))]
    for raw in raws:
        fast = prepare_arguments(raw, schema)
        # A mapping that is not a dict never takes the fast path.
        full = prepare_arguments(MappingProxyType(raw), schema)
        assert repr(fast) == repr(full), raw  # repr, because True == 1 == 1.0 for ==


def test_the_fast_path_is_not_taken_for_schemas_it_cannot_judge_exactly() -> None:
    not_flat = [
        {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}},
        {"type": "object", "properties": {"n": {"type": ["integer", "null"]}}},
        {"type": "object", "properties": {"n": {"type": "integer", "enum": [1, 2]}}},
        {"type": "object", "properties": {"n": {"type": "array"}}},
        {"type": "object", "properties": {"n": {"type": "string"}}, "additionalProperties": True},
        {"type": "object", "properties": {"n": {"$ref": "#/$defs/n"}}, "$defs": {"n": {}}},
        {"properties": {"n": {"type": "string"}}},
    ]
    for schema in not_flat:
        assert arguments_module._CACHE.get(schema).flat is None, schema


def test_only_arguments_taken_exactly_as_sent_are_marked_unchanged() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    as_sent = prepare_arguments({"n": 1}, schema)
    cast = prepare_arguments({"n": "1"}, schema)
    parsed = prepare_arguments('{"n": 1}', schema)
    assert isinstance(as_sent, PreparedArguments) and as_sent.unchanged
    assert isinstance(cast, PreparedArguments) and not cast.unchanged
    assert isinstance(parsed, PreparedArguments) and not parsed.unchanged


# --- flat schemas compile without jsonschema -------------------------------------------

_ANNOTATION = st.one_of(
    st.text(max_size=3), st.integers(), st.none(), st.lists(st.text(max_size=2))
)


@st.composite
def _flat_looking_schemas(draw: st.DrawFn) -> dict[str, Any]:
    """Schemas the flat check reads, with annotations of any type (some the metaschema refuses)."""
    names = draw(st.lists(st.sampled_from(["a", "b", "c"]), max_size=3, unique=True))
    properties: dict[str, Any] = {}
    for name in names:
        field: dict[str, Any] = {"type": draw(st.sampled_from(["string", "integer", "boolean"]))}
        for key in draw(st.lists(st.sampled_from(["title", "description", "examples"]))):
            field[key] = draw(_ANNOTATION)
        properties[name] = field
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    for key in draw(st.lists(st.sampled_from(["title", "description", "$schema", "required"]))):
        if key == "required":
            schema[key] = draw(st.lists(st.sampled_from(["a", "b", "c"]), max_size=4))
        elif key == "$schema":
            dialect = "https://json-schema.org/draft/2020-12/schema"
            schema[key] = draw(st.sampled_from([dialect, "not a uri", 5]))
        else:
            schema[key] = draw(_ANNOTATION)
    return schema


@settings(max_examples=300, deadline=None)
@given(_flat_looking_schemas())
def test_a_schema_compiled_without_jsonschema_is_one_jsonschema_accepts(
    schema: dict[str, Any],
) -> None:
    compiled = arguments_module._compile(schema)
    try:
        Draft202012Validator.check_schema(schema)
        valid = True
    except Exception:
        valid = False
    if compiled.deferred:
        assert valid, schema  # deferring never lets a broken schema through
    elif not valid:
        assert prepare_arguments({}, schema) == ArgumentErrors(
            (compiled.fault,), "", schema_fault=True
        )


def test_a_flat_schemas_calls_need_no_jsonschema_until_one_takes_the_full_path() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"city": {"type": "string", "title": "City"}, "days": {"type": "integer"}},
        "required": ["city"],
    }
    code = (
        "import json, sys\n"
        "from plughost.tools.arguments import prepare_arguments\n"
        f"schema = json.loads({json.dumps(schema)!r})\n"
        "ok = prepare_arguments({'city': 'Oslo', 'days': 2}, schema)\n"
        "print(type(ok).__name__, 'jsonschema' in sys.modules)\n"
        "cast = prepare_arguments({'city': 'Oslo', 'days': '3'}, schema)\n"
        "wrong = prepare_arguments({'town': 'Oslo'}, schema)\n"
        "print(cast.values, 'jsonschema' in sys.modules)\n"
        "print(json.dumps(list(wrong.problems)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    first, second, problems = done.stdout.strip().splitlines()

    assert first == "PreparedArguments False"  # answered by the flat check alone
    assert second == "{'city': 'Oslo', 'days': 3} True"  # the cast took the full path
    assert json.loads(problems) == list(_problems_in_this_process(schema, {"town": "Oslo"}))


def _problems_in_this_process(schema: dict[str, Any], raw: dict[str, Any]) -> tuple[str, ...]:
    result = prepare_arguments(raw, schema)
    assert isinstance(result, ArgumentErrors)
    return result.problems


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "title": 5, "properties": {"a": {"type": "string"}}},
        {"type": "object", "properties": {"a": {"type": "string", "examples": "x"}}},
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "a"]},
        {"type": "object", "$schema": 5, "properties": {"a": {"type": "string"}}},
    ],
    ids=["title", "examples", "required", "dialect"],
)
def test_a_flat_schema_the_metaschema_refuses_is_still_the_tools_fault(
    schema: dict[str, Any],
) -> None:
    assert not arguments_module._compile(schema).deferred

    result = prepare_arguments({"a": "x"}, schema)

    assert isinstance(result, ArgumentErrors) and result.schema_fault
