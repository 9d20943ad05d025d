"""The one thing every proxy holds: the context whose ``call_capability`` it uses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plughost_sdk.maibot.context import PluginContext


class Proxy:
    """Base of the capability proxies."""

    def __init__(self, ctx: PluginContext) -> None:
        self._ctx = ctx

    async def _call(self, capability: str, **kwargs: Any) -> Any:
        return await self._ctx.call_capability(capability, **kwargs)
