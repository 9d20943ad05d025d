"""ToolParamType and ToolParameterInfo: the JSON Schema each declaration produces."""

from __future__ import annotations

from typing import Any

import pytest

from plughost_sdk import Plugin, Tool, ToolDeclaration
from plughost_sdk.types import ToolParameterInfo, ToolParamType


def _only(cls: type[Plugin]) -> ToolDeclaration:
    (declaration,) = cls.tool_declarations()
    return declaration


# --- parameter types and schemas -----------------------------------------------------------


@pytest.mark.parametrize(
    ("param_type", "json_type"),
    [
        (ToolParamType.STRING, "string"),
        (ToolParamType.INTEGER, "integer"),
        (ToolParamType.NUMBER, "number"),
        (ToolParamType.FLOAT, "number"),
        (ToolParamType.BOOLEAN, "boolean"),
        (ToolParamType.ARRAY, "array"),
        (ToolParamType.OBJECT, "object"),
    ],
)
def test_every_param_type_maps_to_its_json_schema_type(
    param_type: ToolParamType, json_type: str
) -> None:
    info = ToolParameterInfo(name="value", param_type=param_type)

    assert param_type.json_type == json_type
    assert info.to_schema()["type"] == json_type


def test_param_type_table_covers_every_member() -> None:
    assert {t.name for t in ToolParamType} == {
        "STRING",
        "INTEGER",
        "NUMBER",
        "FLOAT",
        "BOOLEAN",
        "ARRAY",
        "OBJECT",
    }


def test_array_parameter_carries_its_items_schema() -> None:
    info = ToolParameterInfo(
        name="tags",
        param_type=ToolParamType.ARRAY,
        description="Tags to filter by",
        items_schema={"type": "string", "minLength": 1},
    )

    assert info.to_schema() == {
        "type": "array",
        "description": "Tags to filter by",
        "items": {"type": "string", "minLength": 1},
    }


def test_object_parameter_carries_properties_required_and_additional_properties() -> None:
    info = ToolParameterInfo(
        name="filter",
        param_type=ToolParamType.OBJECT,
        description="Filter",
        properties={"field": {"type": "string"}, "value": {"type": "number"}},
        required_properties=["field"],
        additional_properties=False,
    )

    assert info.to_schema() == {
        "type": "object",
        "description": "Filter",
        "properties": {"field": {"type": "string"}, "value": {"type": "number"}},
        "required": ["field"],
        "additionalProperties": False,
    }


def test_object_parameter_may_describe_additional_properties_with_a_schema() -> None:
    info = ToolParameterInfo(
        name="labels",
        param_type=ToolParamType.OBJECT,
        additional_properties={"type": "string"},
    )

    assert info.to_schema() == {
        "type": "object",
        "properties": {},
        "additionalProperties": {"type": "string"},
    }


def test_enum_values_become_the_schema_enum() -> None:
    info = ToolParameterInfo(
        name="level", param_type=ToolParamType.INTEGER, enum_values=[1, 2, 3], default=2
    )

    assert info.to_schema() == {"type": "integer", "enum": [1, 2, 3], "default": 2}


def test_dict_form_required_false_makes_a_parameter_optional_and_is_not_kept() -> None:
    class Flags(Plugin):
        @Tool(
            "flags",
            brief_description="x",
            parameters={"verbose": {"type": "boolean", "required": False}},
        )
        async def flags(self, **kwargs: Any) -> None:
            return None

    assert _only(Flags).parameters_schema == {
        "type": "object",
        "properties": {"verbose": {"type": "boolean"}},
    }


def test_dict_form_float_type_becomes_json_schema_number() -> None:
    class Floats(Plugin):
        @Tool("scale", brief_description="x", parameters={"factor": {"type": "float"}})
        async def scale(self, factor: float, **kwargs: Any) -> None:
            return None

    assert _only(Floats).parameters_schema == {
        "type": "object",
        "properties": {"factor": {"type": "number"}},
        "required": ["factor"],
    }


def test_dict_form_accepts_a_nullable_type_union() -> None:
    class Nullable(Plugin):
        @Tool("note", brief_description="x", parameters={"text": {"type": ["string", "null"]}})
        async def note(self, **kwargs: Any) -> None:
            return None

    declaration = _only(Nullable)
    assert declaration.parameters_schema["properties"] == {"text": {"type": ["string", "null"]}}
    assert "- text: string/null, required" in declaration.detailed_description


def test_dict_form_full_object_schema_is_taken_as_is() -> None:
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
        "additionalProperties": False,
    }

    class Whole(Plugin):
        @Tool("whole", brief_description="x", parameters=schema)
        async def whole(self, q: str, **kwargs: Any) -> None:
            return None

    assert _only(Whole).parameters_schema == schema


def test_subclass_overriding_a_tool_method_does_not_duplicate_the_tool() -> None:
    class Base(Plugin):
        @Tool("hello", brief_description="base")
        async def hello(self, **kwargs: Any) -> str:
            return "base"

    class Child(Base):
        @Tool("hello", brief_description="child")
        async def hello(self, **kwargs: Any) -> str:
            return "child"

    assert [d.brief_description for d in Child.tool_declarations()] == ["child"]
    assert [d.brief_description for d in Base.tool_declarations()] == ["base"]
