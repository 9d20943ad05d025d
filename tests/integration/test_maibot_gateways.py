"""A MaiBot ``@MessageGateway`` plugin makes plughost a working bot with no embedder code.

The gateway fixture's chat platform is a pair of files in its data directory:
the test appends messages to ``inbox.jsonl`` and reads what went out in
``outbox.jsonl``; both plugins run in real runners.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from plughost.host import PluginHost
from plughost.runners.capabilities import CapabilityCall
from tests.conftest import TEST_PLUGINS, fast_settings
from tests.waiting import wait_until

GATEWAY = "community.file-gateway"


class Platform:
    """The gateway's files, seen from the chat platform's side."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._count = 0

    def say(self, text: str, *, group: str | None = "123", **extra: Any) -> str:
        self._count += 1
        message: dict[str, Any] = {
            "message_id": f"m{self._count}",
            "platform": "filechat",
            "timestamp": "1700000000.0",
            "message_info": {
                "user_info": {"user_id": "9", "user_nickname": "小明"},
                "group_info": {"group_id": group, "group_name": "测试群"} if group else None,
                "additional_config": {},
            },
            "raw_message": [{"type": "text", "data": text}],
            **extra,
        }
        self.folder.mkdir(parents=True, exist_ok=True)
        with (self.folder / "inbox.jsonl").open("a", encoding="utf-8") as inbox:
            inbox.write(json.dumps(message, ensure_ascii=False) + "\n")
        return str(message["message_id"])

    def lines(self, name: str) -> list[dict[str, Any]]:
        path = self.folder / name
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]

    async def routed(self, message_id: str) -> dict[str, Any]:
        await wait_until(
            lambda: any(r["id"] == message_id for r in self.lines("routed.jsonl")),
            timeout=10,
            what=f"the gateway to route {message_id}",
        )
        return next(r for r in self.lines("routed.jsonl") if r["id"] == message_id)

    async def sent(self, count: int) -> list[dict[str, Any]]:
        await wait_until(
            lambda: len(self.lines("outbox.jsonl")) >= count,
            timeout=10,
            what=f"{count} messages out through the gateway",
        )
        return self.lines("outbox.jsonl")


Start = Callable[[], AbstractAsyncContextManager[tuple[PluginHost, Platform]]]


@pytest.fixture
def start(tmp_path: Path) -> Start:
    """A host over the gateway and the echo bot, and the gateway's platform files."""
    for name in ("file_gateway", "echo_bot"):
        shutil.copytree(TEST_PLUGINS / "maibot" / name, tmp_path / "plugins" / name)

    @asynccontextmanager
    async def run() -> AsyncIterator[tuple[PluginHost, Platform]]:
        settings = fast_settings(tmp_path)
        host = PluginHost([tmp_path / "plugins"], settings=settings)
        try:
            await host.start()
            yield host, Platform(settings.data_dir.resolve() / GATEWAY)
        finally:
            await host.aclose()

    return run


async def test_a_command_from_the_gateway_is_answered_back_out_through_it(start: Start) -> None:
    async with start() as (host, platform):
        routed = await platform.routed(platform.say("/echo 你好"))
        out = await platform.sent(1)
        gateways = [c.to_wire()["metadata"] for c in host.components.components("MESSAGE_GATEWAY")]

    assert routed == {"id": "m1", "accepted": True}
    assert out == [
        {
            "stream": "filechat:123",
            "group": "123",
            "segments": [{"type": "text", "data": "你说: 你好"}],
            "platform": "filechat",
            "account": "bot-1",
        }
    ]
    assert [(g["route_type"], g["platform"], g["protocol"]) for g in gateways] == [
        ("duplex", "filechat", "jsonl")
    ]


async def test_plain_messages_reach_on_message_handlers_and_pre_process_can_drop_them(
    start: Start,
) -> None:
    async with start() as (_, platform):
        await platform.routed(platform.say("广告: 便宜"))
        await platform.routed(platform.say("早上好", group=None))
        out = await platform.sent(1)

    assert out == [
        {
            "stream": "filechat:private:9",
            "group": None,
            "segments": [{"type": "text", "data": "收到 1 条"}],
            "platform": "filechat",
            "account": "bot-1",
        }
    ]


async def test_the_embedders_send_handler_wins_over_the_gateway(start: Start) -> None:
    sent: list[dict[str, Any]] = []

    async def embedder_send(call: CapabilityCall) -> dict[str, Any]:
        sent.append(dict(call.args))
        return {"success": True}

    async with start() as (host, platform):
        host.register_capability("send.*", embedder_send)
        await platform.routed(platform.say("/echo 给应用"))
        await wait_until(lambda: len(sent) >= 1, timeout=10, what="the embedder's send.text")
        gateway_out = platform.lines("outbox.jsonl")

    assert sent[0]["text"] == "你说: 给应用"
    assert sent[0]["stream_id"] == "filechat:123"
    assert gateway_out == []


async def test_bad_messages_from_the_gateway_are_refused_with_a_reason(start: Start) -> None:
    async with start() as (_, platform):
        other_platform = await platform.routed(platform.say("/echo x", platform="qq"))
        console = await platform.routed(platform.say("/echo y", platform="bot_console"))
        platform.folder.mkdir(parents=True, exist_ok=True)
        with (platform.folder / "inbox.jsonl").open("a", encoding="utf-8") as inbox:
            inbox.write(json.dumps({"message_id": "m9", "platform": "filechat"}) + "\n")
        shapeless = await platform.routed("m9")
        await platform.routed(platform.say("/echo 一次", message_id="twice"))
        platform.say("/echo 一次", message_id="twice")
        await wait_until(
            lambda: [r["id"] for r in platform.lines("routed.jsonl")].count("twice") == 2,
            timeout=10,
            what="the repeated message to be routed",
        )
        out = await platform.sent(1)

    assert "serves platform 'filechat', not 'qq'" in other_platform["error"]
    assert "'bot_console' is the application's own console" in console["error"]
    assert "is not a MaiBot message dict: message_info: Field required" in shapeless["error"]
    assert [r for r in platform.lines("routed.jsonl") if r["id"] == "twice"] == [
        {"id": "twice", "accepted": True},
        {"id": "twice", "accepted": False},
    ]
    assert [o["segments"][0]["data"] for o in out] == ["你说: 一次"]
