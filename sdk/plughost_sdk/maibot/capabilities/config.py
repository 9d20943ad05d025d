"""``ctx.config``: the bot's configuration (not the plugin's own ``config.toml``).

A MaiBot plugin reads its own settings from ``self.config`` (its config model);
``await self.ctx.config.get("bot.nickname")`` asks the host for the bot's.
"""

from __future__ import annotations

from typing import Any

from plughost_sdk.maibot.capabilities._base import Proxy


class ConfigCapability(Proxy):
    """Read the host's configuration."""

    async def get(self, key: str, default: Any = None) -> Any:
        """The value at a dotted key of the bot's configuration, or ``default``."""
        result = await self._call("config.get", key=key, default=default)
        return result if result is not None else default

    async def get_plugin(self, plugin_name: str | None = None) -> dict[str, Any]:
        """A plugin's configuration (this plugin's when ``plugin_name`` is None)."""
        result = await self._call("config.get_plugin", plugin_name=plugin_name)
        return result if isinstance(result, dict) else {}

    async def get_all(self) -> dict[str, Any]:
        """This plugin's whole configuration as the host holds it."""
        result = await self._call("config.get_all")
        return result if isinstance(result, dict) else {}
