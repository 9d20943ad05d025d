"""复读机插件: a command that answers through ctx.send.text, and a message counter."""

from typing import Any

from maibot_sdk import Command, EventHandler, MaiBotPlugin
from maibot_sdk.types import EventType


class EchoBotPlugin(MaiBotPlugin):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    async def on_load(self) -> None:
        pass

    async def on_unload(self) -> None:
        pass

    async def on_config_update(self, scope: str, config_data: dict[str, Any], version: str) -> None:
        pass

    @Command("echo", description="复读一句话", pattern=r"^/echo (?P<words>.+)$")
    async def handle_echo(self, stream_id: str = "", matched_groups: Any = None, **kwargs: Any):
        words = (matched_groups or {}).get("words", "")
        sent = await self.ctx.send.text(f"你说: {words}", stream_id)
        return True, f"sent={sent}", True

    @EventHandler("drop_spam", event_type=EventType.ON_MESSAGE_PRE_PROCESS, intercept_message=True)
    async def drop_spam(self, message: Any = None, **kwargs: Any) -> dict[str, Any]:
        text = (message or {}).get("processed_plain_text", "")
        return {"continue_processing": "广告" not in text}

    @EventHandler("count_messages", event_type=EventType.ON_MESSAGE)
    async def count_messages(self, message: Any = None, **kwargs: Any) -> None:
        text = (message or {}).get("processed_plain_text", "")
        self.seen.append(text)
        sent = await self.ctx.send.text(
            f"收到 {len(self.seen)} 条", (message or {}).get("session_id", "")
        )
        if not sent:
            raise RuntimeError("计数回复发送失败")


def create_plugin() -> EchoBotPlugin:
    return EchoBotPlugin()
