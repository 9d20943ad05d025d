"""self.ctx: config view, confined paths, and capability calls through a bridge."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from plughost_sdk import (
    CapabilityError,
    PluginConfig,
    PluginContext,
    PluginPaths,
    ToolExecutionResult,
    wire,
)

from .fakes import FakeBridge

CONFIG = {
    "notify": {"prefix": "[bot] ", "max_length": 200, "limits": {"burst": 3}},
    "enabled": True,
    "empty": None,
}


# --- PluginConfig --------------------------------------------------------------------------


def test_config_get_reads_dotted_keys() -> None:
    config = PluginConfig(CONFIG, version="v1")

    assert config.get("notify.prefix") == "[bot] "
    assert config.get("notify.limits.burst") == 3
    assert config.get("enabled") is True
    assert config.get("notify") == CONFIG["notify"]
    assert config.version == "v1"


def test_config_get_returns_the_default_for_missing_keys() -> None:
    config = PluginConfig(CONFIG)

    assert config.get("notify.suffix") is None
    assert config.get("notify.suffix", "!") == "!"
    assert config.get("missing.section.key", 7) == 7
    assert config.get("notify.prefix.deeper", "d") == "d"


def test_config_get_keeps_a_present_none_value() -> None:
    config = PluginConfig(CONFIG)

    assert config.get("empty", "default") is None
    assert "empty" in config


def test_config_contains_checks_dotted_keys() -> None:
    config = PluginConfig(CONFIG)

    assert "notify.max_length" in config
    assert "notify.limits" in config
    assert "notify.min_length" not in config
    assert "nothing" not in config
    assert 3 not in config


def test_config_getitem_raises_key_error_for_missing_keys() -> None:
    config = PluginConfig(CONFIG)

    assert config["notify.max_length"] == 200
    with pytest.raises(KeyError, match=r"notify\.nope"):
        config["notify.nope"]


def test_config_get_all_is_a_copy() -> None:
    config = PluginConfig(CONFIG)

    snapshot = config.get_all()
    snapshot["enabled"] = False

    assert config.get("enabled") is True


def test_empty_config_has_nothing() -> None:
    config = PluginConfig()

    assert config.get_all() == {}
    assert config.get("a.b", "x") == "x"
    assert config.version == ""


# --- PluginPaths ---------------------------------------------------------------------------


@pytest.fixture
def paths(tmp_path: Path) -> PluginPaths:
    return PluginPaths(tmp_path / "data" / "p", tmp_path / "temp" / "p")


def test_paths_resolve_inside_their_directories_and_create_them(
    paths: PluginPaths, tmp_path: Path
) -> None:
    target = paths.data("cache/index.json")

    assert target == (tmp_path / "data" / "p" / "cache" / "index.json").resolve()
    assert (tmp_path / "data" / "p").is_dir()
    assert paths.temp() == (tmp_path / "temp" / "p").resolve()
    assert paths.temp("a/../b") == (tmp_path / "temp" / "p" / "b").resolve()


def test_absolute_path_inside_the_directory_is_accepted(paths: PluginPaths) -> None:
    inside = paths.data_dir.resolve() / "notes.txt"

    assert paths.data(inside) == inside


@pytest.mark.parametrize("escape", ["../x", "../../etc/passwd", "sub/../../x", "/etc/passwd"])
def test_paths_that_escape_the_directory_are_rejected(paths: PluginPaths, escape: str) -> None:
    with pytest.raises(ValueError, match="escapes the plugin's directory"):
        paths.data(escape)
    with pytest.raises(ValueError, match="escapes the plugin's directory"):
        paths.temp(escape)


def test_sibling_directory_with_a_shared_prefix_is_rejected(
    paths: PluginPaths, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match="escapes"):
        paths.data(tmp_path / "data" / "p-other" / "x")


def test_symlink_pointing_outside_is_rejected(paths: PluginPaths, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    paths.data_dir.mkdir(parents=True)
    os.symlink(outside, paths.data_dir / "link")

    with pytest.raises(ValueError, match="escapes"):
        paths.data("link/secret.txt")


# --- capabilities --------------------------------------------------------------------------


async def test_send_text_routes_through_the_bridge_with_the_plugin_id() -> None:
    bridge = FakeBridge(answers={"send.text": {"sent": True}})
    ctx = PluginContext("plughost.example-notifier", bridge)

    answer = await ctx.send.text("Hello!", "stream-1")

    assert answer == {"sent": True}
    assert bridge.calls == [
        (
            "plughost.example-notifier",
            "send.text",
            {"text": "Hello!", "stream_id": "stream-1"},
            None,
        )
    ]


async def test_send_text_passes_extra_options_through() -> None:
    bridge = FakeBridge()
    ctx = PluginContext("p.q", bridge)

    await ctx.send.text("hi", "s", reply_to="m1", return_details=True)

    assert bridge.calls[0][2] == {
        "text": "hi",
        "stream_id": "s",
        "reply_to": "m1",
        "return_details": True,
    }


async def test_send_image_and_custom_route_through_the_bridge() -> None:
    bridge = FakeBridge()
    ctx = PluginContext("p.q", bridge)

    await ctx.send.image(b"\x89PNG", "s")
    await ctx.send.custom("card", {"title": "t"}, "s")

    assert [call[1:3] for call in bridge.calls] == [
        ("send.image", {"image_base64": "iVBORw==", "stream_id": "s"}),
        ("send.custom", {"message_type": "card", "content": {"title": "t"}, "stream_id": "s"}),
    ]


async def test_any_group_and_name_become_a_capability_call() -> None:
    bridge = FakeBridge(answers={"db.query": [{"id": 1}]})
    ctx = PluginContext("p.q", bridge)

    rows = await ctx.db.query(table="notes", limit=5)
    await ctx.send.emoji(emotion="happy", stream_id="s")
    await ctx.translate.text(text="hi", timeout_ms=1500)

    assert rows == [{"id": 1}]
    assert bridge.calls == [
        ("p.q", "db.query", {"table": "notes", "limit": 5}, None),
        ("p.q", "send.emoji", {"emotion": "happy", "stream_id": "s"}, None),
        ("p.q", "translate.text", {"text": "hi"}, 1500),
    ]


async def test_capability_group_by_name_is_the_same_as_the_attribute() -> None:
    bridge = FakeBridge()
    ctx = PluginContext("p.q", bridge)

    await ctx.capability("knowledge").search(query="x")

    assert bridge.calls == [("p.q", "knowledge.search", {"query": "x"}, None)]


async def test_call_capability_routes_any_full_name() -> None:
    bridge = FakeBridge(answers={"person.get_value": "Ann"})
    ctx = PluginContext("p.q", bridge)

    value = await ctx.call_capability("person.get_value", timeout_ms=200, key="name")

    assert value == "Ann"
    assert bridge.calls == [("p.q", "person.get_value", {"key": "name"}, 200)]


async def test_call_capability_without_a_dot_is_a_caller_mistake() -> None:
    bridge = FakeBridge()
    ctx = PluginContext("p.q", bridge)

    with pytest.raises(ValueError, match=r"'group\.name'"):
        await ctx.call_capability("send")
    assert bridge.calls == []


async def test_capability_errors_from_the_bridge_reach_the_plugin() -> None:
    denied = CapabilityError("capability_denied", "send.text is not in the manifest")
    ctx = PluginContext("p.q", FakeBridge(answers={"send.text": denied}))

    with pytest.raises(CapabilityError) as caught:
        await ctx.send.text("hi", "s")

    assert caught.value.code == "capability_denied"


async def test_call_tool_is_the_tools_call_capability_and_rebuilds_the_result() -> None:
    answer = wire.result_to_wire(ToolExecutionResult(tool_name="echo", content="hi"))
    bridge = FakeBridge(answers={"tools.call": answer})
    ctx = PluginContext("p.q", bridge)

    result = await ctx.call_tool("echo", {"text": "hi"}, timeout_ms=500)

    assert result == ToolExecutionResult(tool_name="echo", content="hi")
    assert bridge.calls == [
        ("p.q", "tools.call", {"name": "echo", "arguments": {"text": "hi"}, "timeout_ms": 500}, 500)
    ]


async def test_call_tool_passes_json_text_arguments_as_they_are() -> None:
    answer = wire.result_to_wire(ToolExecutionResult.failure("x", "no", "tool_not_found"))
    bridge = FakeBridge(answers={"tools.call": answer})

    result = await PluginContext("p.q", bridge).call_tool("x", '{"a": 1}')

    assert result.error_code == "tool_not_found"
    assert bridge.calls[0][2] == {"name": "x", "arguments": '{"a": 1}', "timeout_ms": None}


async def test_call_tool_refusals_reach_the_plugin_as_capability_errors() -> None:
    denied = CapabilityError("capability_denied", "plugin p.q may not call tool x")
    ctx = PluginContext("p.q", FakeBridge(answers={"tools.call": denied}))

    with pytest.raises(CapabilityError) as caught:
        await ctx.call_tool("x")

    assert caught.value.code == "capability_denied"


def test_private_attributes_are_not_capability_groups() -> None:
    ctx = PluginContext("p.q", FakeBridge())

    with pytest.raises(AttributeError):
        ctx._hidden  # noqa: B018
    with pytest.raises(AttributeError):
        ctx.send._hidden  # noqa: B018


def test_context_has_a_plugin_logger_and_defaults() -> None:
    ctx = PluginContext("p.q", FakeBridge())

    assert ctx.plugin_id == "p.q"
    assert isinstance(ctx.logger, logging.Logger)
    assert ctx.logger.name == "plugin.p.q"
    assert ctx.config.get_all() == {}
    assert ctx.paths is None


async def test_llm_generate_sends_a_conversation_and_returns_the_answer() -> None:
    answer = {"text": "4", "model": "m", "stop_reason": "endTurn"}
    bridge = FakeBridge(answers={"llm.generate": answer})
    ctx = PluginContext("p.q", bridge)

    reply = await ctx.llm.generate("2+2?", max_tokens=5, system_prompt="Be brief")

    assert reply == answer
    assert bridge.calls == [
        (
            "p.q",
            "llm.generate",
            {
                "messages": [{"role": "user", "content": "2+2?"}],
                "max_tokens": 5,
                "system_prompt": "Be brief",
            },
            None,
        )
    ]


async def test_elicit_and_resource_updated_are_capability_calls() -> None:
    bridge = FakeBridge(answers={"user.elicit": {"action": "decline", "content": None}})
    ctx = PluginContext("p.q", bridge)
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}

    reply = await ctx.elicit("Who are you?", schema, timeout_ms=2000)
    await ctx.resource_updated("notes://today")

    assert reply == {"action": "decline", "content": None}
    assert bridge.calls == [
        ("p.q", "user.elicit", {"message": "Who are you?", "schema": schema}, 2000),
        ("p.q", "resources.updated", {"uri": "notes://today"}, None),
    ]
