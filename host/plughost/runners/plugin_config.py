"""Built-in ``config.get_plugin`` and ``config.get_all``: a plugin reads its own config.

MaiBot's SDK offers ``await self.ctx.config.get_plugin()`` (optionally one
dotted ``key``) and ``await self.ctx.config.get_all()``; MaiBot's host answers
them from the configuration it loaded for the plugin. plughost's host holds the
same thing (the parsed ``config.toml``), so it answers them itself, in MaiBot's
answer shape (``{"success": True, "value": ...}``), which MaiBot's SDK unwraps.

A plugin reads only its own configuration: asking for another plugin's is
refused (``{"success": False, "error": ...}``), because a configuration may hold
secrets that the operator gave to that plugin alone. The manifest must list the
capability, as for any other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from plughost.runners.capabilities import CapabilityCall

__all__ = ["PLUGIN_CONFIG_CAPABILITIES", "PluginConfigCapability"]

PLUGIN_CONFIG_CAPABILITIES = ("config.get_plugin", "config.get_all")

_MISSING = object()


class PluginConfigCapability:
    """Answers a plugin's reads of its own configuration."""

    def __init__(self, config_of: Callable[[str], dict[str, Any] | None]) -> None:
        self._config_of = config_of

    async def __call__(self, call: CapabilityCall) -> dict[str, Any]:
        wanted = call.args.get("plugin_name") or call.plugin_id
        default = call.args.get("default")
        if str(wanted) != call.plugin_id:
            return {
                "success": False,
                "value": default,
                "error": f"plugin {call.plugin_id} may read only its own configuration",
            }
        config = self._config_of(call.plugin_id) or {}
        key = str(call.args.get("key") or "")
        if call.capability == "config.get_all" or not key:
            return {"success": True, "value": config}
        value = _lookup(config, key)
        return {"success": True, "value": default if value is _MISSING else value}


def _lookup(config: dict[str, Any], key: str) -> Any:
    node: Any = config
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node
