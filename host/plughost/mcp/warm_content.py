"""AfterStart: resources, prompts and completions asked for while ``plughost serve`` starts.

The tool catalogue (:mod:`plughost.mcp.catalogue`) keeps tools only. A client
that asks for resources, prompts or completions, or subscribes to a resource,
before the host is live gets them once it is: :class:`AfterStart` stands in
for every content provider of the registry (:class:`WarmStart
<plughost.mcp.warm_start.WarmStart>` serves it as the registry's only
provider until then), waits for the host, and then answers from all of them
as the registry would.

What does not live here: tools (:mod:`plughost.mcp.warm_start`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from plughost.mcp.server_content import ResourceSubscriber
from plughost.tools.resources import (
    ContentCatalog,
    PromptInfo,
    PromptResult,
    ResourceContent,
    ResourceInfo,
)

__all__ = ["AfterStart"]


class AfterStart:
    """Every content provider of ``catalog``, answered once ``live`` is set.

    Args:
        catalog: The registry's resources and prompts, merged.
        live: Set when the host has started.
    """

    provider_name = "plughost"

    def __init__(self, catalog: ContentCatalog, live: asyncio.Event) -> None:
        self.catalog = catalog
        self.live = live

    async def list_resources(self) -> list[ResourceInfo]:
        await self.live.wait()
        return [*await self.catalog.list_resources(), *await self.catalog.list_templates()]

    async def read_resource(self, uri: str) -> list[ResourceContent]:
        await self.live.wait()
        return await self.catalog.read_resource(uri)

    async def list_prompts(self) -> list[PromptInfo]:
        await self.live.wait()
        return await self.catalog.list_prompts()

    async def get_prompt(self, name: str, arguments: Mapping[str, str]) -> PromptResult:
        await self.live.wait()
        return await self.catalog.get_prompt(name, arguments)

    async def complete(self, *request: Any) -> list[str]:
        """Completions: ``(kind, name, argument, value, context)`` as ContentProvider has it."""
        await self.live.wait()
        return await self.catalog.complete(*request)

    async def subscribe_resource(self, uri: str) -> bool:
        await self.live.wait()
        for provider in self.catalog.providers():
            if isinstance(provider, ResourceSubscriber) and await provider.subscribe_resource(uri):
                return True
        return False

    async def unsubscribe_resource(self, uri: str) -> None:
        await self.live.wait()
        for provider in self.catalog.providers():
            if isinstance(provider, ResourceSubscriber):
                await provider.unsubscribe_resource(uri)
