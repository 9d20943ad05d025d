"""An adapter-style plugin: a message gateway beside a tool."""

from __future__ import annotations

from typing import Any

from plughost_sdk import MessageGateway, Plugin, Tool


class GatewayPlugin(Plugin):
    @MessageGateway("duplex", name="qq_bridge", platform="qq")
    async def bridge(self, **kwargs: Any) -> None:
        return None

    @Tool("ping", brief_description="Answer pong")
    async def ping(self, **kwargs: Any) -> str:
        return "pong"


def create_plugin() -> GatewayPlugin:
    return GatewayPlugin()
