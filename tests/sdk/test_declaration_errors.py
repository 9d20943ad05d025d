"""Invalid declarations fail when the class is defined, naming plugin, tool and parameter."""

from __future__ import annotations

from typing import Any

import pytest

from plughost_sdk import Plugin, PluginDeclarationError, Tool
from plughost_sdk.types import ToolParameterInfo, ToolParamType

# --- validation errors name the plugin, the tool and the parameter -------------------------


def _declare(name: Any = "tool", *, parameters: Any = None, **metadata: Any) -> type[Plugin]:
    class BrokenPlugin(Plugin):
        @Tool(name, brief_description="x", parameters=parameters, **metadata)
        async def handler(self, **kwargs: Any) -> None:
            return None

    return BrokenPlugin


@pytest.mark.parametrize("name", ["", "   ", None])
def test_missing_or_empty_tool_name_is_rejected_naming_plugin_and_method(name: Any) -> None:
    with pytest.raises(PluginDeclarationError) as caught:
        _declare(name)

    message = str(caught.value)
    assert "plugin BrokenPlugin" in message
    assert "method 'handler'" in message
    assert "non-empty name" in message


@pytest.mark.parametrize("name", ["search web", "search.web", "s" * 65, "résumé"])
def test_tool_name_with_invalid_characters_is_rejected(name: str) -> None:
    with pytest.raises(PluginDeclarationError) as caught:
        _declare(name)

    message = str(caught.value)
    assert f"plugin BrokenPlugin, tool {name!r}" in message
    assert "letters, digits, '_' and '-'" in message


def test_duplicate_tool_names_in_one_plugin_are_rejected() -> None:
    with pytest.raises(PluginDeclarationError) as caught:

        class Twice(Plugin):
            @Tool("lookup", brief_description="first")
            async def first(self, **kwargs: Any) -> None:
                return None

            @Tool("lookup", brief_description="second")
            async def second(self, **kwargs: Any) -> None:
                return None

    message = str(caught.value)
    assert "plugin Twice" in message
    assert "'lookup' is declared twice" in message
    assert "'first'" in message
    assert "'second'" in message


@pytest.mark.parametrize("param", ["1st", "with-dash", "class", "two words"])
def test_parameter_name_that_is_not_an_identifier_is_rejected(param: str) -> None:
    with pytest.raises(PluginDeclarationError) as caught:
        _declare(parameters=[ToolParameterInfo(name=param)])

    message = str(caught.value)
    assert f"plugin BrokenPlugin, tool 'tool', parameter {param!r}" in message
    assert "Python identifiers" in message


def test_dict_form_parameter_name_that_is_not_an_identifier_is_rejected() -> None:
    with pytest.raises(PluginDeclarationError, match="parameter 'max-results'"):
        _declare(parameters={"max-results": {"type": "integer"}})


def test_parameter_declared_twice_is_rejected() -> None:
    with pytest.raises(PluginDeclarationError, match="parameter 'q' is declared twice"):
        _declare(parameters=[ToolParameterInfo(name="q"), ToolParameterInfo(name="q")])


def test_enum_value_of_the_wrong_type_is_rejected() -> None:
    info = ToolParameterInfo(name="count", param_type=ToolParamType.INTEGER, enum_values=[1, "2"])

    with pytest.raises(PluginDeclarationError) as caught:
        _declare(parameters=[info])

    message = str(caught.value)
    assert "plugin BrokenPlugin, tool 'tool', parameter 'count'" in message
    assert "enum value '2' is not of type integer" in message


def test_boolean_is_not_accepted_as_an_integer_default() -> None:
    info = ToolParameterInfo(name="count", param_type=ToolParamType.INTEGER, default=True)

    with pytest.raises(PluginDeclarationError, match="default True is not of type integer"):
        _declare(parameters=[info])


def test_default_of_the_wrong_type_is_rejected() -> None:
    info = ToolParameterInfo(
        name="limit", param_type=ToolParamType.INTEGER, required=False, default="5"
    )

    with pytest.raises(PluginDeclarationError) as caught:
        _declare(parameters=[info])

    message = str(caught.value)
    assert "plugin BrokenPlugin, tool 'tool', parameter 'limit'" in message
    assert "default '5' is not of type integer" in message


def test_dict_form_default_of_the_wrong_type_is_rejected() -> None:
    with pytest.raises(PluginDeclarationError, match=r"parameter 'ratio'.*not of type number"):
        _declare(parameters={"ratio": {"type": "number", "default": "half"}})


def test_default_outside_the_enum_is_rejected() -> None:
    info = ToolParameterInfo(name="unit", enum_values=["c", "f"], required=False, default="k")

    with pytest.raises(PluginDeclarationError) as caught:
        _declare(parameters=[info])

    message = str(caught.value)
    assert "plugin BrokenPlugin, tool 'tool', parameter 'unit'" in message
    assert "default 'k' is not one of the enum values ['c', 'f']" in message


def test_empty_enum_is_rejected() -> None:
    with pytest.raises(PluginDeclarationError, match="enum_values must be a non-empty list"):
        _declare(parameters=[ToolParameterInfo(name="unit", enum_values=[])])


def test_unknown_dict_form_type_is_rejected() -> None:
    with pytest.raises(PluginDeclarationError, match=r"parameter 'when'.*unknown type 'date'"):
        _declare(parameters={"when": {"type": "date"}})


def test_required_properties_on_a_non_object_parameter_is_rejected() -> None:
    info = ToolParameterInfo(name="tags", param_type=ToolParamType.ARRAY, required_properties=["a"])

    with pytest.raises(PluginDeclarationError, match="required_properties only applies to OBJECT"):
        _declare(parameters=[info])


def test_parameters_of_the_wrong_kind_are_rejected() -> None:
    with pytest.raises(PluginDeclarationError, match="parameters must be a list"):
        _declare(parameters="query")


def test_bad_visibility_is_rejected() -> None:
    with pytest.raises(PluginDeclarationError) as caught:
        _declare(visibility="public")

    message = str(caught.value)
    assert "plugin BrokenPlugin, tool 'tool'" in message
    assert "visibility 'public' is not one of visible, deferred, hidden" in message


@pytest.mark.parametrize(
    ("timeout", "expected"),
    [
        (0, "timeout_ms must be positive, got 0"),
        (-5, "timeout_ms must be positive, got -5"),
        ("1000", "timeout_ms must be an integer of milliseconds"),
        (1.5, "timeout_ms must be an integer of milliseconds"),
        (True, "timeout_ms must be an integer of milliseconds"),
    ],
)
def test_bad_timeout_ms_is_rejected(timeout: Any, expected: str) -> None:
    with pytest.raises(PluginDeclarationError) as caught:
        _declare(timeout_ms=timeout)

    assert "plugin BrokenPlugin, tool 'tool'" in str(caught.value)
    assert expected in str(caught.value)


def test_bad_chat_scope_is_rejected() -> None:
    with pytest.raises(PluginDeclarationError, match="chat_scope 'channel' is not one of"):
        _declare(chat_scope="channel")


def test_non_boolean_read_only_is_rejected() -> None:
    with pytest.raises(PluginDeclarationError, match="read_only must be True or False"):
        _declare(read_only="yes")
