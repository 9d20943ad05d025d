"""The plugin the fork server loads and unloads once, so that every runner finds loading warm."""

from __future__ import annotations

from typing import Any

from plughost_sdk import Plugin, Tool
from plughost_sdk.types import ToolParameterInfo, ToolParamType


class RehearsalPlugin(Plugin):
    @Tool(
        "echo",
        brief_description="Echo the text back",
        parameters=[ToolParameterInfo(name="text", param_type=ToolParamType.STRING)],
        read_only=True,
    )
    async def echo(self, text: str, **kwargs: Any) -> str:
        return text


def create_plugin() -> RehearsalPlugin:
    return RehearsalPlugin()
