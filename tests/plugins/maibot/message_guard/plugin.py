"""消息守卫: an intercepting event handler, a fire-and-forget one, blocking and observing hooks."""

from typing import Any

from maibot_sdk import EventHandler, Field, HookHandler, MaiBotPlugin, PluginConfigBase, Tool
from maibot_sdk.messages import MaiMessages
from maibot_sdk.types import ErrorPolicy, EventType, HookMode, HookOrder


class PluginSection(PluginConfigBase):
    config_version: str = Field(default="1.2.0", description="配置文件版本")
    enabled: bool = Field(default=True, description="是否启用")


class GuardSection(PluginConfigBase):
    """守卫设置"""

    banned_words: list[str] = Field(default_factory=lambda: ["广告"], description="屏蔽词")
    planner_note: str = Field(default="回答要简短", description="追加给规划器的提示")


class GuardConfig(PluginConfigBase):
    plugin: PluginSection = Field(default_factory=PluginSection)
    guard: GuardSection = Field(default_factory=GuardSection)


class MessageGuardPlugin(MaiBotPlugin):
    config_model = GuardConfig

    def __init__(self) -> None:
        super().__init__()
        self.seen_messages = 0
        self.observed_hooks: list[str] = []

    async def on_load(self) -> None:
        pass

    async def on_unload(self) -> None:
        pass

    async def on_config_update(self, scope: str, config_data: dict[str, Any], version: str) -> None:
        pass

    @EventHandler(
        "banned_word_filter",
        description="拦截含屏蔽词的消息",
        event_type=EventType.ON_MESSAGE_PRE_PROCESS,
        intercept_message=True,
        weight=100,
    )
    async def filter_message(self, message: dict[str, Any] | None = None, **kwargs: Any):
        incoming = MaiMessages.from_rpc_dict(message or {})
        if any(word in incoming.plain_text for word in self.config.guard.banned_words):
            return {"continue_processing": False, "custom_result": "blocked"}
        incoming.modify_plain_text(incoming.plain_text.strip())
        return {"continue_processing": True, "modified_message": incoming.to_rpc_dict()}

    @EventHandler("message_counter", event_type=EventType.ON_MESSAGE)
    async def count_message(self, **kwargs: Any) -> None:
        self.seen_messages += 1
        await self.ctx.db.save("guard_stats", {"seen": self.seen_messages})

    @HookHandler(
        "maisaka.planner.before_request",
        name="planner_note",
        mode=HookMode.BLOCKING,
        order=HookOrder.EARLY,
        timeout_ms=2000,
        error_policy=ErrorPolicy.SKIP,
    )
    async def add_planner_note(self, **kwargs: Any) -> dict[str, Any]:
        prompt = str(kwargs.get("prompt", ""))
        note = self.config.guard.planner_note
        return {"action": "continue", "modified_kwargs": {**kwargs, "prompt": f"{prompt}\n{note}"}}

    @HookHandler("maisaka.planner.after_response", mode=HookMode.OBSERVE)
    async def watch_planner(self, **kwargs: Any) -> None:
        self.observed_hooks.append(str(kwargs.get("response", "")))

    @Tool("guard_stats", description="查看消息守卫的统计")
    async def guard_stats(self, **kwargs: Any) -> dict[str, Any]:
        return {
            "content": f"seen={self.seen_messages}",
            "observed": list(self.observed_hooks),
        }


def create_plugin() -> MessageGuardPlugin:
    return MessageGuardPlugin()
