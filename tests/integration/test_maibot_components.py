"""MaiBot plugins' commands, event handlers, hooks and APIs, unmodified, in the host's dispatch."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from plughost.host import PluginHost
from tests.conftest import TEST_PLUGINS, fast_settings
from tests.maibot_host import MaiBotHost

# One host for the module: each test reads what its own calls did (its own stream,
# command, event or hook), so they do not depend on each other's order.
pytestmark = pytest.mark.asyncio(loop_scope="module")

FIXTURES = ["group_admin", "message_guard", "note_keeper"]
Served = tuple[PluginHost, MaiBotHost]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    root = tmp_path_factory.mktemp("maibot-components")
    folders = []
    for name in FIXTURES:
        shutil.copytree(TEST_PLUGINS / "maibot" / name, root / "plugins" / name)
        folders.append(root / "plugins" / name)
    host = PluginHost(folders, settings=fast_settings(root))
    maibot = MaiBotHost().install(host)
    try:
        await host.start()
        yield host, maibot
    finally:
        await host.aclose()


async def test_a_command_with_named_groups_runs_and_intercepts(served: Served) -> None:
    host, maibot = served
    outcome = await host.dispatch_command("/who 小红", stream_id="qq:123")

    assert outcome.handled and outcome.success, outcome.error
    assert outcome.command == "community.group-admin.who"
    assert outcome.response == "查询了 小红"
    assert not outcome.continue_processing  # the command returned intercept=True
    assert maibot.named("send.text") == [
        {"text": "小红 的 person id 是 person-小红", "stream_id": "qq:123", "return_details": False}
    ]


async def test_an_alias_command_sends_a_forward_with_positional_ctx_call(served: Served) -> None:
    host, maibot = served
    outcome = await host.dispatch_command("/群规", stream_id="qq:123")

    assert outcome.success, outcome.error
    assert outcome.response == "[True, '群规已发送']"  # MaiBot's str() of a two-item result
    assert maibot.named("send.forward")[0]["messages"][0] == {"type": "text", "data": "1. 友善"}


async def test_an_intercepting_event_handler_stops_a_banned_message_and_cleans_others(
    served: Served,
) -> None:
    host, _ = served
    blocked = await host.emit_event(
        "on_message_pre_process", {"plain_text": "买广告吗", "stream_id": "qq:1"}
    )
    cleaned = await host.emit_event(
        "on_message_pre_process", {"plain_text": "  你好  ", "stream_id": "qq:1"}
    )

    assert not blocked.continue_processing
    assert blocked.stopped_by == "community.message-guard.banned_word_filter"
    assert cleaned.continue_processing
    assert cleaned.message is not None and cleaned.message["plain_text"] == "你好"


async def test_a_fire_and_forget_handler_runs_in_the_background(served: Served) -> None:
    host, maibot = served
    await host.emit_event("on_message", {"plain_text": "hi"})
    assert await host.drain_background()
    stats = await host.invoke("guard_stats")

    assert stats.content == "seen=1"
    assert maibot.named("database.save") == [
        {"model_name": "guard_stats", "data": {"seen": 1}, "key_field": "id", "key_value": None}
    ]


async def test_a_blocking_hook_rewrites_the_planner_request_and_an_observer_sees_the_reply(
    served: Served,
) -> None:
    host, _ = served
    before = await host.run_hook("maisaka.planner.before_request", prompt="今天天气如何")
    await host.run_hook("maisaka.planner.after_response", response="晴")
    assert await host.drain_background()
    stats = await host.invoke("guard_stats")

    assert not before.aborted, before.errors
    assert before.kwargs["prompt"] == "今天天气如何\n回答要简短"
    assert stats.structured_content["observed"] == ["晴"]


async def test_a_plugin_calls_its_own_api_through_ctx_api_call(served: Served) -> None:
    host, _ = served
    remembered = await host.invoke("remember", {"title": "购物", "body": "牛奶"})
    direct = await host.call_api("community.note-keeper.save_note", title="会议", body="三点")
    count = await host.call_api("note_count")

    assert remembered.success, remembered.error_message
    assert remembered.content == "已保存 购物，共 1 条"
    assert direct.success and direct.result == {"saved": "会议", "total": 2}
    assert count.success and count.result == 2
