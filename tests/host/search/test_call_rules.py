"""tool_search held to the seeds: limits, sessions, call-time discovery, the catalog, hints."""

from __future__ import annotations

from typing import Any

import pytest

from plughost.search.service import TOOL_SEARCH_NAME
from plughost.search.strategies import OpenAIStrategy
from plughost.tools.messages import context_count
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import ToolExecutionContext, ToolInvocation
from tests.host.search.test_service import CHAT, PLUGIN_TOOLS, _call_search, _setup, _tool


def _context(session_id: str) -> ToolExecutionContext:
    return ToolExecutionContext(session_id=session_id, group_id="g1", is_group_chat=True)


async def _call(registry: ToolRegistry, name: str, session_id: str = "s1", **arguments: Any) -> Any:
    invocation = ToolInvocation(tool_name=name, arguments=arguments)
    return await registry.invoke(invocation, _context(session_id))


@pytest.mark.parametrize("limit", [100, 0, -3])
async def test_an_out_of_range_limit_is_clamped_through_the_registry_and_directly(
    limit: int,
) -> None:
    registry, _, service = await _setup()
    through_registry = await _call_search(registry, {"query": "filler placeholder", "limit": limit})
    assert through_registry.success, through_registry.error_message
    expected = 20 if limit > 20 else 1
    assert len(through_registry.structured_content["matches"]) == expected
    direct = await service.search("filler placeholder", limit, CHAT)
    assert len(direct.matches) == expected


async def test_a_search_without_a_session_records_nothing_for_anyone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry, _, service = await _setup()
    found = await _call_search(registry, {"query": "select:send_email"}, session_id="")
    assert found.success
    assert "session id" in caplog.text
    assert service.export_state()["sessions"] == {}
    assert service.discovery("").names == ()
    assert "send_email" not in str(await service.definitions(CHAT, ""))


async def test_an_undiscovered_deferred_tool_is_refused_until_tool_search_finds_it() -> None:
    registry, _, service = await _setup()
    refused = await _call(registry, "send_email", text="hi")
    assert refused.error_code == "tool_not_discovered"
    assert "call tool_search first" in refused.error_message
    assert "select:send_email" in refused.error_message

    await _call_search(registry, {"query": "select:send_email"}, session_id="s1")
    assert (await _call(registry, "send_email", text="hi")).success
    other = await _call(registry, "send_email", session_id="s2", text="hi")
    assert other.error_code == "tool_not_discovered"
    assert (await _call(registry, "reply", session_id="s2", text="hi")).success  # core
    trusted = await registry.invoke(
        ToolInvocation(tool_name="send_email", arguments={"text": "x"}),
        _context("s2"),
        trusted=True,
    )
    assert trusted.success

    registry.enforce_visibility = False
    assert (await _call(registry, "send_email", session_id="s2", text="hi")).success
    registry.enforce_visibility = True
    service.close()
    assert (await _call(registry, "send_email", session_id="s2", text="hi")).success


async def test_a_caller_shown_every_tool_skips_discovery_but_never_reaches_hidden_ones() -> None:
    registry, _, _ = await _setup()
    send = ToolInvocation(tool_name="send_email", arguments={"text": "x"})
    assert (await registry.invoke(send, _context("s9"), listed_all=True)).success
    secret = ToolInvocation(tool_name="secret_admin", arguments={"text": "x"})
    hidden = await registry.invoke(secret, _context("s9"), listed_all=True)
    assert hidden.error_code == "tool_not_visible"


async def test_deferred_tools_run_freely_below_the_threshold_and_with_server_side_search() -> None:
    small, _, _ = await _setup(PLUGIN_TOOLS[:4])
    assert (await _call(small, "send_email", text="hi")).success
    registry, _, _ = await _setup(strategy=OpenAIStrategy(execution="server"))
    assert (await _call(registry, "send_email", text="hi")).success


async def test_the_catalog_cannot_be_changed_after_it_is_built() -> None:
    _, _, service = await _setup()
    catalog = await service.catalog(CHAT)
    core = catalog.core
    with pytest.raises(AttributeError, match="immutable"):
        catalog.core = ()  # type: ignore[misc]
    with pytest.raises(AttributeError, match="immutable"):
        del catalog.deferred
    assert catalog.core == core
    assert await service.catalog(CHAT) is catalog


async def test_the_tool_hint_names_what_is_left_to_discover_and_stays_out_of_the_count() -> None:
    registry, _, service = await _setup(PLUGIN_TOOLS[:6], threshold=0)
    hint = await service.tool_hint(CHAT, "s1")
    assert hint is not None
    assert hint.names == ("get_weather", "mute_member", "send_email", "weather_forecast")
    assert TOOL_SEARCH_NAME in hint.text and "send_email" in hint.text
    await _call_search(registry, {"query": "select:send_email"})
    after = await service.tool_hint(CHAT, "s1")
    assert after is not None and "send_email" not in after.names

    message = after.message("anthropic")
    assert message["role"] == "user" and message["content"][0]["text"] == after.text
    assert message.source == "tool_hint" and not message.count_in_context
    history = [{"role": "user", "content": "hi"}, message, after.message("openai")]
    assert context_count(history) == 1


async def test_many_undiscovered_tools_are_hinted_by_category() -> None:
    specs = [_tool(f"w_{i:02d}", plugin="tests.weather") for i in range(20)]
    specs += [_tool(f"m_{i:02d}", plugin="mail") for i in range(15)]
    _, _, service = await _setup(specs, threshold=0)
    hint = await service.tool_hint(CHAT, "s1")
    assert hint is not None
    assert hint.names == ()
    assert hint.categories == (("mail", 15), ("weather", 20))
    assert "mail (15)" in hint.text
    assert await (await _setup(specs))[2].tool_hint(CHAT, "s1") is not None
    assert await (await _setup(specs[:3]))[2].tool_hint(CHAT, "s1") is None  # not searching
