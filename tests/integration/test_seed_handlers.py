"""Handlers written as the MaiBot tool pages show them, served by real runners."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from plughost.host import PluginHost
from plughost.search.service import ToolSearchService
from plughost.settings import HostSettings
from plughost.tools.builtin import BuiltinToolProvider
from plughost_sdk.models import ToolExecutionContext, ToolInvocation
from tests.conftest import TEST_PLUGINS, HostFactory
from tests.waiting import wait_until

SEEDS = TEST_PLUGINS / "seeds"
ALPHA = TEST_PLUGINS / "alpha"
BETA = TEST_PLUGINS / "beta"


@pytest.fixture
async def host(make_host: HostFactory) -> AsyncIterator[PluginHost]:
    async with make_host([SEEDS]) as started:
        yield started


async def test_the_invocations_own_fields_reach_the_handler_and_fill_what_the_context_leaves_empty(
    host: PluginHost,
) -> None:
    invocation = ToolInvocation(
        tool_name="context_echo",
        call_id="call_1",
        session_id="s-inv",
        stream_id="chat-inv",
        reasoning="the user asked",
        metadata={"anchor": "m1"},
    )
    alone = await host.tools.invoke(invocation)
    assert alone.success, alone.error_message
    assert alone.structured_content["received"] == {
        "session_id": "s-inv",
        "stream_id": "chat-inv",
        "reasoning": "the user asked",
        "metadata": {"anchor": "m1"},
        "call_id": "call_1",
    }

    context = ToolExecutionContext(session_id="s-ctx", stream_id="", metadata={"trace": "t"})
    merged = await host.tools.invoke(invocation, context)
    assert merged.structured_content["received"] == {
        "session_id": "s-inv",
        "stream_id": "chat-inv",
        "reasoning": "the user asked",
        "metadata": {"trace": "t", "anchor": "m1"},
        "call_id": "call_1",
    }

    bare = await host.invoke("context_echo", {})
    assert bare.structured_content["received"] == {"stream_id": ""}


async def test_a_declared_default_is_filled_before_the_handler_runs(host: PluginHost) -> None:
    result = await host.invoke("search_web", {"query": "weather"})
    assert result.success, result.error_message
    assert result.structured_content == {"query": "weather", "limit": 5}


async def test_a_dicts_post_history_messages_reach_the_result(host: PluginHost) -> None:
    result = await host.invoke("with_followup", {})
    assert result.success, result.error_message
    assert result.content == "noted"
    assert result.post_history_messages == [{"role": "user", "content": "remember the note"}]
    assert "post_history_messages" not in (result.structured_content or {})


async def test_an_empty_result_reaches_the_model_as_a_placeholder_naming_the_tool(
    host: PluginHost,
) -> None:
    result = await host.invoke("nothing", {})
    assert result.success
    assert result.get_history_content() == "(nothing completed with no output)"


async def test_a_hidden_tool_is_refused_to_the_model_and_runs_for_a_trusted_caller(
    host: PluginHost,
) -> None:
    refused = await host.invoke("admin_reset", {})
    assert refused.error_code == "tool_not_visible"
    assert "hidden" in refused.error_message
    direct = await host.tools.invoke(ToolInvocation(tool_name="admin_reset"), trusted=True)
    assert direct.success and direct.content == "reset"


async def test_a_deferred_plugin_tool_runs_only_once_its_conversation_has_found_it(
    host: PluginHost,
) -> None:
    search = ToolSearchService(host.tools, threshold=0)
    host.tools.register_provider(BuiltinToolProvider([search.tool()]))
    try:
        chat = ToolExecutionContext(session_id="s1")
        refused = await host.invoke("search_web", {"query": "x"}, chat)
        assert refused.error_code == "tool_not_discovered"
        assert "call tool_search first" in refused.error_message
        found = await host.invoke("tool_search", {"query": "select:search_web"}, chat)
        assert found.success, found.error_message
        assert (await host.invoke("search_web", {"query": "x"}, chat)).success
        other = ToolExecutionContext(session_id="s2")
        assert (await host.invoke("search_web", {"query": "x"}, other)).error_code == (
            "tool_not_discovered"
        )
    finally:
        search.close()


async def test_time_sleep_in_an_async_handler_finishes_and_the_runner_survives(
    host: PluginHost, caplog: pytest.LogCaptureFixture
) -> None:
    runner = host.runner_for("tests.seeds")
    assert runner is not None
    pid = runner.pid
    silence = host.settings.runner.heartbeat_interval * host.settings.runner.heartbeat_misses
    seconds = round(silence * 3, 2)  # three times what the heartbeat tolerates today

    result = await host.invoke("nap", {"seconds": seconds})

    assert result.success, result.error_message
    assert result.content == f"napped {seconds}"
    assert runner.pid == pid and runner.state.value == "ready"
    assert not [e for e in host.events.history() if e.kind.value == "runner.crashed"]

    def blocked() -> list[str]:  # the runner's own warning, forwarded with its logs
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        return [w for w in warnings if "blocked the event loop" in w]

    await wait_until(lambda: bool(blocked()), timeout=5, what="the blocking warning")
    assert "tests.seeds" in blocked()[0] and "nap" in blocked()[0]
    assert "asyncio.to_thread" in blocked()[0]
    assert (await host.invoke("context_echo", {})).success


async def test_the_first_plugin_keeps_a_shared_name_across_reloads_and_the_second_is_qualified(
    make_host: HostFactory, caplog: pytest.LogCaptureFixture
) -> None:
    async with make_host([ALPHA, BETA]) as host:
        names = {spec.name: spec.tool_id for spec in await host.tools.list_tools()}
        assert names["lookup"] == "plugin:tests.alpha:lookup"
        assert names["beta_lookup"] == "plugin:tests.beta:lookup"
        assert (await host.invoke("lookup", {})).content == "alpha"
        assert (await host.invoke("beta_lookup", {})).content == "beta"
        assert any("beta_lookup" in r.getMessage() for r in caplog.records if r.levelno >= 30)

        assert await host.reload_plugin("tests.alpha")
        assert await host.reload_plugin("tests.beta")
        assert (await host.invoke("lookup", {})).content == "alpha"
        assert (await host.invoke("beta_lookup", {})).content == "beta"


def test_the_operator_switch_makes_the_hosts_registry_lenient(tmp_path: Path) -> None:
    strict = PluginHost([], settings=HostSettings(data_dir=tmp_path))
    lenient = PluginHost(
        [], settings=HostSettings(data_dir=tmp_path, enforce_tool_visibility=False)
    )
    assert strict.tools.enforce_visibility and not lenient.tools.enforce_visibility


def test_plughost_tools_shows_both_tools_that_want_one_name() -> None:
    command = [sys.executable, "-m", "plughost", "tools", "--json"]
    done = subprocess.run(
        [*command, "--plugins", str(ALPHA), "--plugins", str(BETA)],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    tools = {tool["name"]: tool["source"] for tool in json.loads(done.stdout)["tools"]}
    assert tools == {"lookup": "tests.alpha", "beta_lookup": "tests.beta"}


def test_plughost_call_is_the_operator_and_reaches_a_hidden_tool() -> None:
    command = [sys.executable, "-m", "plughost", "call", "admin_reset", "--json"]
    done = subprocess.run(
        [*command, "--plugins", str(SEEDS)], capture_output=True, text=True, timeout=90, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["content"] == "reset"
