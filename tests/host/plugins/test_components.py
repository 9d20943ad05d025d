"""ComponentRegistry, ComponentQueryService and PluginToolProvider over an in-memory owner."""

from __future__ import annotations

from typing import Any

import pytest

from plughost.plugins.components import ComponentRegistry, ToolComponent
from plughost.plugins.provider import PluginToolProvider
from plughost.plugins.query import ComponentQueryService
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import (
    ToolAvailabilityContext,
    ToolExecutionContext,
    ToolExecutionResult,
    ToolInvocation,
)


class FakeOwner:
    """Records calls instead of sending them to a runner."""

    def __init__(self, answer: str = "ok", code: str | None = None) -> None:
        self.calls: list[tuple[str, str, dict[str, Any], float]] = []
        self.answer = answer
        self.code = code

    async def invoke(
        self, plugin_id: str, tool: str, arguments: dict[str, Any], timeout: float
    ) -> ToolExecutionResult:
        self.calls.append((plugin_id, tool, arguments, timeout))
        if self.code:
            return ToolExecutionResult.failure(tool, "going away", self.code)
        return ToolExecutionResult(tool_name=tool, content=self.answer)


def tool(plugin_id: str, name: str, **metadata: Any) -> ToolComponent:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    return ToolComponent(plugin_id, name, f"{name} tool", f"{name} tool", schema, metadata=metadata)


def test_replacing_a_plugin_swaps_its_whole_set_in_one_version_step() -> None:
    registry = ComponentRegistry()
    owner = FakeOwner()
    registry.replace_plugin("a.one", [tool("a.one", "x"), tool("a.one", "y")], owner)
    version = registry.version
    registry.replace_plugin("a.one", [tool("a.one", "z")], owner)
    assert registry.version == version + 1
    assert [c.name for c in registry.by_plugin("a.one")] == ["z"]
    assert registry.get("a.one.x") is None
    assert registry.get("a.one.z") is not None


def test_a_plugin_cannot_register_a_tool_name_twice() -> None:
    registry = ComponentRegistry()
    with pytest.raises(ValueError, match="twice"):
        registry.replace_plugin("a.one", [tool("a.one", "x"), tool("a.one", "x")], FakeOwner())


def test_disabled_state_survives_a_reload_and_is_pruned_when_the_tool_goes() -> None:
    registry = ComponentRegistry()
    owner = FakeOwner()
    registry.replace_plugin("a.one", [tool("a.one", "x")], owner)
    registry.set_enabled("a.one.x", False)
    registry.replace_plugin("a.one", [tool("a.one", "x")], owner)
    assert not registry.is_enabled("a.one.x")
    registry.replace_plugin("a.one", [tool("a.one", "other")], owner)
    registry.replace_plugin("a.one", [tool("a.one", "x")], owner)
    assert registry.is_enabled("a.one.x")


def test_a_disabled_plugin_stays_disabled_through_reloads_and_new_tools() -> None:
    registry = ComponentRegistry()
    owner = FakeOwner()
    registry.replace_plugin("a.one", [tool("a.one", "x")], owner)
    registry.set_plugin_enabled("a.one", False)
    registry.replace_plugin("a.one", [tool("a.one", "x"), tool("a.one", "new")], owner)

    assert not any(registry.is_available(c, None) for c in registry.by_plugin("a.one"))
    assert not registry.is_plugin_enabled("a.one")
    registry.set_plugin_enabled("a.one", True)
    assert all(registry.is_available(c, None) for c in registry.by_plugin("a.one"))


def test_enabling_an_unknown_plugin_is_a_key_error() -> None:
    with pytest.raises(KeyError, match="no plugin"):
        ComponentRegistry().set_plugin_enabled("nobody", False)


def test_removing_a_plugin_is_idempotent_and_leaves_nothing_behind() -> None:
    registry = ComponentRegistry()
    registry.replace_plugin("a.one", [tool("a.one", "x")], FakeOwner())
    assert registry.remove_plugin("a.one") is True
    assert registry.remove_plugin("a.one") is False
    assert registry.all() == []
    assert registry.owner("a.one") is None


def test_chat_scope_and_session_disabling_filter_availability() -> None:
    registry = ComponentRegistry()
    group_only = tool("a.one", "g", chat_scope="group")
    anywhere = tool("a.one", "x")
    registry.replace_plugin("a.one", [group_only, anywhere], FakeOwner())
    private = ToolAvailabilityContext(session_id="s1", is_group_chat=False)
    group = ToolAvailabilityContext(session_id="s2", is_group_chat=True)
    assert not registry.is_available(group_only, private)
    assert registry.is_available(group_only, group)
    registry.set_enabled_for_session("a.one.x", "s1", False)
    assert not registry.is_available(anywhere, private)
    assert registry.is_available(anywhere, group)


