"""A well-behaved plugin: echoes, sleeps, images, capability calls."""

from __future__ import annotations

import asyncio
import base64
import os
import time
from typing import Any

from plughost_sdk import Plugin, Tool, ToolError
from plughost_sdk.types import ToolParameterInfo, ToolParamType

PNG_1x1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg=="
)


class EchoPlugin(Plugin):
    @Tool(
        "echo",
        brief_description="Echo the text back",
        parameters=[ToolParameterInfo(name="text", param_type=ToolParamType.STRING)],
        core_tool=True,
        read_only=True,
    )
    async def echo(self, text: str, **kwargs: Any) -> dict[str, Any]:
        return {"content": text, "pid": os.getpid(), "stream_id": kwargs.get("stream_id", "")}

    @Tool(
        "sleep",
        brief_description="Sleep for a while, then answer",
        parameters=[ToolParameterInfo(name="seconds", param_type=ToolParamType.NUMBER)],
    )
    async def sleep(self, seconds: float, **kwargs: Any) -> str:
        await asyncio.sleep(seconds)
        return f"slept {seconds}"

    @Tool(
        "sync_sleep",
        brief_description="Sleep in a synchronous handler",
        parameters=[ToolParameterInfo(name="seconds", param_type=ToolParamType.NUMBER)],
    )
    def sync_sleep(self, seconds: float, **kwargs: Any) -> str:
        time.sleep(seconds)
        return f"slept {seconds}"

    @Tool(
        "image",
        brief_description="Return an image of the requested size in bytes",
        parameters=[
            ToolParameterInfo(name="size", param_type=ToolParamType.INTEGER, required=False)
        ],
    )
    async def image(self, size: int = 0, **kwargs: Any) -> dict[str, Any]:
        data = PNG_1x1 + b"\0" * max(0, size - len(PNG_1x1))
        return {
            "content": "an image",
            "content_items": [{"type": "image", "bytes": data, "mime_type": "image/png"}],
        }

    @Tool(
        "fail",
        brief_description="Fail on purpose with a message for the model",
        parameters=[ToolParameterInfo(name="message", param_type=ToolParamType.STRING)],
    )
    async def fail(self, message: str, **kwargs: Any) -> None:
        raise ToolError(message)

    @Tool("oops", brief_description="Raise an unexpected exception")
    async def oops(self, **kwargs: Any) -> None:
        raise KeyError("missing")

    @Tool(
        "say",
        brief_description="Send text to the current stream through ctx.send",
        parameters=[ToolParameterInfo(name="text", param_type=ToolParamType.STRING)],
    )
    async def say(self, text: str, stream_id: str = "", **kwargs: Any) -> dict[str, Any]:
        sent = await self.ctx.send.text(text, stream_id)
        return {"content": "sent", "sent": sent}

    @Tool(
        "use_capability",
        brief_description="Call any capability by name",
        parameters=[ToolParameterInfo(name="name", param_type=ToolParamType.STRING)],
    )
    async def use_capability(self, name: str, **kwargs: Any) -> dict[str, Any]:
        value = await self.ctx.call_capability(name, value=1)
        return {"content": "ok", "value": value}

    @Tool("config_value", brief_description="Return the plugin's configuration")
    async def config_value(self, **kwargs: Any) -> dict[str, Any]:
        return {"content": "config", "config": self.config.get_all()}

    @Tool("environment", brief_description="List the environment variable names the plugin sees")
    async def environment(self, **kwargs: Any) -> dict[str, Any]:
        return {"content": "env", "names": sorted(os.environ)}

    @Tool("shout", brief_description="Print to stdout and log, then answer")
    async def shout(self, **kwargs: Any) -> str:
        print("hello from print")
        self.ctx.logger.info("hello from the logger")
        return "shouted"


def create_plugin() -> EchoPlugin:
    return EchoPlugin()
