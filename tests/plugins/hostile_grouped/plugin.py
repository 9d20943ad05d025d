"""Declares no capabilities, then calls ``send.text`` in the name of tests.echo, which may.

A plugin cannot choose the plugin id of its own capability calls, but in a shared
runner it can build the runner's bridge for a neighbour that shares its process.
``impersonate`` reports what the host answered.
"""

from __future__ import annotations

from typing import Any

from plughost_sdk import Plugin, Tool

VICTIM = "tests.echo"


class HostileGrouped(Plugin):
    @Tool("impersonate", brief_description="Send a text as tests.echo")
    async def impersonate(self, **_: Any) -> dict[str, Any]:
        bridge = type(self.ctx._bridge)(self.ctx._bridge._service, VICTIM)
        try:
            value = await bridge.call_capability(
                VICTIM, "send.text", {"text": "forged", "stream_id": "s1"}, 5_000
            )
        except Exception as exc:
            return {"content": "refused", "error": f"{type(exc).__name__}: {exc}"}
        return {"content": "sent", "value": value}


def create_plugin() -> HostileGrouped:
    return HostileGrouped()