def test_a_tool_scoped_to_platforms_is_available_only_where_the_platform_is_known() -> None:
    registry = ComponentRegistry()
    telegram_only = tool("a.one", "t", platforms=["telegram"])
    registry.replace_plugin("a.one", [telegram_only], FakeOwner())

    assert registry.is_available(telegram_only, ToolAvailabilityContext(platform="Telegram"))
    assert not registry.is_available(telegram_only, ToolAvailabilityContext(platform="qq"))
    assert not registry.is_available(telegram_only, None)


def test_a_tool_limited_to_sessions_is_available_only_in_those_chats() -> None:
    registry = ComponentRegistry()
    limited = tool("a.one", "s", allowed_session=["qq:42", "stream-7"])
    registry.replace_plugin("a.one", [limited], FakeOwner())

    assert registry.is_available(limited, ToolAvailabilityContext(platform="qq", group_id="42"))
    assert registry.is_available(limited, ToolAvailabilityContext(stream_id="stream-7"))
    assert not registry.is_available(limited, ToolAvailabilityContext(stream_id="stream-8"))
    assert not registry.is_available(limited, None)


def test_the_plugin_seen_first_keeps_a_shared_name_until_it_goes_away() -> None:
    registry = ComponentRegistry()
    query = ComponentQueryService(registry)
    registry.replace_plugin("bob.docs", [tool("bob.docs", "search")], FakeOwner())
    assert [spec.name for spec in query.specs()] == ["search"]
    registry.replace_plugin("alice.weather", [tool("alice.weather", "search")], FakeOwner())
    registry.replace_plugin("bob.docs", [tool("bob.docs", "search")], FakeOwner())  # a reload
    names = {spec.metadata["plugin_id"]: spec.name for spec in query.specs()}
    assert names == {"bob.docs": "search", "alice.weather": "weather_search"}
    registry.remove_plugin("bob.docs")
    assert [spec.name for spec in query.specs()] == ["search"]


def test_call_arguments_merge_the_context_over_the_model_arguments() -> None:
    registry = ComponentRegistry()
    component = tool("a.one", "x")
    registry.replace_plugin("a.one", [component], FakeOwner())
    query = ComponentQueryService(registry)
    context = ToolExecutionContext(stream_id="real-stream", user_id="u1", platform="qq")
    kwargs = query.build_arguments(component, {"q": "hi", "stream_id": "guess"}, context)
    assert kwargs["stream_id"] == "real-stream"
    assert kwargs["q"] == "hi"
    assert kwargs["user_id"] == "u1"
    assert kwargs["platform"] == "qq"


def test_legacy_actions_also_receive_action_data_and_reasoning() -> None:
    registry = ComponentRegistry()
    component = ToolComponent("a.one", "greet", "", "", {}, legacy_action=True)
    registry.replace_plugin("a.one", [component], FakeOwner())
    context = ToolExecutionContext(reasoning="the user said hi")
    kwargs = ComponentQueryService(registry).build_arguments(component, {"target": "Ann"}, context)
    assert kwargs["action_data"] == {"target": "Ann"}
    assert kwargs["reasoning"] == "the user said hi"


async def test_the_provider_routes_to_the_current_owner_with_the_tool_timeout() -> None:
    registry = ComponentRegistry()
    owner = FakeOwner("answer")
    registry.replace_plugin("a.one", [tool("a.one", "x", timeout_ms=2500)], owner)
    tools = ToolRegistry()
    tools.register_provider(PluginToolProvider(registry, ComponentQueryService(registry)))
    result = await tools.invoke(ToolInvocation(tool_name="x", arguments={"q": "1"}))
    assert result.content == "answer"
    assert owner.calls == [("a.one", "x", {"q": "1", "stream_id": ""}, 2.5)]


async def test_a_call_meeting_a_draining_runner_moves_to_the_new_owner() -> None:
    registry = ComponentRegistry()
    old, new = FakeOwner(code="shutting_down"), FakeOwner("from new")
    registry.replace_plugin("a.one", [tool("a.one", "x")], old)
    provider = PluginToolProvider(registry, ComponentQueryService(registry))

    async def swap_then_answer(*args: Any) -> ToolExecutionResult:
        registry.replace_plugin("a.one", [tool("a.one", "x")], new)
        return ToolExecutionResult.failure("x", "going away", "shutting_down")

    old.invoke = swap_then_answer  # type: ignore[method-assign]
    result = await provider.invoke(ToolInvocation(tool_name="x", arguments={}))
    assert result.content == "from new"


async def test_registry_listeners_hear_about_plugin_changes() -> None:
    registry = ComponentRegistry()
    tools = ToolRegistry()
    tools.register_provider(PluginToolProvider(registry, ComponentQueryService(registry)))
    heard: list[str] = []
    tools.add_listener(heard.append)
    registry.replace_plugin("a.one", [tool("a.one", "x")], FakeOwner())
    registry.remove_plugin("a.one")
    assert heard == ["plugins", "plugins"]
    assert not await tools.has_tool("x")
