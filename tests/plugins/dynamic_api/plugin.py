"""Publishes APIs at run time, as MaiBot's register_dynamic_api + sync_dynamic_apis do."""

from __future__ import annotations

from typing import Any

from plughost_sdk import API, Plugin, Tool
from plughost_sdk.types import ToolParameterInfo, ToolParamType


class DynamicApis(Plugin):
    def __init__(self) -> None:
        self.published: list[str] = []

    def _entries(self, names: list[str]) -> list[dict[str, Any]]:
        meta = {"public": True, "version": "1", "dynamic": True, "handler_name": ""}
        return [{"name": n, "type": "API", "metadata": dict(meta)} for n in names]

    def get_components(self) -> list[dict[str, Any]]:
        return [*super().get_components(), *self._entries(self.published)]

    async def invoke_component(self, component_name: str, **kwargs: Any) -> Any:
        return f"{component_name} says hi to {kwargs.get('who', 'nobody')}"

    async def on_load(self) -> None:
        self.published = ["greet"]
        await self.ctx.call_capability(
            "api.replace_dynamic", apis=self._entries(self.published), offline_reason="gone"
        )

    @Tool(
        "publish",
        brief_description="Replace the published APIs with these names",
        parameters=[
            ToolParameterInfo(
                name="names", param_type=ToolParamType.ARRAY, items_schema={"type": "string"}
            )
        ],
    )
    async def publish(self, names: list[str], **_: Any) -> Any:
        self.published = list(names)
        answer = await self.ctx.call_capability(
            "api.replace_dynamic",
            apis=self._entries(self.published),
            offline_reason="greet retired; use wave",
        )
        return {"content": "published", "answer": answer}

    @API("fixed", public=True)
    async def fixed(self) -> str:
        return "declared"


def create_plugin() -> DynamicApis:
    return DynamicApis()
