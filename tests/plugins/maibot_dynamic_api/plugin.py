"""A MaiBot-style plugin that publishes an API at load time, the way MaiBot plugins do it."""

from typing import Any

from maibot_sdk import MaiBotPlugin


class DynamicShouter(MaiBotPlugin):
    async def on_load(self) -> None:
        self.register_dynamic_api("shout", self._shout, description="Upper-case text", public=True)
        await self.sync_dynamic_apis()

    async def on_unload(self) -> None:
        self.clear_dynamic_apis()

    async def on_config_update(self, scope: str, config_data: dict[str, Any], version: str) -> None:
        return None

    async def _shout(self, text: str = "", **kwargs: Any) -> str:
        return text.upper() + "!"


def create_plugin() -> DynamicShouter:
    return DynamicShouter()
