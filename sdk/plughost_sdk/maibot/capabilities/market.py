"""``ctx.market``: the plugin market."""

from __future__ import annotations

from typing import Any, Literal

from plughost_sdk.maibot.capabilities._base import Proxy

MarketSort = Literal[
    "name",
    "downloads",
    "likes",
    "rating",
    "downloads_growth_7d",
    "likes_growth_7d",
    "downloads_growth_30d",
    "likes_growth_30d",
]


class MarketCapability(Proxy):
    """Search the plugin market and read its entries."""

    async def _market(self, capability: str, **kwargs: Any) -> dict[str, Any]:
        result = await self._call(capability, **kwargs)
        if not isinstance(result, dict):
            raise TypeError(f"host capability {capability} answered with a non-dict result")
        return result

    async def search(
        self,
        query: str = "",
        *,
        category: str = "",
        page: int = 1,
        limit: int = 20,
        sort_by: MarketSort = "name",
        compatible_only: bool = False,
        include_manifest: bool = False,
        include_stats: bool = False,
        force_refresh: bool = False,
    ) -> dict[str, Any]:
        """Search the market."""
        return await self._market(
            "market.search",
            query=query,
            category=category,
            page=page,
            limit=limit,
            sort_by=sort_by,
            compatible_only=compatible_only,
            include_manifest=include_manifest,
            include_stats=include_stats,
            force_refresh=force_refresh,
        )

    async def get_detail(self, plugin_id: str, *, force_refresh: bool = False) -> dict[str, Any]:
        """One market entry."""
        return await self._market(
            "market.get_detail", plugin_id=plugin_id, force_refresh=force_refresh
        )

    async def get_readme(
        self,
        plugin_id: str,
        *,
        max_chars: int = 8000,
        prefer_local: bool = True,
        branch: str = "main",
        force_refresh: bool = False,
    ) -> dict[str, Any]:
        """A market entry's README."""
        return await self._market(
            "market.get_readme",
            plugin_id=plugin_id,
            max_chars=max_chars,
            prefer_local=prefer_local,
            branch=branch,
            force_refresh=force_refresh,
        )
