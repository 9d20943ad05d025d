"""笔记本: an @API, a dynamic API, ctx.api.call, and a subscription to the bot's configuration."""

from typing import Any

from maibot_sdk import (
    API,
    CONFIG_RELOAD_SCOPE_SELF,
    ON_BOT_CONFIG_RELOAD,
    MaiBotPlugin,
    Tool,
)


class NoteKeeperPlugin(MaiBotPlugin):
    config_reload_subscriptions = (ON_BOT_CONFIG_RELOAD,)

    def __init__(self) -> None:
        super().__init__()
        self.notes: dict[str, str] = {}
        self.config_updates: list[str] = []
        self.register_dynamic_api("note_count", self._count, description="笔记数量", public=True)

    async def on_load(self) -> None:
        pass

    async def on_unload(self) -> None:
        self.clear_dynamic_apis()

    async def on_config_update(self, scope: str, config_data: dict[str, Any], version: str) -> None:
        if scope == ON_BOT_CONFIG_RELOAD:
            self.config_updates.append(f"bot:{config_data.get('bot', {}).get('nickname')}")
        elif scope == CONFIG_RELOAD_SCOPE_SELF:
            self.config_updates.append("self")

    async def _count(self, **kwargs: Any) -> int:
        return len(self.notes)

    @API("save_note", description="保存一条笔记", version="1", public=True)
    async def save_note(self, title: str, body: str, **kwargs: Any) -> dict[str, Any]:
        self.notes[title] = body
        return {"saved": title, "total": len(self.notes)}

    @Tool(
        "remember",
        description="记住一条笔记",
        parameters={
            "title": {"type": "string", "description": "标题", "required": True},
            "body": {"type": "string", "description": "内容", "required": True},
        },
    )
    async def remember(self, title: str, body: str, **kwargs: Any):
        result = await self.ctx.api.call("save_note", title=title, body=body)
        return True, f"已保存 {result['saved']}，共 {result['total']} 条"

    @Tool("note_updates", description="查看收到的配置更新")
    async def note_updates(self, **kwargs: Any) -> str:
        return ",".join(self.config_updates)


def create_plugin() -> NoteKeeperPlugin:
    return NoteKeeperPlugin()
