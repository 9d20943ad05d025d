"""Tool declarations: the seed examples' schemas and descriptions, metadata, validation.

The examples from the plugin-author contract are copied with only the import
lines changed and ``MaiBotPlugin`` renamed ``Plugin``. Each is wrapped in a
function so the two ``MyPlugin`` classes do not collide.
"""

from __future__ import annotations

from typing import Any

import pytest

from plughost_sdk import Action, Plugin, PluginDeclarationError, Tool, ToolDeclaration
from plughost_sdk.types import ToolParameterInfo, ToolParamType


def _only(cls: type[Plugin]) -> ToolDeclaration:
    (declaration,) = cls.tool_declarations()
    return declaration


def _by_name(cls: type[Plugin]) -> dict[str, ToolDeclaration]:
    return {d.name: d for d in cls.tool_declarations()}


# --- the seed examples, verbatim apart from imports --------------------------------------


def _send_tts_voice_example() -> type[Plugin]:
    class TtsPlugin(Plugin):
        @Tool(
            "send_tts_voice",
            description="Synthesize the given text as voice and send it to the current chat.",
            core_tool=True,
            parameters=[
                ToolParameterInfo(
                    name="text",
                    param_type=ToolParamType.STRING,
                    description="Text to synthesize and send",
                    required=True,
                ),
            ],
        )
        async def send_tts_voice(self, text: str, **kwargs): ...

    return TtsPlugin


def _list_form_example() -> type[Plugin]:
    class MyPlugin(Plugin):
        @Tool(
            "search",
            brief_description="Search the internet for information",
            detailed_description="Use a search engine to find related information. Parameter details:\n- query: string, required. Search keywords.\n- limit: integer, optional. Maximum number of results to return.",  # noqa: E501
            parameters=[
                ToolParameterInfo(
                    name="query",
                    param_type=ToolParamType.STRING,
                    description="Search keywords",
                    required=True,
                ),
                ToolParameterInfo(
                    name="limit",
                    param_type=ToolParamType.INTEGER,
                    description="Maximum number of results to return",
                    required=False,
                    default=5,
                ),
            ],
        )
        async def handle_search(self, query: str, limit: int = 5, **kwargs):
            results = await self._do_search(query, limit)
            return {"results": results}

    return MyPlugin


def _dict_form_example() -> type[Plugin]:
    class MyPlugin(Plugin):
        @Tool(
            "search",
            brief_description="Search the internet for information",
            parameters={
                "query": {"type": "string", "description": "Search keywords"},
                "limit": {
                    "type": "integer",
                    "description": "Maximum number of results to return",
                    "default": 5,
                },
            },
        )
        async def handle_search(self, query: str, limit: int = 5, **kwargs):
            results = await self._do_search(query, limit)
            return {"results": results}

    return MyPlugin


def _greet_example() -> type[Plugin]:
    class GreetPlugin(Plugin):
        @Tool(
            "greet",
            brief_description="Greet the user",
            detailed_description="Parameter details:\n- stream_id: string, required. Current chat stream ID.",  # noqa: E501
            parameters=[
                ToolParameterInfo(
                    name="stream_id",
                    param_type=ToolParamType.STRING,
                    description="Current chat stream ID",
                    required=True,
                ),
            ],
        )
        async def handle_greet(self, stream_id: str, **kwargs):
            await self.ctx.send.text("Hello!", stream_id)
            return {"success": True, "message": "Replied"}

    return GreetPlugin


class SearchPlugin(Plugin):
    async def on_load(self) -> None:
        self.ctx.logger.info("Search plugin loaded")

    async def on_unload(self) -> None:
        pass

    async def on_config_update(self, scope: str, config_data: dict, version: str) -> None:
        pass

    @Tool(
        "search_web",
        brief_description="Search the internet for information",
        detailed_description="Use a search engine to find related information. Returns a list of results that best match the keywords.",  # noqa: E501
        parameters=[
            ToolParameterInfo(
                name="query",
                param_type=ToolParamType.STRING,
                description="Search keywords",
                required=True,
            ),
            ToolParameterInfo(
                name="limit",
                param_type=ToolParamType.INTEGER,
                description="Maximum number of results to return",
                required=False,
                default=5,
            ),
        ],
    )
    async def search(self, query: str, limit: int = 5, **kwargs):
        """Search the internet"""
        results = await self._do_search(query, limit)
        return {"results": results, "count": len(results)}

    @Tool(
        "get_weather",
        brief_description="Get weather information for a specified city",
        parameters=[
            ToolParameterInfo(
                name="city",
                param_type=ToolParamType.STRING,
                description="City name",
                required=True,
            ),
        ],
    )
    async def get_weather(self, city: str, **kwargs):
        """Query weather"""
        weather = await self._fetch_weather(city)
        return {"city": city, "weather": weather}

    async def _do_search(self, query: str, limit: int) -> list:
        # Actual search logic
        return []

    async def _fetch_weather(self, city: str) -> dict:
        # Actual weather query logic
        return {}


