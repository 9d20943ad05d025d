"""``ctx.component``: plugins and components known to the host."""

from __future__ import annotations

from typing import Any

from plughost_sdk.maibot.capabilities._base import Proxy
from plughost_sdk.maibot.types import normalize_component_type_name


class ComponentCapability(Proxy):
    """Inspect and manage plugins and their components."""

    async def get_all_plugins(self) -> Any:
        """Every plugin."""
        return await self._call("component.get_all_plugins")

    async def get_plugin_info(self, plugin_name: str) -> Any:
        """One plugin's information."""
        return await self._call("component.get_plugin_info", plugin_name=plugin_name)

    async def get_plugin_config_schema(self, plugin_name: str) -> Any:
        """One plugin's configuration schema."""
        return await self._call("component.get_plugin_config_schema", plugin_name=plugin_name)

    async def list_loaded_plugins(self) -> Any:
        """The loaded plugins."""
        return await self._call("component.list_loaded_plugins")

    async def list_registered_plugins(self) -> Any:
        """The registered plugins."""
        return await self._call("component.list_registered_plugins")

    async def enable_component(
        self,
        name: str,
        component_type: str,
        scope: str = "global",
        stream_id: str = "",
        version: str = "",
    ) -> Any:
        """Enable a component."""
        return await self._call(
            "component.enable",
            name=name,
            component_type=normalize_component_type_name(component_type),
            scope=scope,
            stream_id=stream_id,
            version=version,
        )

    async def disable_component(
        self,
        name: str,
        component_type: str,
        scope: str = "global",
        stream_id: str = "",
        version: str = "",
    ) -> Any:
        """Disable a component."""
        return await self._call(
            "component.disable",
            name=name,
            component_type=normalize_component_type_name(component_type),
            scope=scope,
            stream_id=stream_id,
            version=version,
        )

    async def load_plugin(self, plugin_name: str) -> Any:
        """Load a plugin."""
        return await self._call("component.load_plugin", plugin_name=plugin_name)

    async def unload_plugin(self, plugin_name: str) -> Any:
        """Unload a plugin."""
        return await self._call("component.unload_plugin", plugin_name=plugin_name)

    async def reload_plugin(self, plugin_name: str) -> Any:
        """Reload a plugin."""
        return await self._call("component.reload_plugin", plugin_name=plugin_name)
