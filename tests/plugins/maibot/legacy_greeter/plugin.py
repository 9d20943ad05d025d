"""打招呼插件: an old-style @Action next to a @Tool, (bool, str) returns, no config model."""

from typing import Any

from maibot_sdk import Action, MaiBotPlugin, Tool
from maibot_sdk.types import ActivationType, ChatMode


class LegacyGreeterPlugin(MaiBotPlugin):
    async def on_load(self) -> None:
        pass

    async def on_unload(self) -> None:
        pass

    async def on_config_update(self, scope: str, config_data: dict[str, Any], version: str) -> None:
        pass

    @Action(
        "greet",
        description="向某人打招呼",
        activation_type=ActivationType.KEYWORD,
        activation_keywords=["你好", "hello"],
        chat_mode=ChatMode.ALL,
        action_parameters={"person": "要打招呼的人", "style": ""},
        action_require=["有人打招呼时使用", "不要重复打招呼"],
        associated_types=["text"],
        action_prompt="友好地回应",
    )
    async def handle_greet(self, action_data: dict[str, Any], stream_id: str = "", **kwargs: Any):
        person = action_data.get("person") or "朋友"
        await self.ctx.send.text(f"你好，{person}！", stream_id)
        return True, f"已向 {person} 打招呼 (reasoning: {kwargs.get('reasoning', '')})"

    @Tool(
        "farewell",
        description="道别",
        detailed_description="参数说明：\n- person：string，必填。要道别的人",
        parameters={"person": {"type": "string", "description": "要道别的人", "required": True}},
    )
    async def farewell(self, person: str, **kwargs: Any):
        if not person.strip():
            return False, "没有道别对象"
        return True, f"再见，{person}"


def create_plugin() -> LegacyGreeterPlugin:
    return LegacyGreeterPlugin()
