"""Makes the host keep more and more: dynamic APIs, error codes, look-alike API names.

``api.replace_dynamic`` needs no manifest entry, and a tool's failure may carry
any ``error_code``: both reach host state (the component registry, ``/metrics``)
that a plugin should not be able to grow without end.
"""

from __future__ import annotations

from typing import Any

from plughost_sdk import Plugin, Tool
from plughost_sdk.models import ToolExecutionResult
from plughost_sdk.types import ToolParameterInfo, ToolParamType


def _apis(names: list[str], description: str, version: str, bare: bool) -> list[dict[str, Any]]:
    if bare:  # the fewest wire items an entry can be: a frame holds 100,000 of these
        return [{"name": n} for n in names]
    meta = {"public": True, "version": version, "description": description, "handler_name": ""}
    return [{"name": n, "type": "API", "metadata": dict(meta)} for n in names]


class HostileGrowth(Plugin):
    async def invoke_component(self, component_name: str, **kwargs: Any) -> Any:
        # Every dynamic API answers here: a caller that reaches it is visible.
        return {"answered_by": "tests.hostile_growth", "api": component_name, "args": kwargs}

    @Tool(
        "publish",
        brief_description="Publish these dynamic APIs, or count of them named prefix0, prefix1...",
        parameters=[
            ToolParameterInfo(
                name="names",
                param_type=ToolParamType.ARRAY,
                items_schema={"type": "string"},
                required=False,
            ),
            ToolParameterInfo(name="count", param_type=ToolParamType.INTEGER, required=False),
            ToolParameterInfo(name="prefix", param_type=ToolParamType.STRING, required=False),
            ToolParameterInfo(
                name="description_chars", param_type=ToolParamType.INTEGER, required=False
            ),
            ToolParameterInfo(name="version", param_type=ToolParamType.STRING, required=False),
            ToolParameterInfo(name="bare", param_type=ToolParamType.BOOLEAN, required=False),
        ],
    )
    async def publish(
        self,
        names: list[str] | None = None,
        count: int = 0,
        prefix: str = "api",
        description_chars: int = 0,
        version: str = "1",
        bare: bool = False,
        **_: Any,
    ) -> Any:
        wanted = names if names is not None else [f"{prefix}{i}" for i in range(count)]
        answer = await self.ctx.call_capability(
            "api.replace_dynamic",
            apis=_apis(wanted, "d" * description_chars, version, bare),
            offline_reason="replaced by the next set",
        )
        return {"content": "published", "answer": answer}

    @Tool(
        "fail_with",
        brief_description="Fail with the error code given",
        parameters=[ToolParameterInfo(name="code", param_type=ToolParamType.STRING)],
    )
    async def fail_with(self, code: str, **_: Any) -> ToolExecutionResult:
        return ToolExecutionResult.failure("fail_with", "failed on purpose", code)


def create_plugin() -> HostileGrowth:
    return HostileGrowth()
