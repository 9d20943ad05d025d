"""Says what it is told through its logger, print and stderr, and crashes on request.

The tests write its ``config.toml`` (hundreds of secret-looking values, or
values equal to host words) and copy it under other ids as its neighbours.
"""

from __future__ import annotations

import os
from typing import Any

from plughost_sdk import Plugin, Tool, ToolParameterInfo, ToolParamType

TEXT = [ToolParameterInfo(name="text", param_type=ToolParamType.STRING)]


class SecretConfig(Plugin):
    async def on_load(self) -> None:
        token = self.config.get("fail_token")
        if token:
            raise RuntimeError(f"plugin runner failed to log in with {token}")

    @Tool("say", brief_description="Log, print and write to stderr the text", parameters=TEXT)
    async def say(self, text: str, **kwargs: Any) -> str:
        self.ctx.logger.warning("said: %s", text)
        print(f"printed: {text}")
        os.write(2, f"stderr: {text}\n".encode())
        return "said"

    @Tool("die", brief_description="Write the text to stderr and exit", parameters=TEXT)
    async def die(self, text: str, **kwargs: Any) -> str:
        os.write(2, f"dying: {text}\n".encode())
        os._exit(3)


def create_plugin() -> SecretConfig:
    return SecretConfig()
