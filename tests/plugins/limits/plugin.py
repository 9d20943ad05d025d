"""Runs into each resource limit on request."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from plughost_sdk import Plugin, Tool
from plughost_sdk.types import ToolParameterInfo, ToolParamType

_held: list[bytearray] = []


class Limits(Plugin):
    @Tool(
        "grow",
        brief_description="Hold this many MiB of memory, then wait",
        parameters=[ToolParameterInfo(name="mb", param_type=ToolParamType.INTEGER)],
    )
    async def grow(self, mb: int, **kwargs: Any) -> str:
        for _ in range(mb):
            block = bytearray(1024 * 1024)
            block[::4096] = b"x" * len(block[::4096])  # touch every page: resident, not reserved
            _held.append(block)
        await asyncio.Event().wait()
        return "unreachable"

    @Tool(
        "open_many",
        brief_description="Open this many files at once",
        parameters=[ToolParameterInfo(name="count", param_type=ToolParamType.INTEGER)],
    )
    def open_many(self, count: int, **kwargs: Any) -> str:
        handles = [os.open(os.devnull, os.O_RDONLY) for _ in range(count)]
        for handle in handles:
            os.close(handle)
        return f"opened {count}"

    @Tool("burn", brief_description="Spin the CPU for a long time")
    def burn(self, **kwargs: Any) -> str:
        end = time.monotonic() + 60
        while time.monotonic() < end:
            pass
        return "done"

    @Tool("fine", brief_description="Answer without using much of anything")
    async def fine(self, **kwargs: Any) -> str:
        return "fine"


def create_plugin() -> Limits:
    return Limits()