def create_plugin():
    return SearchPlugin()


SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Search keywords"},
        "limit": {
            "type": "integer",
            "description": "Maximum number of results to return",
            "default": 5,
        },
    },
    "required": ["query"],
}


# --- the seed examples produce the documented output --------------------------------------


def test_send_tts_voice_example_is_a_visible_tool_with_generated_details() -> None:
    declaration = _only(_send_tts_voice_example())

    assert declaration.name == "send_tts_voice"
    assert declaration.handler_name == "send_tts_voice"
    assert declaration.visibility == "visible"
    assert declaration.metadata == {"visibility": "visible", "core_tool": True}
    assert declaration.parameters_schema == {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "Text to synthesize and send"}},
        "required": ["text"],
    }
    assert declaration.brief_description == (
        "Synthesize the given text as voice and send it to the current chat."
    )
    assert declaration.detailed_description == (
        "Parameter details:\n- text: string, required. Text to synthesize and send"
    )
    assert declaration.description == (
        "Synthesize the given text as voice and send it to the current chat.\n\n"
        "Parameter details:\n"
        "- text: string, required. Text to synthesize and send"
    )


def test_list_form_example_keeps_its_own_parameter_details_section() -> None:
    declaration = _only(_list_form_example())

    assert declaration.parameters_schema == SEARCH_SCHEMA
    assert declaration.detailed_description == (
        "Use a search engine to find related information. Parameter details:\n"
        "- query: string, required. Search keywords.\n"
        "- limit: integer, optional. Maximum number of results to return."
    )
    assert declaration.description.count("Parameter details:") == 1
    assert declaration.description == (
        "Search the internet for information\n\n"
        "Use a search engine to find related information. Parameter details:\n"
        "- query: string, required. Search keywords.\n"
        "- limit: integer, optional. Maximum number of results to return."
    )
    assert declaration.visibility == "deferred"


def test_dict_form_example_gives_the_same_schema_as_the_list_form() -> None:
    from_dict = _only(_dict_form_example())
    from_list = _only(_list_form_example())

    assert from_dict.parameters_schema == SEARCH_SCHEMA
    assert from_dict.parameters_schema == from_list.parameters_schema


def test_dict_form_example_with_only_a_brief_description_gets_generated_details() -> None:
    declaration = _only(_dict_form_example())

    assert declaration.brief_description == "Search the internet for information"
    assert declaration.detailed_description == (
        "Parameter details:\n"
        "- query: string, required. Search keywords\n"
        "- limit: integer, optional. Maximum number of results to return. Default: 5"
    )
    assert declaration.description == (
        "Search the internet for information\n\n"
        "Parameter details:\n"
        "- query: string, required. Search keywords\n"
        "- limit: integer, optional. Maximum number of results to return. Default: 5"
    )


def test_greet_example_detailed_description_is_not_given_a_second_details_section() -> None:
    declaration = _only(_greet_example())

    assert declaration.detailed_description == (
        "Parameter details:\n- stream_id: string, required. Current chat stream ID."
    )
    assert declaration.description == (
        "Greet the user\n\n"
        "Parameter details:\n- stream_id: string, required. Current chat stream ID."
    )
    assert declaration.parameters_schema == {
        "type": "object",
        "properties": {"stream_id": {"type": "string", "description": "Current chat stream ID"}},
        "required": ["stream_id"],
    }


def test_complete_example_declares_search_web_and_get_weather_in_definition_order() -> None:
    assert [d.name for d in SearchPlugin.tool_declarations()] == ["search_web", "get_weather"]
    assert isinstance(create_plugin(), SearchPlugin)


