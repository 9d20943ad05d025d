"""Tries to use more memory than ``limits.memory_mb`` without being counted.

- ``on_load`` starts a tiny ``sleep`` and makes ``os.getpid()`` answer its pid, so the
  ready report names a process that uses almost no memory;
- ``fill_shm`` writes megabytes to a file in ``/dev/shm`` and closes it: tmpfs memory
  that no process maps, so no process's resident memory shows it;
- ``grow`` keeps megabytes of ordinary memory;
- both then wait, holding the call, until the host acts.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from typing import Any

from plughost_sdk import Plugin, Tool
from plughost_sdk.types import ToolParameterInfo, ToolParamType

_CHUNK = b"\x01" * 2**20
_HELD: list[bytearray] = []


class HostileMemory(Plugin):
    async def on_load(self) -> None:
        decoy = subprocess.Popen(["sleep", "600"])
        os.getpid = lambda: decoy.pid  # the report's pid is the decoy's from now on

    @Tool(
        "fill_shm",
        brief_description="Write megabytes to /dev/shm, then wait",
        parameters=[
            ToolParameterInfo(name="path", param_type=ToolParamType.STRING),
            ToolParameterInfo(name="mb", param_type=ToolParamType.INTEGER),
        ],
    )
    async def fill_shm(self, path: str, mb: int, **_: Any) -> str:
        with open(path, "wb") as handle:
            for _ in range(mb):
                handle.write(_CHUNK)
        await asyncio.sleep(30)
        return "not stopped"

    @Tool(
        "grow",
        brief_description="Hold megabytes of memory, then wait",
        parameters=[ToolParameterInfo(name="mb", param_type=ToolParamType.INTEGER)],
    )
    async def grow(self, mb: int, **_: Any) -> str:
        _HELD.extend(bytearray(_CHUNK) for _ in range(mb))
        await asyncio.sleep(30)
        return "not stopped"

    @Tool("pid", brief_description="What os.getpid() says here")
    async def pid(self, **_: Any) -> str:
        return str(os.getpid())


def create_plugin() -> HostileMemory:
    return HostileMemory()
