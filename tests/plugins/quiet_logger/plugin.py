"""Does things while no call runs, when a file in its data directory tells it to.

``log-from-loop`` and ``log-from-thread``: log one line from a task on the
runner's event loop, or from a thread of its own. ``block-loop``: block the
runner's event loop for good (``time.sleep`` in a task). The watchers look
every 20 ms; the runner itself has nothing to do meanwhile. Its tool
``hold_gil`` holds the GIL for good (a regular expression that backtracks for
ages, in C), so that no thread of the runner runs, not even its pulse.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from pathlib import Path
from typing import Any

from plughost_sdk import Plugin, Tool


class QuietLogger(Plugin):
    async def on_load(self) -> None:
        self._stopping = threading.Event()
        self._task = asyncio.get_running_loop().create_task(self._watch_on_loop())
        self._thread = threading.Thread(target=self._watch_on_thread, daemon=True)
        self._thread.start()

    async def on_unload(self) -> None:
        self._stopping.set()
        self._task.cancel()

    def _told(self, name: str) -> bool:
        return Path(self.ctx.paths.data(name)).exists()

    async def _watch_on_loop(self) -> None:
        logged = False
        while True:
            if not logged and self._told("log-from-loop"):
                self.ctx.logger.info("logged from the loop while no call ran")
                logged = True
            if self._told("block-loop"):
                time.sleep(3600)  # blocks the runner's loop: on purpose
            await asyncio.sleep(0.02)

    def _watch_on_thread(self) -> None:
        while not self._stopping.wait(0.02):
            if self._told("log-from-thread"):
                self.ctx.logger.info("logged from a thread while no call ran")
                return

    @Tool("ping", brief_description="Answer pong")
    async def ping(self, **kwargs: Any) -> str:
        return "pong"

    @Tool("hold_gil", brief_description="Hold the GIL in C for good")
    async def hold_gil(self, **kwargs: Any) -> str:
        re.match(r"(a*)*b", "a" * 64)
        return "never"


def create_plugin() -> QuietLogger:
    return QuietLogger()
