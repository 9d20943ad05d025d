"""``ctx.tool``: the tool definitions the model sees."""

from __future__ import annotations

from typing import Any

from plughost_sdk.maibot.capabilities._base import Proxy


class ToolCapability(Proxy):
    """Inspect the available LLM tools."""

    async def get_definitions(self) -> Any:
        """Every available tool definition (name, description, parameters)."""
        return await self._call("tool.get_definitions")
