"""Plugins calling tools through ctx.call_tool, with real runners: grants, refusals, depth."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from plughost.host import PluginHost
from tests.conftest import TEST_PLUGINS, HostFactory, fast_settings

ECHO = TEST_PLUGINS / "echo"
CALLER = TEST_PLUGINS / "caller"


async def _relay(host: PluginHost, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """What the caller plugin saw when it called ``name``."""
    result = await host.invoke("relay", {"name": name, "arguments": arguments})
    assert result.success, result.error_message
    seen: dict[str, Any] = result.structured_content
    return seen


async def test_calling_another_plugins_tool_without_a_grant_is_refused_with_the_fix(
    make_host: HostFactory,
) -> None:
    async with make_host([ECHO, CALLER]) as host:
        seen = await _relay(host, "echo", {"text": "hi"})

    assert seen["code"] == "capability_denied"
    assert "plugin tests.caller may not call tool echo" in seen["reason"]
    assert "[host.tool_grants]" in seen["reason"]
    assert '"tests.caller" = ["echo"]' in seen["reason"]


async def test_a_granted_tool_of_another_plugin_answers_the_caller(
    make_host: HostFactory, tmp_path: Path
) -> None:
    grants = {"tests.caller": ["tests.echo.echo"]}
    settings = fast_settings(tmp_path).model_copy(update={"tool_grants": grants})
    async with make_host([ECHO, CALLER], settings) as host:
        seen = await _relay(host, "echo", {"text": "hi"})

    assert seen == {"content": "hi", "ok": True, "code": None, "reason": ""}


async def test_a_grant_added_while_running_applies_to_the_next_call(
    make_host: HostFactory,
) -> None:
    async with make_host([ECHO, CALLER]) as host:
        before = await _relay(host, "echo", {"text": "one"})
        host.settings.tool_grants["tests.caller"] = ["tests.echo.*"]
        after = await _relay(host, "echo", {"text": "two"})

    assert before["code"] == "capability_denied"
    assert after["content"] == "two"


async def test_a_plugin_calls_its_own_tools_without_a_grant(make_host: HostFactory) -> None:
    async with make_host([CALLER]) as host:
        seen = await _relay(host, "shout_back", {"text": "hi"})

    assert seen["content"] == "HI"
    assert seen["ok"] is True


async def test_a_plugin_whose_manifest_lacks_tools_call_is_denied(make_host: HostFactory) -> None:
    async with make_host([ECHO, CALLER]) as host:
        host.settings.tool_grants["tests.echo"] = ["*"]
        result = await host.invoke("use_capability", {"name": "tools.call"})

    assert not result.success
    assert "may not call tools.call" in result.error_message
    assert "_manifest.json" in result.error_message


async def test_an_unknown_tool_with_a_grant_is_tool_not_found(make_host: HostFactory) -> None:
    async with make_host([ECHO, CALLER]) as host:
        host.settings.tool_grants["tests.caller"] = ["*"]
        seen = await _relay(host, "ecko", {"text": "hi"})

    assert seen["ok"] is False
    assert seen["code"] == "tool_not_found"
    assert "Did you mean: echo" in seen["reason"]


async def test_arguments_the_registry_refuses_never_reach_the_called_plugin(
    make_host: HostFactory,
) -> None:
    async with make_host([ECHO, CALLER]) as host:
        host.settings.tool_grants["tests.caller"] = ["tests.echo.*"]
        seen = await _relay(host, "echo", {"txt": "hi"})

    assert seen["code"] == "invalid_arguments"
    assert "missing required field 'text'" in seen["reason"]


async def test_a_tool_calling_itself_is_refused_at_the_depth_limit(
    make_host: HostFactory,
) -> None:
    async with make_host([CALLER]) as host:
        result = await host.invoke("recurse", {"level": 0})

    assert result.success, result.error_message
    assert result.content.startswith(
        "level 0 -> level 1 -> level 2 -> level 3 -> refused at level 4: capability_denied"
    )
    assert "deeper than 4 nested calls" in result.content
