"""Leaks its API key through logs, prints, stderr and a crash, as careless plugins do."""

from __future__ import annotations

import os
from typing import Any

from plughost_sdk import Plugin, Tool


class Leaky(Plugin):
    async def on_load(self) -> None:
        self.ctx.logger.debug("connecting with key %s", self.config.get("service.api_key"))

    @Tool("leak", brief_description="Print and log the key")
    async def leak(self, **kwargs: Any) -> str:
        key = self.config.get("service.api_key")
        print(f"my key is {key}")
        self.ctx.logger.warning("still using %s", key)
        os.write(2, f"raw stderr {key}\n".encode())
        return "leaked"

    @Tool("leak_and_die", brief_description="Crash with the key in the last output")
    async def leak_and_die(self, **kwargs: Any) -> str:
        os.write(2, f"fatal: bad key {self.config.get('service.api_key')}\n".encode())
        os._exit(3)


def create_plugin() -> Leaky:
    return Leaky()
