"""The plugin author's test kit: real runner processes over a real socket, one plugin each."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from plughost_sdk import PluginError, PluginLoadError
from plughost_sdk.pytest_plugin import HarnessFactory, plugin_folder_of
from plughost_sdk.testing import PluginTestHarness
from tests.conftest import EXAMPLES, TEST_PLUGINS

ECHO = TEST_PLUGINS / "echo"
NOTIFIER = EXAMPLES / "notifier"
CALLER = TEST_PLUGINS / "caller"
CHAT_GUARD = EXAMPLES / "chat_guard"

# A harness is shared by the tests that only call it: they set no stub or config on it
# and leave no call running, so each sees the harness as freshly started, in any order.
# A test that stubs, configures, waits for the close or ends a call early starts its own.
on_shared = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def echo() -> AsyncIterator[PluginTestHarness]:
    async with PluginTestHarness(ECHO) as harness:
        yield harness


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chat_guard() -> AsyncIterator[PluginTestHarness]:
    async with PluginTestHarness(CHAT_GUARD) as harness:
        yield harness


@on_shared
async def test_a_tool_runs_in_a_runner_process_and_its_result_comes_back(
    echo: PluginTestHarness,
) -> None:
    result = await echo.call("echo", {"text": "hi"}, stream_id="chat-1")

    assert result.success, result.error_message
    assert result.content == "hi"
    assert result.structured_content["stream_id"] == "chat-1"
    assert result.structured_content["pid"] != os.getpid()
    assert echo.plugin_id == "tests.echo"
    assert "echo" in [tool["name"] for tool in echo.tools]
    assert echo.load_failure is None


async def test_ctx_send_text_is_captured_with_its_stream() -> None:
    async with PluginTestHarness(NOTIFIER) as harness:
        result = await harness.call("notify", {"text": "deploy done"}, stream_id="ops")

    assert result.success, result.error_message
    assert [(m.capability, m.stream_id, m.text) for m in harness.sent] == [
        ("send.text", "ops", "[bot] deploy done")
    ]


async def test_injected_config_is_merged_over_config_toml() -> None:
    config = {"notify": {"prefix": ">> "}}
    async with PluginTestHarness(NOTIFIER, config=config) as harness:
        await harness.call("notify", {"text": "x" * 300}, stream_id="ops")

    assert harness.config == {"notify": {"prefix": ">> ", "max_length": 200}}
    assert harness.sent[0].text is not None
    assert harness.sent[0].text.startswith(">> xxx")
    assert len(harness.sent[0].text) == 200


async def test_a_stubbed_capability_answers_the_plugin_with_the_stub_s_value() -> None:
    seen: list[dict[str, Any]] = []

    async def store_get(**args: Any) -> int:
        seen.append(args)
        return 42

    async with PluginTestHarness(ECHO, capabilities={"store.get": store_get}) as harness:
        result = await harness.call("use_capability", {"name": "store.get"})

    assert result.success, result.error_message
    assert result.structured_content["value"] == 42
    assert seen == [{"value": 1}]


async def test_a_group_stub_set_after_start_answers_every_capability_of_the_group() -> None:
    async with PluginTestHarness(ECHO) as harness:
        harness.stub_capability("store.*", lambda value: value + 1)
        result = await harness.call("use_capability", {"name": "store.put"})

    assert result.structured_content["value"] == 2


@on_shared
async def test_an_unstubbed_capability_fails_with_a_message_saying_how_to_stub_it(
    echo: PluginTestHarness,
) -> None:
    result = await echo.call("use_capability", {"name": "store.get"})

    assert not result.success
    assert "capability store.get is not provided by this test harness" in result.error_message
    assert "harness.stub_capability('store.get'" in result.error_message


async def test_a_capability_the_manifest_does_not_list_is_denied_even_when_stubbed() -> None:
    async with PluginTestHarness(ECHO, capabilities={"db.query": lambda **_: []}) as harness:
        result = await harness.call("use_capability", {"name": "db.query"})

    assert not result.success
    assert "may not call db.query" in result.error_message
    assert "_manifest.json" in result.error_message


async def test_a_stub_that_raises_reaches_the_plugin_as_a_failed_capability() -> None:
    def broken(**_: Any) -> None:
        raise ConnectionError("store is down")

    async with PluginTestHarness(ECHO, capabilities={"store.get": broken}) as harness:
        result = await harness.call("use_capability", {"name": "store.get"})

    assert not result.success
    assert "ConnectionError: store is down" in result.error_message


async def test_ctx_call_tool_runs_the_plugins_own_tools_as_the_host_does() -> None:
    async with PluginTestHarness(CALLER) as harness:
        own = await harness.call("relay", {"name": "shout_back", "arguments": {"text": "hi"}})
        deep = await harness.call("recurse", {"level": 0})

    assert own.structured_content["content"] == "HI"
    assert own.structured_content["ok"] is True
    assert deep.content.startswith("level 0 -> level 1 -> level 2 -> level 3 -> refused at level 4")


async def test_ctx_call_tool_for_another_tool_is_denied_until_tools_call_is_stubbed() -> None:
    async with PluginTestHarness(CALLER) as harness:
        denied = await harness.call("relay", {"name": "echo", "arguments": {"text": "hi"}})
        harness.stub_capability("tools.call", lambda name, arguments, timeout_ms: arguments)
        faked = await harness.call("relay", {"name": "echo", "arguments": {"content": "hi"}})

    assert denied.structured_content["code"] == "capability_denied"
    assert "stub 'tools.call'" in denied.structured_content["reason"]
    assert faked.structured_content["content"] == "hi"
    assert faked.structured_content["ok"] is True


async def test_a_plugin_whose_on_load_raises_is_reported_with_stage_file_and_line() -> None:
    async with PluginTestHarness(TEST_PLUGINS / "raise_on_load") as harness:
        failure = harness.load_failure
        with pytest.raises(PluginLoadError, match="database unreachable"):
            await harness.call("anything")

    assert failure is not None
    assert failure.stage == "on_load"
    assert failure.file == str(TEST_PLUGINS / "raise_on_load" / "plugin.py")
    assert failure.line == 8
    assert "ValueError: database unreachable" in failure.reason
    assert "Traceback" in failure.traceback


async def test_a_syntax_error_is_reported_at_its_line() -> None:
    async with PluginTestHarness(TEST_PLUGINS / "syntax_error") as harness:
        failure = harness.load_failure

    assert failure is not None
    assert (failure.stage, failure.line) == ("import", 4)
    assert failure.file.endswith("plugin.py")


async def test_an_invalid_manifest_is_reported_without_starting_a_runner() -> None:
    async with PluginTestHarness(TEST_PLUGINS / "bad_manifest") as harness:
        failure = harness.load_failure

    assert failure is not None
    assert failure.stage == "manifest"
    assert failure.file.endswith("_manifest.json")
    assert "field 'version' is required" in failure.reason


async def test_logs_and_prints_are_collected_by_the_time_the_harness_closes() -> None:
    async with PluginTestHarness(ECHO) as harness:
        await harness.call("shout")

    messages = [record.message for record in harness.logs]
    assert "hello from print" in messages
    assert "hello from the logger" in messages


@on_shared
async def test_a_tool_error_is_a_failed_result_with_the_message_for_the_model(
    echo: PluginTestHarness,
) -> None:
    result = await echo.call("fail", {"message": "try a smaller city"})

    assert (result.success, result.error_code) == (False, "tool_error")
    assert result.error_message == "try a smaller city"


async def test_a_call_past_its_deadline_is_a_timeout_result() -> None:
    async with PluginTestHarness(ECHO) as harness:
        result = await harness.call("sleep", {"seconds": 30}, timeout=0.3)

    assert (result.success, result.error_code) == (False, "timeout")


async def test_a_runner_that_dies_mid_call_gives_a_plugin_crashed_result() -> None:
    async with PluginTestHarness(TEST_PLUGINS / "faulty") as harness:
        result = await harness.call("exit_mid_call")

    assert (result.success, result.error_code) == (False, "plugin_crashed")
    assert "exited with code 13" in result.error_message


async def test_a_legacy_action_receives_action_data_as_from_the_host() -> None:
    async with PluginTestHarness(EXAMPLES / "legacy_greeter") as harness:
        result = await harness.call("greet", {"target": "Ann"})

    assert result.success, result.error_message
    assert result.content == "Hello, Ann! Nice to see you."


@on_shared
async def test_unknown_tools_and_arguments_the_host_would_refuse_raise_value_error(
    echo: PluginTestHarness,
) -> None:
    with pytest.raises(ValueError, match="has no tool 'nope'"):
        await echo.call("nope")
    with pytest.raises(ValueError, match="missing required 'text'"):
        await echo.call("echo", {})
    with pytest.raises(ValueError, match=r"unknown 'txt' \(it takes 'text'\)"):
        await echo.call("echo", {"text": "a", "txt": "b"})


async def test_update_config_runs_on_config_update_and_a_rejected_one_keeps_the_old() -> None:
    async with PluginTestHarness(NOTIFIER) as harness:
        await harness.update_config({"notify": {"prefix": "! ", "max_length": 50}})
        await harness.call("notify", {"text": "one"}, stream_id="s")
        with pytest.raises(PluginError, match="max_length"):
            await harness.update_config({"notify": {"max_length": 1}})
        await harness.call("notify", {"text": "two"}, stream_id="s")

    assert [m.text for m in harness.sent] == ["! one", "! two"]
    assert any("config updated" in record.message for record in harness.logs)


async def test_the_fixture_tests_the_given_folder_with_data_under_tmp_path(
    plugin_harness: HarnessFactory, tmp_path: Path
) -> None:
    async with plugin_harness(ECHO) as harness:
        assert harness.data_dir.is_relative_to(tmp_path)
        result = await harness.call("echo", {"text": "from the fixture"})

    assert result.content == "from the fixture"


def test_the_fixture_finds_the_plugin_folder_above_a_test_file(tmp_path: Path) -> None:
    plugin = tmp_path / "weather"
    (plugin / "tests").mkdir(parents=True)
    (plugin / "_manifest.json").write_text("{}", encoding="utf-8")

    assert plugin_folder_of(plugin / "tests" / "test_plugin.py") == plugin
    with pytest.raises(ValueError, match="not inside a plugin folder"):
        plugin_folder_of(tmp_path / "elsewhere" / "test_x.py")


def test_importing_the_test_kit_does_not_import_pyzmq() -> None:
    code = "import sys, plughost_sdk.testing; print('zmq' in sys.modules)"
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )

    assert output.stdout.strip() == "False"


@on_shared
async def test_a_command_and_a_hook_handler_run_in_the_harness_as_the_host_runs_them(
    chat_guard: PluginTestHarness,
) -> None:
    command = await chat_guard.invoke_component(
        "COMMAND", "weather", {"text": "/weather Oslo", "matched_groups": {"city": "Oslo"}}
    )
    hook = await chat_guard.invoke_component(
        "HOOK_HANDLER", "planner_brevity", {"items": [], "session_id": "s1"}
    )
    kinds = sorted(c["type"] for c in chat_guard.components)

    assert command == {
        "success": True,
        "response": "Oslo: snow, -3 °C",
        "intercept": True,
        "error": "",
    }
    assert hook["modified_kwargs"]["items"][-1]["content"] == "Answer in one or two sentences."
    assert kinds == ["COMMAND", "EVENT_HANDLER", "HOOK_HANDLER"]


@on_shared
async def test_invoking_a_component_the_plugin_lacks_lists_what_it_has(
    chat_guard: PluginTestHarness,
) -> None:
    with pytest.raises(ValueError, match=r"has no COMMAND 'nope'; its components: .*weather"):
        await chat_guard.invoke_component("COMMAND", "nope")


async def test_the_harness_records_progress_reports_in_order() -> None:
    async with PluginTestHarness(TEST_PLUGINS / "progress") as harness:
        result = await harness.call("count", {"steps": 2})

    assert result.success
    assert harness.progress == [(1.0, 2.0, "step 1 of 2"), (2.0, 2.0, "step 2 of 2")]


DEFAULTED = """
from plughost_sdk import Plugin, Tool
from plughost_sdk.types import ToolParameterInfo, ToolParamType


class Paged(Plugin):
    @Tool(
        "list_items",
        brief_description="List items, a page at a time",
        parameters=[
            ToolParameterInfo(
                name="limit", param_type=ToolParamType.INTEGER, description="How many",
                required=False, default=5,
            ),
        ],
    )
    async def list_items(self, limit, **kwargs):  # no Python default: the declared one applies
        return {"content": str(limit)}


def create_plugin():
    return Paged()
"""


async def test_the_test_kit_fills_declared_defaults_as_the_host_does(tmp_path: Path) -> None:
    folder = tmp_path / "paged"
    folder.mkdir()
    (folder / "plugin.py").write_text(DEFAULTED)
    manifest = (
        '{"manifest_version": 2, "id": "tests.paged", "version": "1.0.0", "name": "paged", '
        '"author": {"name": "tests"}}'
    )
    (folder / "_manifest.json").write_text(manifest)
    async with PluginTestHarness(folder) as harness:
        default = await harness.call("list_items", {})
        given = await harness.call("list_items", {"limit": 2})

    assert default.success, default.error_message
    assert (default.content, given.content) == ("5", "2")
