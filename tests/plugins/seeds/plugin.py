"""Handlers written the way the MaiBot tool pages show them, not the way plughost prefers."""

from __future__ import annotations

import time
from typing import Any

from plughost_sdk import Plugin, Tool
from plughost_sdk.types import ToolParameterInfo, ToolParamType


class SeedsPlugin(Plugin):
    @Tool("context_echo", brief_description="Return the conversation fields it was given")
    async def context_echo(self, **kwargs: Any) -> dict[str, Any]:
        keys = ("session_id", "stream_id", "reasoning", "metadata", "call_id")
        return {"received": {key: kwargs[key] for key in keys if key in kwargs}}

    @Tool(
        "search_web",
        brief_description="Search with a declared default and no Python default",
        parameters=[
            ToolParameterInfo(name="query", param_type=ToolParamType.STRING, required=True),
            ToolParameterInfo(
                name="limit", param_type=ToolParamType.INTEGER, required=False, default=5
            ),
        ],
    )
    async def search_web(self, query: str, limit: int, **kwargs: Any) -> dict[str, Any]:
        return {"query": query, "limit": limit}

    @Tool(
        "nap",
        brief_description="Block the event loop with time.sleep, as a blocking client would",
        parameters=[ToolParameterInfo(name="seconds", param_type=ToolParamType.NUMBER)],
    )
    async def nap(self, seconds: float, **kwargs: Any) -> str:
        time.sleep(seconds)
        return f"napped {seconds}"

    @Tool("with_followup", brief_description="Return a dict carrying post_history_messages")
    async def with_followup(self, **kwargs: Any) -> dict[str, Any]:
        return {
            "content": "noted",
            "post_history_messages": [{"role": "user", "content": "remember the note"}],
        }

    @Tool("nothing", brief_description="Return nothing at all")
    async def nothing(self, **kwargs: Any) -> None:
        return None

    @Tool("admin_reset", brief_description="Only for the operator", visibility="hidden")
    async def admin_reset(self, **kwargs: Any) -> str:
        return "reset"


def create_plugin() -> SeedsPlugin:
    return SeedsPlugin()