def test_complete_example_search_web_gets_details_appended_to_its_detailed_description() -> None:
    declaration = _by_name(SearchPlugin)["search_web"]

    assert declaration.handler_name == "search"
    assert declaration.parameters_schema == SEARCH_SCHEMA
    assert declaration.detailed_description == (
        "Use a search engine to find related information. Returns a list of results that "
        "best match the keywords.\n\n"
        "Parameter details:\n"
        "- query: string, required. Search keywords\n"
        "- limit: integer, optional. Maximum number of results to return. Default: 5"
    )
    assert declaration.description == (
        "Search the internet for information\n\n"
        "Use a search engine to find related information. Returns a list of results that "
        "best match the keywords.\n\n"
        "Parameter details:\n"
        "- query: string, required. Search keywords\n"
        "- limit: integer, optional. Maximum number of results to return. Default: 5"
    )


def test_complete_example_get_weather_gets_generated_details_from_its_brief_description() -> None:
    declaration = _by_name(SearchPlugin)["get_weather"]

    assert declaration.parameters_schema == {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name"}},
        "required": ["city"],
    }
    assert declaration.description == (
        "Get weather information for a specified city\n\n"
        "Parameter details:\n- city: string, required. City name"
    )
    assert declaration.visibility == "deferred"


def test_declaration_wire_form_carries_every_field() -> None:
    declaration = _by_name(SearchPlugin)["get_weather"]

    assert declaration.to_wire() == {
        "name": "get_weather",
        "handler": "get_weather",
        "description": declaration.description,
        "brief_description": "Get weather information for a specified city",
        "detailed_description": "Parameter details:\n- city: string, required. City name",
        "parameters_schema": declaration.parameters_schema,
        "visibility": "deferred",
        "metadata": {"visibility": "deferred", "core_tool": False},
        "legacy_action": False,
    }


# --- descriptions --------------------------------------------------------------------------


def test_indented_detailed_description_is_dedented_before_details_are_appended() -> None:
    class Docs(Plugin):
        @Tool(
            "lookup",
            brief_description="Look a word up",
            detailed_description="""
                Finds a word in the dictionary.
                Case is ignored.
            """,
            parameters=[ToolParameterInfo(name="word", description="The word")],
        )
        async def lookup(self, word: str, **kwargs: Any) -> str:
            return word

    assert _only(Docs).detailed_description == (
        "Finds a word in the dictionary.\nCase is ignored.\n\n"
        "Parameter details:\n- word: string, required. The word"
    )


def test_tool_without_parameters_or_descriptions_is_described_by_its_name() -> None:
    class Bare(Plugin):
        @Tool("ping")
        async def ping(self, **kwargs: Any) -> str:
            return "pong"

    declaration = _only(Bare)
    assert declaration.parameters_schema == {"type": "object", "properties": {}}
    assert declaration.description == "ping"
    assert declaration.detailed_description == ""


def test_detailed_description_alone_supplies_the_brief_description() -> None:
    class DetailedOnly(Plugin):
        @Tool("ping", detailed_description="Checks the host is alive.\nReturns pong.")
        async def ping(self, **kwargs: Any) -> str:
            return "pong"

    declaration = _only(DetailedOnly)
    assert declaration.brief_description == "Checks the host is alive."
    assert declaration.description == "Checks the host is alive.\nReturns pong."


def test_parameter_details_render_enum_values_and_json_style_defaults() -> None:
    class Units(Plugin):
        @Tool(
            "temperature",
            brief_description="Read the temperature",
            parameters=[
                ToolParameterInfo(
                    name="unit",
                    description="Unit to report in.",
                    required=False,
                    enum_values=["c", "f"],
                    default="c",
                ),
                ToolParameterInfo(
                    name="rounded",
                    param_type=ToolParamType.BOOLEAN,
                    description="Round to whole degrees",
                    required=False,
                    default=True,
                ),
            ],
        )
        async def temperature(self, unit: str = "c", rounded: bool = True, **kwargs: Any) -> str:
            return unit

    assert _only(Units).detailed_description == (
        "Parameter details:\n"
        "- unit: string, optional. Unit to report in. Allowed values: c, f. Default: c\n"
        "- rounded: boolean, optional. Round to whole degrees. Default: true"
    )


# --- visibility and metadata ---------------------------------------------------------------


