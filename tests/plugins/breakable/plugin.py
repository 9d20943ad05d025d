"""Healthy, or broken at the stage named in the ``fault.txt`` next to this file.

Tests copy this folder, write ``fault.txt`` and (re)load it: ``import`` raises
while importing, ``on_load_raise`` and ``on_load_hang`` fail in ``on_load``,
``on_load_block`` blocks the runner's event loop in ``on_load`` (so no heartbeat),
``crash_after_load`` loads and then kills its runner, every time it starts.
No file (or an empty one) is a healthy plugin.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from plughost_sdk import Plugin, Tool

_FAULT_FILE = Path(__file__).with_name("fault.txt")
FAULT = _FAULT_FILE.read_text().strip() if _FAULT_FILE.exists() else ""
CRASH_EXIT_CODE = 21

if FAULT == "import":
    raise RuntimeError("breakable: broken at import, as fault.txt asks")


class Breakable(Plugin):
    async def on_load(self) -> None:
        if FAULT == "on_load_raise":
            raise ConnectionError("breakable: on_load failed, as fault.txt asks")
        if FAULT == "on_load_hang":
            await asyncio.Event().wait()
        if FAULT == "on_load_block":
            time.sleep(3600)  # blocks the whole loop: only the host's watchdog can end it
        if FAULT == "crash_after_load":
            asyncio.get_running_loop().call_later(0.3, os._exit, CRASH_EXIT_CODE)

    @Tool("state", brief_description="Say which fault this copy was loaded with, and its pid")
    async def state(self, **kwargs: Any) -> dict[str, Any]:
        return {"content": FAULT or "healthy", "pid": os.getpid()}


def create_plugin() -> Breakable:
    return Breakable()
