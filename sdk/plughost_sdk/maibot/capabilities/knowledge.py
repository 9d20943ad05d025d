"""``ctx.knowledge``: the bot's knowledge base."""

from __future__ import annotations

from typing import Any

from plughost_sdk.maibot.capabilities._base import Proxy


class KnowledgeCapability(Proxy):
    """Search the knowledge base."""

    async def search(self, query: str, limit: int = 5) -> Any:
        """The knowledge matching ``query``."""
        return await self._call("knowledge.search", query=query, limit=limit)
