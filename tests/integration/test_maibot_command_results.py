"""Differential: what a MaiBot plugin's commands return, read as MaiBot reads it.

The same fixture plugin runs under the real maibot-plugin-sdk with MaiBot's
runner and host emulated (:mod:`tests.maibot_commands`) and under plughost; for
each message the keyword arguments its own ``chat.command.after_execute`` hook
handler receives must be the ones MaiBot's bot would send, and the outcome the
embedder gets must say the same success, response and continuation.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TEST_PLUGINS, HostFactory
from tests.maibot_commands import after_execute_under_maibot
from tests.maibot_real import import_plugin

FIXTURE = TEST_PLUGINS / "maibot" / "dice_roller"
PLUGIN_ID = "community.dice-roller"


def _message(text: str, platform: str = "qq", local: bool | None = None) -> dict[str, Any]:
    extra = {} if local is None else {"is_local_operator": local}
    return {
        "message_id": f"m-{abs(hash(text)) % 1000}",
        "platform": platform,
        "session_id": f"{platform}:123",
        "processed_plain_text": text,
        "message_info": {
            "user_info": {"user_id": "42", "user_nickname": "小明"},
            "group_info": {"group_id": "123", "group_name": "测试群"},
            "additional_config": extra,
        },
    }


MESSAGES = [
    _message("/roll 2d6"),  # (True, text, True)
    _message("/roll"),  # (False, text): a success whose text is the list's str()
    _message("/coin"),  # (True, text), intercepting through its metadata
    _message("/dice help"),  # a string
    _message("/dice quiet"),  # None
    _message("/dice reset"),  # raises
    _message("/dice admin", platform="bot_console", local=True),
    _message("/dice admin", platform="qq", local=True),  # only the console is local
    _message("/dice admin", platform="bot_console"),
]


@pytest.fixture
def plugin_dir(tmp_path: Path) -> Path:
    """A copy of the fixture, outside the repository."""
    return Path(shutil.copytree(FIXTURE, tmp_path / "plugins" / "dice_roller"))


async def _under_maibot(folder: Path) -> list[dict[str, Any]]:
    plugin = import_plugin(folder, "real_maibot_dice_roller").create_plugin()
    assert type(plugin).__mro__[1].__module__ == "maibot_sdk.plugin"
    return [
        await after_execute_under_maibot(plugin, PLUGIN_ID, m["processed_plain_text"], m)
        for m in MESSAGES
    ]


async def test_command_results_reach_the_after_execute_hook_as_under_maibot(
    make_host: HostFactory, plugin_dir: Path, tmp_path: Path
) -> None:
    expected = await _under_maibot(Path(shutil.copytree(FIXTURE, tmp_path / "real")))
    async with make_host([plugin_dir]) as host:
        outcomes = [
            await host.dispatch_command(
                m["processed_plain_text"],
                message=m,
                stream_id=m["session_id"],
                group_id="123",
                user_id="42",
                platform=m["platform"],
            )
            for m in MESSAGES
        ]
        assert await host.drain_background(10.0)
        logged = await host.call_api("command_log")

    assert logged.success, logged.error
    assert logged.result == expected
    assert {type(e["intercept_message_level"]) for e in logged.result} == {bool}
    seen = [(o.success, o.response, o.continue_processing) for o in outcomes]
    assert seen == [(e["success"], e["response"], e["continue_process"]) for e in expected]
    assert expected[1]["response"] == "[False, '用法: /roll NdM']"
    assert (expected[5]["success"], expected[5]["response"]) == (False, "骰子丢了")
    assert [e["response"].split(" ")[0] for e in expected[6:]] == [
        "本地操作员",
        "普通用户",
        "普通用户",
    ]


async def test_only_a_command_that_raised_is_logged_as_failed_and_a_success_at_debug(
    make_host: HostFactory, plugin_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="plughost.dispatch.commands")
    async with make_host([plugin_dir]) as host:
        for text in ("/roll", "/dice reset"):
            await host.dispatch_command(text, message=_message(text))

    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    ran = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert warnings == [f"command {PLUGIN_ID}.dice_reset failed: 骰子丢了"]
    assert f"command {PLUGIN_ID}.roll_usage ran continue=True" in ran
