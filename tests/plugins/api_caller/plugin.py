"""Calls other plugins' APIs through ctx.api.call and reports what came back."""

from __future__ import annotations

from typing import Any

from plughost_sdk import API, CapabilityError, Plugin, Tool
from plughost_sdk.types import ToolParameterInfo, ToolParamType


class ApiCaller(Plugin):
    @Tool(
        "call_api",
        brief_description="Call an API by name and report the answer or the refusal",
        parameters=[
            ToolParameterInfo(name="api_name", param_type=ToolParamType.STRING),
            ToolParameterInfo(name="args", param_type=ToolParamType.OBJECT, required=False),
        ],
    )
    async def call_api(self, api_name: str, args: dict[str, Any] | None = None, **_: Any) -> Any:
        try:
            answer = await self.ctx.api.call(api_name=api_name, version="", args=args or {})
        except CapabilityError as exc:
            return {"content": "refused", "code": exc.code, "reason": str(exc)}
        return {"content": "answered", "answer": answer}

    @API("double", description="Twice the number")
    async def double(self, n: int) -> int:
        return 2 * n


def create_plugin() -> ApiCaller:
    return ApiCaller()
