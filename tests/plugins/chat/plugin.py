"""Commands, event handlers, a planner hook and APIs, written the way bot plugins write them."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from plughost_sdk import (
    API,
    Command,
    EventHandler,
    EventType,
    HomeCard,
    HookHandler,
    HookOrder,
    Plugin,
    Tool,
)


class ChatPlugin(Plugin):
    @Command("weather", description="Weather for a city", pattern=r"^/weather (?P<city>\w+)")
    async def weather_command(self, matched_groups: dict[str, str], **kwargs: Any) -> Any:
        return True, f"sunny in {matched_groups['city']}", True

    @Command("echo", description="Say it back", aliases=["/echo"])
    async def echo_command(self, text: str, stream_id: str = "", **kwargs: Any) -> Any:
        return True, f"{stream_id}: {text.removeprefix('/echo').strip()}", False

    @Command("boom", pattern=r"^/boom")
    async def boom_command(self, **kwargs: Any) -> Any:
        raise RuntimeError("the command broke")

    @Command("slow", pattern=r"^/slow", timeout_ms=300)
    async def slow_command(self, **kwargs: Any) -> Any:
        await asyncio.sleep(30)
        return True, "late", True

    @Command("exit", pattern=r"^/exit")
    def exit_command(self, **kwargs: Any) -> Any:
        os._exit(3)  # the runner dies mid-call

    @EventHandler(
        "tagger", event_type=EventType.ON_MESSAGE_PRE_PROCESS, intercept_message=True, weight=10
    )
    async def tag(self, message: dict[str, Any], **kwargs: Any) -> Any:
        changed = dict(message)
        changed["processed_plain_text"] = message["processed_plain_text"] + " [tagged]"
        changed["trail"] = [*message.get("trail", []), "tagger"]
        return {"modified_message": changed}

    @EventHandler(
        "spam_filter",
        event_type=EventType.ON_MESSAGE_PRE_PROCESS,
        intercept_message=True,
        weight=5,
    )
    async def drop_spam(self, message: dict[str, Any], **kwargs: Any) -> Any:
        if "spam" in message["processed_plain_text"]:
            return {"blocked": True}
        changed = dict(message)
        changed["trail"] = [*message.get("trail", []), "spam_filter"]
        return {"continue_processing": True, "modified_message": changed}

    @EventHandler("recorder", event_type=EventType.ON_MESSAGE)
    async def record(self, message: dict[str, Any], **kwargs: Any) -> None:
        await self.ctx.call_capability("test.record", seen=message["processed_plain_text"])

    @EventHandler("broken_listener", event_type=EventType.ON_MESSAGE, weight=99)
    async def broken(self, **kwargs: Any) -> None:
        raise RuntimeError("the listener broke")

    @HookHandler("maisaka.planner.before_request", order=HookOrder.EARLY)
    async def add_reminder(self, items: list[Any], **kwargs: Any) -> Any:
        return {"modified_kwargs": {**kwargs, "items": [*items, "reminder: be brief"]}}

    @API("add", description="Add two numbers", version="1", public=True)
    async def add(self, a: int, b: int) -> int:
        return a + b

    @API("secret", description="Only for this plugin")
    async def secret(self) -> str:
        return "hidden"

    @HomeCard("status", "Chat status", content="all quiet")
    async def status_card(self) -> None:
        return None

    @Tool("chat_time", brief_description="The chat plugin's clock, for listings next to commands")
    async def chat_time(self, **kwargs: Any) -> str:
        return "noon"


def create_plugin() -> ChatPlugin:
    return ChatPlugin()
