"""``ctx.api``: call APIs other plugins offer, and publish dynamic ones."""

from __future__ import annotations

import builtins
from typing import Any

from plughost_sdk.maibot.capabilities._base import Proxy


class APICapability(Proxy):
    """Plugin APIs (``@API`` components) through the host."""

    async def call(self, api_name: str, *, version: str = "", **kwargs: Any) -> Any:
        """Call the API ``api_name``; its keyword arguments travel as ``args``."""
        return await self._call("api.call", api_name=api_name, version=version, args=kwargs)

    async def get(self, api_name: str, *, version: str = "") -> Any:
        """Describe the API ``api_name``."""
        return await self._call("api.get", api_name=api_name, version=version)

    async def list(self, *, plugin_id: str = "") -> Any:
        """List the APIs (of one plugin, or all)."""
        return await self._call("api.list", plugin_id=plugin_id)

    async def replace_dynamic_apis(
        self, apis: builtins.list[dict[str, Any]], *, offline_reason: str = "动态 API 已下线"
    ) -> bool:
        """Replace this plugin's dynamic APIs with ``apis``; True when the host accepted."""
        result = await self._call("api.replace_dynamic", apis=apis, offline_reason=offline_reason)
        return bool(isinstance(result, dict) and result.get("success"))
