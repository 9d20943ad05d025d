"""Calls tools through ctx.call_tool and reports what came back, refusals included."""

from __future__ import annotations

from typing import Any

from plughost_sdk import CapabilityError, Plugin, Tool
from plughost_sdk.types import ToolParameterInfo, ToolParamType


class CallerPlugin(Plugin):
    @Tool(
        "relay",
        brief_description="Call a tool by name and report its result or the refusal",
        parameters=[
            ToolParameterInfo(name="name", param_type=ToolParamType.STRING),
            ToolParameterInfo(name="arguments", param_type=ToolParamType.OBJECT, required=False),
        ],
    )
    async def relay(self, name: str, arguments: dict[str, Any] | None = None, **_: Any) -> Any:
        try:
            result = await self.ctx.call_tool(name, arguments)
        except CapabilityError as exc:
            return {"content": "refused", "code": exc.code, "reason": str(exc)}
        # Not "success" or "error": those keys would make this tool's own result a failure.
        return {
            "content": result.content,
            "ok": result.success,
            "code": result.error_code,
            "reason": result.error_message,
        }

    @Tool(
        "shout_back",
        brief_description="Answer with the text in capitals",
        parameters=[ToolParameterInfo(name="text", param_type=ToolParamType.STRING)],
    )
    async def shout_back(self, text: str, **_: Any) -> str:
        return text.upper()

    @Tool(
        "recurse",
        brief_description="Call itself one level deeper until the host refuses",
        parameters=[ToolParameterInfo(name="level", param_type=ToolParamType.INTEGER)],
    )
    async def recurse(self, level: int, **_: Any) -> str:
        try:
            result = await self.ctx.call_tool("recurse", {"level": level + 1})
        except CapabilityError as exc:
            return f"refused at level {level}: {exc.code}: {exc}"
        return f"level {level} -> {result.content or result.error_message}"


def create_plugin() -> CallerPlugin:
    return CallerPlugin()
