"""Tools that deadlock: two threads taking two locks in opposite order, and a lock on the loop."""

from __future__ import annotations

import threading
from typing import Any

from plughost_sdk import Plugin, Tool


class DeadlockPlugin(Plugin):
    @Tool("deadlock_sync", brief_description="Deadlock a worker thread on two locks (ABBA)")
    def deadlock_sync(self, **kwargs: Any) -> str:
        first, second = threading.Lock(), threading.Lock()
        both_hold_one = threading.Barrier(2)

        def take(outer: threading.Lock, inner: threading.Lock) -> None:
            with outer:
                both_hold_one.wait()  # each thread now holds the lock the other one wants
                with inner:
                    pass

        threading.Thread(target=take, args=(second, first), daemon=True).start()
        take(first, second)
        return "unreachable"

    @Tool("deadlock_on_loop", brief_description="Block the runner's event loop on a held lock")
    async def deadlock_on_loop(self, **kwargs: Any) -> str:
        held = threading.Lock()
        held.acquire()
        held.acquire()  # never returns: the loop stops here (the runner's pulse thread goes on)
        return "unreachable"

    @Tool("alive", brief_description="Answer at once")
    async def alive(self, **kwargs: Any) -> str:
        return "alive"


def create_plugin() -> DeadlockPlugin:
    return DeadlockPlugin()
