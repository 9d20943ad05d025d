"""The MaiBot-style plugin the fork server loads and unloads once, to warm that layer too."""

from __future__ import annotations

from typing import Any

from maibot_sdk import Action, MaiBotPlugin, Tool
from maibot_sdk.types import ActivationType, ChatMode


class RehearsalPlugin(MaiBotPlugin):
    @Action(
        "greet",
        description="Greet someone",
        activation_type=ActivationType.KEYWORD,
        activation_keywords=["hello"],
        chat_mode=ChatMode.ALL,
        action_parameters={"person": "who to greet"},
        action_require=["when someone says hello"],
        associated_types=["text"],
    )
    async def greet(
        self, action_data: dict[str, Any], stream_id: str = "", **kwargs: Any
    ) -> tuple[bool, str]:
        return True, str(action_data.get("person", ""))

    @Tool(
        "farewell",
        description="Say goodbye",
        parameters={"person": {"type": "string", "description": "who", "required": True}},
    )
    async def farewell(self, person: str, **kwargs: Any) -> tuple[bool, str]:
        return True, person


def create_plugin() -> RehearsalPlugin:
    return RehearsalPlugin()
