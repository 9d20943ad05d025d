"""Tries to make the host spend CPU and memory on its output.

- ``flood``: write short lines straight to fd 1 (around the runner's capture) for a while;
- ``loggers``: send one ``log.batch`` whose records each name a new plugin;
- ``bomb``: send one frame of empty msgpack arrays (1 byte each on the wire).
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from plughost_sdk import Plugin, Tool, wire
from plughost_sdk.types import ToolParameterInfo, ToolParamType


def _flood(seconds: float) -> int:
    written, line = 0, b"flood flood flood flood flood flood flood\n"
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        os.write(1, line * 16)
        written += 16
    return written


class HostileOutput(Plugin):
    @Tool(
        "flood",
        brief_description="Write lines straight to fd 1",
        parameters=[ToolParameterInfo(name="seconds", param_type=ToolParamType.NUMBER)],
    )
    async def flood(self, seconds: float, **_: Any) -> dict[str, Any]:
        written = await asyncio.to_thread(_flood, seconds)
        return {"content": "flooded", "written": written}

    @Tool(
        "loggers",
        brief_description="Send log records under made-up plugin names",
        parameters=[ToolParameterInfo(name="count", param_type=ToolParamType.INTEGER)],
    )
    async def loggers(self, count: int, **_: Any) -> str:
        records = [
            {"level": 20, "logger": "x", "message": "hi", "plugin": f"ghost-{n}", "time": 0.0}
            for n in range(count)
        ]
        await self._send(wire.event("log.batch", {"records": records}))
        return "sent"

    @Tool(
        "bomb",
        brief_description="Send a frame of empty arrays",
        parameters=[ToolParameterInfo(name="count", param_type=ToolParamType.INTEGER)],
    )
    async def bomb(self, count: int, **_: Any) -> str:
        envelope = wire.event("log.batch", {"records": [[]] * count})
        frame = await asyncio.to_thread(wire.encode, envelope)  # keep its own loop beating
        await self.ctx._bridge._service._transport.send((frame,))
        return "sent"

    async def _send(self, envelope: wire.Envelope) -> None:
        await self.ctx._bridge._service._transport.send((wire.encode(envelope),))


def create_plugin() -> HostileOutput:
    return HostileOutput()