def test_tool_is_deferred_by_default() -> None:
    class Plain(Plugin):
        @Tool("plain", brief_description="x")
        async def plain(self, **kwargs: Any) -> None:
            return None

    declaration = _only(Plain)
    assert declaration.visibility == "deferred"
    assert declaration.metadata["core_tool"] is False


def test_core_tool_means_visible() -> None:
    class Core(Plugin):
        @Tool("core", brief_description="x", core_tool=True)
        async def core(self, **kwargs: Any) -> None:
            return None

    declaration = _only(Core)
    assert declaration.visibility == "visible"
    assert declaration.metadata["core_tool"] is True


def test_visibility_visible_marks_the_tool_as_core() -> None:
    class Shown(Plugin):
        @Tool("shown", brief_description="x", visibility="visible")
        async def shown(self, **kwargs: Any) -> None:
            return None

    assert _only(Shown).metadata == {"visibility": "visible", "core_tool": True}


def test_visibility_hidden_is_kept() -> None:
    class Hidden(Plugin):
        @Tool("secret", brief_description="x", visibility="hidden")
        async def secret(self, **kwargs: Any) -> None:
            return None

    declaration = _only(Hidden)
    assert declaration.visibility == "hidden"
    assert declaration.metadata == {"visibility": "hidden", "core_tool": False}


def test_extra_metadata_is_kept_on_the_declaration() -> None:
    class Meta(Plugin):
        @Tool(
            "fetch",
            brief_description="x",
            timeout_ms=2500,
            read_only=True,
            exclusive=False,
            chat_scope="group",
            category="network",
        )
        async def fetch(self, **kwargs: Any) -> None:
            return None

    assert _only(Meta).metadata == {
        "timeout_ms": 2500,
        "read_only": True,
        "exclusive": False,
        "chat_scope": "group",
        "category": "network",
        "visibility": "deferred",
        "core_tool": False,
    }


# --- legacy @Action ------------------------------------------------------------------------


def _legacy_plugin() -> type[Plugin]:
    class LegacyPlugin(Plugin):
        @Action(
            "greet",
            "Greet someone by name",
            activation_type="keyword",
            activation_keywords=["hello", "hi"],
            action_parameters={"target": "who to greet", "tone": "friendly or formal"},
            action_require=["someone says hello"],
        )
        async def greet(self, **kwargs: Any) -> tuple[bool, str]:
            return True, "hi"

    return LegacyPlugin


def test_action_emits_a_deprecation_warning_pointing_at_the_decorator() -> None:
    with pytest.warns(DeprecationWarning, match=r"@Action\('greet'\) is deprecated") as record:
        _legacy_plugin()

    assert record[0].filename == __file__


def test_action_becomes_a_legacy_tool_with_optional_string_parameters() -> None:
    with pytest.warns(DeprecationWarning, match="@Action"):
        declaration = _only(_legacy_plugin())

    assert declaration.name == "greet"
    assert declaration.legacy_action is True
    assert declaration.parameters_schema == {
        "type": "object",
        "properties": {
            "target": {"type": "string", "description": "who to greet"},
            "tone": {"type": "string", "description": "friendly or formal"},
        },
    }
    assert declaration.description == (
        "Greet someone by name\n\n"
        "Use when: someone says hello\n"
        "Keywords: hello, hi\n\n"
        "Parameter details:\n"
        "- target: string, optional. who to greet\n"
        "- tone: string, optional. friendly or formal"
    )


def test_action_keeps_activation_settings_in_metadata() -> None:
    with pytest.warns(DeprecationWarning, match="@Action"):
        declaration = _only(_legacy_plugin())

    assert declaration.metadata == {
        "legacy_action": True,
        "legacy_component_type": "ACTION",
        "activation_type": "keyword",
        "activation_keywords": ["hello", "hi"],
        "action_require": ["someone says hello"],
        "associated_types": [],
        "parallel_action": False,
        "visibility": "deferred",
        "core_tool": False,
    }
    assert declaration.visibility == "deferred"


def test_action_parameter_that_is_not_an_identifier_is_rejected_naming_it() -> None:
    with (
        pytest.warns(DeprecationWarning, match="@Action"),
        pytest.raises(PluginDeclarationError) as caught,
    ):

        class BadLegacy(Plugin):
            @Action("act", "x", action_parameters={"the target": "who"})
            async def act(self, **kwargs: Any) -> None:
                return None

    assert "plugin BadLegacy, tool 'act', parameter 'the target'" in str(caught.value)
