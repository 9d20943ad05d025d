"""Tests for OpenAI and Anthropic tool definitions built from ToolSpec."""

from __future__ import annotations

import json
from typing import Any

import pytest

from plughost.tools.definitions import definition_of, to_anthropic, to_definitions, to_openai
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import ToolAvailabilityContext, ToolSpec

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "City name"}},
    "required": ["city"],
}


def _spec(name: str = "get_weather", **fields: Any) -> ToolSpec:
    return ToolSpec(name=name, description="Get the weather.", parameters_schema=SCHEMA, **fields)


def test_to_openai_builds_a_function_definition() -> None:
    assert to_openai(_spec()) == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the weather.",
            "parameters": SCHEMA,
        },
    }


def test_to_anthropic_builds_a_tool_with_an_input_schema() -> None:
    assert to_anthropic(_spec()) == {
        "name": "get_weather",
        "description": "Get the weather.",
        "input_schema": SCHEMA,
    }


def test_both_formats_come_from_the_same_definition() -> None:
    spec = _spec()
    definition = definition_of(spec)
    assert to_openai(spec)["function"]["parameters"] == definition.parameters
    assert to_anthropic(spec)["input_schema"] == definition.parameters


def test_definitions_fill_in_a_missing_type_and_properties() -> None:
    spec = ToolSpec(name="ping", parameters_schema={})
    assert to_anthropic(spec)["input_schema"] == {"type": "object", "properties": {}}
    spec = ToolSpec(name="ping", parameters_schema={"required": []})
    assert list(to_openai(spec)["function"]["parameters"]) == ["type", "properties", "required"]


def test_definitions_put_type_and_properties_first_in_a_fixed_order() -> None:
    spec = ToolSpec(
        name="t", parameters_schema={"required": ["a"], "properties": {"a": {}}, "type": "object"}
    )
    parameters = to_openai(spec)["function"]["parameters"]
    assert list(parameters) == ["type", "properties", "required"]


def test_definitions_copy_the_schema_so_editing_one_leaves_the_spec_alone() -> None:
    spec = _spec()
    to_openai(spec)["function"]["parameters"]["properties"]["city"]["type"] = "integer"
    assert spec.parameters_schema["properties"]["city"]["type"] == "string"


def test_definitions_fall_back_to_the_title_when_there_is_no_description() -> None:
    spec = ToolSpec(name="t", title="A title")
    assert to_anthropic(spec)["description"] == "A title"


def test_to_definitions_rejects_an_unknown_format() -> None:
    with pytest.raises(ValueError, match="unknown definition format 'gemini'"):
        to_definitions([_spec()], "gemini")  # type: ignore[arg-type]


class _Provider:
    provider_type = "plugin"

    def __init__(self, name: str, specs: list[ToolSpec]) -> None:
        self.provider_name = name
        self.specs = specs

    async def list_tools(self, context: ToolAvailabilityContext | None = None) -> list[ToolSpec]:
        return [spec.model_copy(deep=True) for spec in self.specs]

    async def invoke(self, invocation: Any, context: Any = None) -> Any:
        raise NotImplementedError

    async def close(self) -> None:
        return None


async def test_registry_definitions_are_identical_across_calls_while_tools_are_unchanged() -> None:
    registry = ToolRegistry()
    registry.register_provider(_Provider("b", [_spec("zeta"), _spec("alpha")]))
    registry.register_provider(_Provider("a", [_spec("mid")]))
    first = await registry.get_llm_definitions()
    registry.notify_changed("b")  # forces a fresh listing with new spec objects
    second = await registry.get_llm_definitions()
    assert [d["function"]["name"] for d in first] == ["zeta", "alpha", "mid"]
    assert first == second
    assert json.dumps(first) == json.dumps(second)


async def test_registry_definitions_follow_the_format_and_names_filter() -> None:
    registry = ToolRegistry()
    registry.register_provider(_Provider("p", [_spec("one"), _spec("two"), _spec("three")]))
    definitions = await registry.get_llm_definitions(format="anthropic", names=["three", "one"])
    assert [d["name"] for d in definitions] == ["one", "three"]
    assert "input_schema" in definitions[0]
