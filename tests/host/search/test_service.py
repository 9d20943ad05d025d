"""Tests for ToolSearchService: the tool_search built-in, strategies, auto mode, updates."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest

from plughost.search.service import TOOL_SEARCH_NAME, ToolSearchService, search_tools
from plughost.search.strategies import GenericStrategy, OpenAIStrategy
from plughost.search.text import tool_tokens
from plughost.tools.builtin import BuiltinToolProvider
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import (
    ToolAvailabilityContext,
    ToolExecutionContext,
    ToolExecutionResult,
    ToolInvocation,
    ToolSpec,
)

CHAT = ToolAvailabilityContext(session_id="s1", group_id="g1", is_group_chat=True)


class CountingProvider:
    """A provider whose tool list the test sets, counting how often it is listed."""

    provider_type = "plugin"

    def __init__(self, name: str, specs: Iterable[ToolSpec] = ()) -> None:
        self.provider_name = name
        self.specs = list(specs)
        self.listed = 0
        self.fail = False

    async def list_tools(self, context: ToolAvailabilityContext | None = None) -> list[ToolSpec]:
        self.listed += 1
        if self.fail:
            raise RuntimeError("runner is restarting")
        return list(self.specs)

    async def invoke(
        self, invocation: ToolInvocation, context: ToolExecutionContext | None = None
    ) -> ToolExecutionResult:
        return ToolExecutionResult(tool_name=invocation.tool_name, content="done")

    async def close(self) -> None:
        return None


def _tool(
    name: str, description: str = "", *, visibility: str = "deferred", plugin: str = "misc"
) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=description or f"{name.replace('_', ' ')} tool",
        parameters_schema={"type": "object", "properties": {"text": {"type": "string"}}},
        metadata={"visibility": visibility, "plugin_id": plugin},
        tool_id=f"plugin:{plugin}:{name}",
    )


def _fillers(count: int) -> list[ToolSpec]:
    return [_tool(f"filler_{i:02d}", f"placeholder number {i}") for i in range(count)]


PLUGIN_TOOLS = [
    _tool("get_weather", "Current weather and temperature of a city", plugin="weather"),
    _tool("weather_forecast", "查询城市未来七天的天气预报", plugin="weather"),
    _tool("send_email", "Send an email with subject and body", plugin="mail"),
    _tool("mute_member", "禁言群成员一段时间", plugin="group"),
    _tool("reply", "Reply in the chat", visibility="visible", plugin="core"),
    _tool("secret_admin", "Admin only", visibility="hidden", plugin="core"),
    *_fillers(30),
]


async def _setup(
    specs: Iterable[ToolSpec] = PLUGIN_TOOLS, **options: Any
) -> tuple[ToolRegistry, CountingProvider, ToolSearchService]:
    registry = ToolRegistry()
    plugins = CountingProvider("plugins", specs)
    registry.register_provider(plugins)
    service = ToolSearchService(registry, **options)
    registry.register_provider(BuiltinToolProvider([service.tool()]))
    return registry, plugins, service


async def _call_search(
    registry: ToolRegistry, arguments: dict[str, Any], session_id: str = "s1"
) -> ToolExecutionResult:
    context = ToolExecutionContext(session_id=session_id, group_id="g1", is_group_chat=True)
    invocation = ToolInvocation(tool_name=TOOL_SEARCH_NAME, arguments=arguments)
    return await registry.invoke(invocation, context)


def _openai_names(definitions: list[dict[str, Any]]) -> list[str]:
    return [d["function"]["name"] for d in definitions]


async def test_tool_search_returns_query_matches_and_total_found() -> None:
    registry, _, _ = await _setup()
    result = await _call_search(registry, {"query": "weather", "limit": 1})
    assert result.success, result.error_message
    data = result.structured_content
    assert data["query"] == "weather"
    assert data["total_found"] == 2
    assert [m["name"] for m in data["matches"]] == ["get_weather"]
    assert set(data["matches"][0]) == {"name", "description", "score"}
    assert data["matches"][0]["score"] > 0


async def test_tool_search_description_teaches_keywords_and_the_select_form() -> None:
    _, _, service = await _setup()
    description = service.tool().spec.description
    assert "select:" in description
    assert "keywords" in description


async def test_a_chinese_query_finds_a_chinese_tool() -> None:
    registry, _, _ = await _setup()
    result = await _call_search(registry, {"query": "查询天气预报"})
    assert result.structured_content["matches"][0]["name"] == "weather_forecast"


async def test_select_form_loads_named_tools_and_reports_unknown_names() -> None:
    registry, _, service = await _setup()
    result = await _call_search(registry, {"query": "select:send_email, nope ,MUTE_MEMBER"})
    data = result.structured_content
    assert [m["name"] for m in data["matches"]] == ["send_email", "mute_member"]
    assert data["not_found"] == ["nope"]
    assert service.discovery("s1").names == ("send_email", "mute_member")


async def test_an_empty_query_is_reported_to_the_model_as_a_tool_error() -> None:
    registry, _, service = await _setup()
    result = await _call_search(registry, {"query": "   "})
    assert not result.success
    assert result.error_code == "tool_error"
    assert "keywords" in result.error_message
    with pytest.raises(ValueError, match="empty"):
        await service.search("", 5, CHAT)


async def test_discovered_tools_appear_in_the_next_turns_generic_definitions() -> None:
    registry, _, service = await _setup()
    before = _openai_names(await service.definitions(CHAT, "s1"))
    assert before == ["reply", TOOL_SEARCH_NAME]

    await _call_search(registry, {"query": "select:send_email"})
    await _call_search(registry, {"query": "select:get_weather"})
    after = _openai_names(await service.definitions(CHAT, "s1"))
    assert after == ["reply", TOOL_SEARCH_NAME, "send_email", "get_weather"]


async def test_discoveries_belong_to_one_conversation() -> None:
    registry, _, service = await _setup()
    await _call_search(registry, {"query": "select:send_email"}, session_id="s1")
    other = _openai_names(await service.definitions(CHAT, "s2"))
    assert "send_email" not in other
    assert service.discovery("s2").names == ()


async def test_restored_state_brings_discoveries_back_after_a_restart() -> None:
    registry, _, service = await _setup()
    await _call_search(registry, {"query": "select:mute_member"})
    saved = json.loads(json.dumps(service.export_state()))

    _, _, restarted = await _setup()
    restarted.restore_state(saved)
    assert "mute_member" in _openai_names(await restarted.definitions(CHAT, "s1"))


async def test_a_discovered_tool_that_disappears_is_skipped_and_comes_back_with_it() -> None:
    registry, plugins, service = await _setup()
    await _call_search(registry, {"query": "select:send_email"})
    plugins.specs = [s for s in PLUGIN_TOOLS if s.name != "send_email"]
    registry.notify_changed("plugins")
    assert "send_email" not in _openai_names(await service.definitions(CHAT, "s1"))

    plugins.specs = list(PLUGIN_TOOLS)
    registry.notify_changed("plugins")
    assert _openai_names(await service.definitions(CHAT, "s1"))[-1] == "send_email"


async def test_generic_strategy_can_speak_the_anthropic_shape() -> None:
    _, _, service = await _setup(strategy=GenericStrategy("anthropic"))
    definitions = await service.definitions(CHAT, "s1")
    assert [d["name"] for d in definitions] == ["reply", TOOL_SEARCH_NAME]
    assert "input_schema" in definitions[0]


async def test_anthropic_strategy_sends_the_identical_full_catalog_every_turn() -> None:
    registry, _, service = await _setup(strategy="anthropic")
    first = await service.definitions(CHAT, "s1")
    first_json = json.dumps(first)
    await _call_search(registry, {"query": "select:send_email"})
    second = await service.definitions(CHAT, "s1")
    assert second is first
    assert json.dumps(second) == first_json

    by_name = {d["name"]: d for d in first}
    assert "secret_admin" not in by_name
    assert len(by_name) == len(PLUGIN_TOOLS) - 1 + 1  # hidden out, tool_search in
    assert by_name["send_email"]["defer_loading"] is True
    assert "defer_loading" not in by_name["reply"]
    assert "defer_loading" not in by_name[TOOL_SEARCH_NAME]
    assert [d["name"] for d in first[:2]] == ["reply", TOOL_SEARCH_NAME]


async def test_anthropic_results_carry_tool_references_for_deferred_tools_only() -> None:
    registry, _, service = await _setup(strategy="anthropic")
    result = await _call_search(registry, {"query": "select:reply,send_email"})
    references = [{"type": "tool_reference", "tool_name": "send_email"}]
    assert result.structured_content["tool_references"] == references
    assert service.tool_result_content(result) == references


async def test_anthropic_result_without_deferred_matches_stays_text() -> None:
    registry, _, service = await _setup(strategy="anthropic")
    result = await _call_search(registry, {"query": "select:nothing_here"})
    content = service.tool_result_content(result)
    assert isinstance(content, str)
    assert "nothing_here" in content


async def test_openai_strategy_marks_deferred_functions_and_adds_tool_search() -> None:
    _, _, service = await _setup(strategy="openai")
    definitions = await service.definitions(CHAT, "s1")
    assert definitions[1] == {"type": "tool_search"}
    functions = {d["name"]: d for d in definitions if d["type"] == "function"}
    assert TOOL_SEARCH_NAME not in functions
    assert functions["get_weather"]["defer_loading"] is True
    assert "defer_loading" not in functions["reply"]
    assert await service.definitions(CHAT, "s1") is definitions


async def test_openai_client_search_answers_a_call_with_loaded_functions() -> None:
    _, _, service = await _setup(strategy=OpenAIStrategy(execution="client"))
    entry = (await service.definitions(CHAT, "s1"))[1]
    assert entry["execution"] == "client"
    assert "query" in entry["parameters"]["properties"]

    output = await service.tool_search_output("call_1", {"query": "email"}, CHAT, "s1")
    assert output["type"] == "tool_search_output"
    assert output["call_id"] == "call_1"
    assert [tool["name"] for tool in output["tools"]] == ["send_email"]
    assert "defer_loading" not in output["tools"][0]
    assert service.discovery("s1").names == ("send_email",)


async def test_auto_mode_sends_every_tool_without_search_at_or_below_threshold() -> None:
    small = [*PLUGIN_TOOLS[:6]]  # five active tools and a hidden one
    _, _, service = await _setup(small, threshold=5)
    names = _openai_names(await service.definitions(CHAT, "s1"))
    assert TOOL_SEARCH_NAME not in names
    expected = ["get_weather", "mute_member", "reply", "send_email", "weather_forecast"]
    assert names == expected
    assert await service.is_searching(CHAT) is False


async def test_auto_mode_offers_search_above_threshold() -> None:
    _, _, service = await _setup(PLUGIN_TOOLS[:6], threshold=4)
    assert await service.is_searching(CHAT) is True
    assert _openai_names(await service.definitions(CHAT, "s1")) == ["reply", TOOL_SEARCH_NAME]


async def test_threshold_counts_only_active_tools() -> None:
    disabled = [s.model_copy(update={"enabled": False}) for s in _fillers(10)]
    hidden = [_tool(f"hidden_{i}", visibility="hidden") for i in range(10)]
    _, _, service = await _setup([*PLUGIN_TOOLS[:6], *disabled, *hidden], threshold=5)
    assert (await service.catalog(CHAT)).active_count == 5
    assert await service.is_searching(CHAT) is False


async def test_default_threshold_is_twenty_five_active_tools() -> None:
    _, _, at_limit = await _setup([*PLUGIN_TOOLS[:5], *_fillers(20)])
    assert await at_limit.is_searching(CHAT) is False
    _, _, above = await _setup([*PLUGIN_TOOLS[:5], *_fillers(21)])
    assert await above.is_searching(CHAT) is True


async def test_always_loaded_tools_are_sent_even_when_deferred() -> None:
    _, _, service = await _setup(always_loaded=["send_email"])
    names = _openai_names(await service.definitions(CHAT, "s1"))
    assert names == ["reply", "send_email", TOOL_SEARCH_NAME]


async def test_hidden_tools_are_never_listed_or_found() -> None:
    registry, _, service = await _setup(threshold=100)
    assert "secret_admin" not in _openai_names(await service.definitions(CHAT, "s1"))
    result = await _call_search(registry, {"query": "select:secret_admin"})
    assert result.structured_content["not_found"] == ["secret_admin"]
    assert (await service.search("admin", 5, CHAT)).matches == ()


async def test_search_covers_only_deferred_tools() -> None:
    _, _, service = await _setup()
    outcome = await service.search("reply chat", 5, CHAT)
    assert "reply" not in outcome.names


async def test_an_unchanged_registry_is_not_listed_again_between_turns() -> None:
    _, plugins, service = await _setup()
    await service.definitions(CHAT, "s1")
    listed = plugins.listed
    for _ in range(3):
        await service.definitions(CHAT, "s1")
    assert plugins.listed == listed


async def test_a_change_to_one_provider_relists_only_that_provider() -> None:
    registry, plugins, service = await _setup()
    others = CountingProvider("mcp", [_tool("search_docs", "Search the product docs")])
    registry.register_provider(others)
    await service.definitions(CHAT, "s1")
    plugins_before, others_before = plugins.listed, others.listed

    plugins.specs = [*PLUGIN_TOOLS, _tool("translate_text", "Translate text")]
    registry.notify_changed("plugins")
    outcome = await service.search("translate", 5, CHAT)
    assert outcome.names == ["translate_text"]
    assert plugins.listed == plugins_before + 1
    assert others.listed == others_before


async def test_a_plugin_reload_reindexes_only_that_plugins_tools(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    registry, plugins, service = await _setup()
    await service.definitions(CHAT, "s1")
    tokenized: list[str] = []

    def counting(spec: ToolSpec) -> list[str]:
        tokenized.append(spec.name)
        return tool_tokens(spec)

    monkeypatch.setattr("plughost.search.catalog.tool_tokens", counting)
    # A reload rebuilds every spec object; only the mail plugin's content changed.
    rebuilt = [s.model_copy(deep=True) for s in PLUGIN_TOOLS]
    rebuilt[2] = _tool("send_email", "Send an e-mail, now with attachments", plugin="mail")
    plugins.specs = rebuilt
    registry.notify_changed("plugins")
    outcome = await service.search("attachments", 5, CHAT)
    assert outcome.names == ["send_email"]
    assert tokenized == ["send_email"]


async def test_an_unchanged_reload_keeps_the_anthropic_list_object() -> None:
    registry, plugins, service = await _setup(strategy="anthropic")
    first = await service.definitions(CHAT, "s1")
    plugins.specs = [s.model_copy(deep=True) for s in PLUGIN_TOOLS]
    registry.notify_changed("plugins")
    assert await service.definitions(CHAT, "s1") is first


async def test_an_unregistered_provider_takes_its_tools_along() -> None:
    registry, _, service = await _setup()
    registry.register_provider(CountingProvider("mcp", [_tool("search_docs", "Docs search")]))
    assert (await service.search("docs", 5, CHAT)).names == ["search_docs"]
    registry.unregister_provider("mcp")
    assert (await service.search("docs", 5, CHAT)).names == []


async def test_the_first_provider_to_claim_a_name_keeps_it() -> None:
    registry, _, service = await _setup()
    registry.register_provider(CountingProvider("mcp", [_tool("send_email", "Fax machine")]))
    assert (await service.search("fax", 5, CHAT)).names == []
    assert (await service.search("email", 5, CHAT)).names == ["send_email"]


async def test_a_provider_that_fails_to_list_keeps_its_tools_and_is_retried() -> None:
    registry, plugins, service = await _setup()
    await service.definitions(CHAT, "s1")
    plugins.fail = True
    registry.notify_changed("plugins")
    assert (await service.search("email", 5, CHAT)).names == ["send_email"]
    plugins.fail = False
    plugins.specs = [*PLUGIN_TOOLS, _tool("translate_text", "Translate text")]
    assert (await service.search("translate", 5, CHAT)).names == ["translate_text"]


async def test_contexts_keep_separate_catalogs() -> None:
    registry = ToolRegistry()
    group_only = _tool("mute_member", "禁言群成员")

    class ScopedProvider(CountingProvider):
        async def list_tools(
            self, context: ToolAvailabilityContext | None = None
        ) -> list[ToolSpec]:
            in_group = context is not None and context.is_group_chat
            return [*self.specs, group_only] if in_group else list(self.specs)

    registry.register_provider(ScopedProvider("plugins", _fillers(30)))
    service = ToolSearchService(registry)
    private = ToolAvailabilityContext(session_id="p1")
    assert (await service.search("禁言", 5, CHAT)).names == ["mute_member"]
    assert (await service.search("禁言", 5, private)).names == []


async def test_search_tools_searches_every_listed_tool_for_the_cli() -> None:
    registry, _, _ = await _setup()
    matches = await search_tools(registry, "reply weather", 10)
    names = [m.name for m in matches]
    assert "reply" in names
    assert "get_weather" in names
    assert TOOL_SEARCH_NAME not in names
    assert "secret_admin" not in [m.name for m in await search_tools(registry, "admin", 10)]
    weather = next(m for m in matches if m.name == "get_weather")
    assert weather.tool_id == "plugin:weather:get_weather"
    assert weather.description == "Current weather and temperature of a city"


async def test_unknown_strategy_and_negative_threshold_are_refused() -> None:
    registry = ToolRegistry()
    with pytest.raises(ValueError, match="strategy"):
        ToolSearchService(registry, strategy="gemini")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="threshold"):
        ToolSearchService(registry, threshold=-1)
