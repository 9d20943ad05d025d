"""A plugin whose tools misbehave in every way a runner must survive (or die of alone)."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from typing import Any

from plughost_sdk import Plugin, Tool


class Unserializable:
    pass


class FaultyPlugin(Plugin):
    @Tool("exit_mid_call", brief_description="os._exit in the middle of a call")
    async def exit_mid_call(self, **kwargs: Any) -> str:
        os._exit(13)

    @Tool("sigkill_mid_call", brief_description="SIGKILL itself in the middle of a call")
    async def sigkill_mid_call(self, **kwargs: Any) -> str:
        os.kill(os.getpid(), signal.SIGKILL)
        return "unreachable"

    @Tool("segfault", brief_description="Dereference a null pointer")
    async def segfault(self, **kwargs: Any) -> str:
        ctypes.string_at(0)
        return "unreachable"

    @Tool("hang_async", brief_description="Await forever")
    async def hang_async(self, **kwargs: Any) -> str:
        import asyncio

        await asyncio.Event().wait()
        return "unreachable"

    @Tool("busy_loop", brief_description="Spin on the event loop, holding the GIL")
    async def busy_loop(self, **kwargs: Any) -> str:
        while True:
            pass

    @Tool("busy_loop_sync", brief_description="Spin in a synchronous handler")
    def busy_loop_sync(self, **kwargs: Any) -> str:
        while True:
            pass

    @Tool("flood_stdout", brief_description="Print a flood of lines, then answer")
    async def flood_stdout(self, **kwargs: Any) -> str:
        for i in range(200_000):
            print(f"flood line {i}")
        sys.stdout.write("no newline at the end")
        return "flooded"

    @Tool("unserializable", brief_description="Return an object that cannot be sent")
    async def unserializable(self, **kwargs: Any) -> Any:
        return Unserializable()

    @Tool("unserializable_metadata", brief_description="Return a dict holding an object")
    async def unserializable_metadata(self, **kwargs: Any) -> Any:
        return {"content": "x", "thing": Unserializable()}

    @Tool("oversize", brief_description="Return far more than the message limit")
    async def oversize(self, **kwargs: Any) -> dict[str, Any]:
        blob = b"x" * (40 * 1024 * 1024)
        return {"content": "big", "content_items": [{"type": "binary", "bytes": blob}]}

    @Tool("slow_sync", brief_description="Sleep synchronously for 0.2 s")
    def slow_sync(self, **kwargs: Any) -> str:
        time.sleep(0.2)
        return "done"


def create_plugin() -> FaultyPlugin:
    return FaultyPlugin()
