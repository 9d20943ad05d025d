"""``ctx.statistics.local``: the host's usage statistics."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from plughost_sdk.maibot.capabilities._base import Proxy

if TYPE_CHECKING:
    from plughost_sdk.maibot.context import PluginContext


class LocalStatisticsCapability(Proxy):
    """Local statistics: models, tokens, messages, tools, online time."""

    async def _dict(self, capability: str, **kwargs: Any) -> dict[str, Any]:
        result = await self._call(capability, **kwargs)
        return result if isinstance(result, dict) else {}

    async def models(self, *, days: int = 7, limit: int = 10) -> list[dict[str, Any]]:
        """The most used models."""
        result = await self._call("statistics.local.models", days=days, limit=limit)
        if isinstance(result, dict):
            result = result.get("models")
        return result if isinstance(result, list) else []

    async def model_trend(
        self,
        *,
        days: int = 7,
        bucket: str = "day",
        top_models: int = 10,
        metric: str = "token",
        module_name: str = "",
    ) -> dict[str, Any]:
        """Model use over time."""
        return await self._dict(
            "statistics.local.model_trend",
            days=days,
            bucket=bucket,
            top_models=top_models,
            metric=metric,
            module_name=module_name,
        )

    async def token_trend(
        self, *, days: int = 7, bucket: str = "day", group_by: str = "", top_items: int = 10
    ) -> dict[str, Any]:
        """Token use over time."""
        return await self._dict(
            "statistics.local.token_trend",
            days=days,
            bucket=bucket,
            group_by=group_by,
            top_items=top_items,
        )

    async def token_distribution(
        self, *, days: int = 7, group_by: str = "model", top_items: int = 10
    ) -> dict[str, Any]:
        """How tokens are spread."""
        return await self._dict(
            "statistics.local.token_distribution",
            days=days,
            group_by=group_by,
            top_items=top_items,
        )

    async def message_trend(
        self, *, days: int = 7, bucket: str = "day", top_chats: int = 10
    ) -> dict[str, Any]:
        """Messages over time."""
        return await self._dict(
            "statistics.local.message_trend", days=days, bucket=bucket, top_chats=top_chats
        )

    async def tool_trend(
        self, *, days: int = 7, bucket: str = "day", top_tools: int = 10
    ) -> dict[str, Any]:
        """Tool calls over time."""
        return await self._dict(
            "statistics.local.tool_trend", days=days, bucket=bucket, top_tools=top_tools
        )

    async def online_time_trend(self, *, days: int = 7, bucket: str = "day") -> dict[str, Any]:
        """Online time over time."""
        return await self._dict("statistics.local.online_time_trend", days=days, bucket=bucket)


class StatisticsCapability:
    """``ctx.statistics``: only ``.local`` exists."""

    def __init__(self, ctx: PluginContext) -> None:
        self.local = LocalStatisticsCapability(ctx)
