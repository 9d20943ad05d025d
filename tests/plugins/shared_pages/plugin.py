"""Tools that say what a runner forked from the fork server has of its own.

A runner forked from the fork server shares the server's pages until it writes
to them; each page written is copied, and is the runner's own from then on
(``Private_Dirty`` in ``/proc/self/smaps_rollup``). ``collect`` reads that
figure, runs ``gc.collect()`` (every generation, as the collector does on its
own every so often) and reads it again. ``imported_here`` names the modules
this runner imported itself: the server freezes what it imported
(``gc.freeze``), so those are the modules the collector still sees.
"""

from __future__ import annotations

import gc
import os
import socket
import sys
from typing import Any

from plughost_sdk import Plugin, Tool


def private_dirty_kib() -> int:
    """This process's pages written since the fork (or never shared), in KiB."""
    with open("/proc/self/smaps_rollup", "rb") as rollup:  # bytes: no codec to import
        for line in rollup:
            if line.startswith(b"Private_Dirty:"):
                return int(line.split()[1])
    raise RuntimeError("no Private_Dirty line in /proc/self/smaps_rollup")


class SharedPages(Plugin):
    @Tool("collect", brief_description="Run a full garbage collection; report copied memory")
    async def collect(self, **kwargs: Any) -> dict[str, Any]:
        before = private_dirty_kib()
        gc.collect()
        after = private_dirty_kib()
        return {
            "content": "collected",
            "before_kib": before,
            "after_kib": after,
            "pid": os.getpid(),
        }

    @Tool("imported_here", brief_description="Name the modules this runner imported itself")
    async def imported_here(self, **kwargs: Any) -> dict[str, Any]:
        tracked = {id(o) for o in gc.get_objects() if type(o) is type(sys)}
        own = sorted(name for name, module in sys.modules.items() if id(module) in tracked)
        egress = getattr(socket.getaddrinfo, "__module__", "") == "plughost_runner.sandbox.egress"
        return {"content": "modules", "modules": own, "egress": egress}


def create_plugin() -> SharedPages:
    return SharedPages()
