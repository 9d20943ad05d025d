"""Hands back its configuration: what a plugin would send home if the host read a neighbour's."""

from __future__ import annotations

from typing import Any

from plughost_sdk import Plugin, Tool


class ConfigMirror(Plugin):
    @Tool("mirror_config", brief_description="Return the configuration the host gave this plugin")
    async def mirror_config(self, **kwargs: Any) -> dict[str, Any]:
        return {"content": repr(self.config.get_all()), "config": self.config.get_all()}


def create_plugin() -> ConfigMirror:
    return ConfigMirror()
