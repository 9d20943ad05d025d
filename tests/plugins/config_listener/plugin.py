"""Subscribes to the bot's model configuration; hands back what reached it and its process."""

from typing import Any

from maibot_sdk import MaiBotPlugin, Tool

from plughost_sdk import wire

_original = wire.decode_many
OVERHEARD: list[dict[str, Any]] = []  # every config.update this runner process received


def _tap(*args: Any, **kwargs: Any) -> Any:
    envelopes = _original(*args, **kwargs)
    for envelope in envelopes:
        if envelope["method"] == "config.update":
            OVERHEARD.append({"plugin": envelope["plugin"], **dict(envelope["body"] or {})})
    return envelopes


wire.decode_many = _tap


class ConfigListenerPlugin(MaiBotPlugin):
    config_reload_subscriptions = ("model",)

    def __init__(self) -> None:
        super().__init__()
        self.updates: list[dict[str, Any]] = []

    async def on_load(self) -> None:
        pass

    async def on_unload(self) -> None:
        pass

    async def on_config_update(self, scope: str, config_data: dict[str, Any], version: str) -> None:
        self.updates.append({"scope": scope, "config": config_data})

    @Tool("listener_received", description="查看收到的配置")
    async def received(self, **kwargs: Any) -> dict[str, Any]:
        return {"updates": self.updates, "overheard": OVERHEARD}


def create_plugin() -> ConfigListenerPlugin:
    return ConfigListenerPlugin()
