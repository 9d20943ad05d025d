"""A tool whose memory grows without bound, and one that leaks a little more on every call.

``grow`` allocates until the host kills the runner for passing ``limits.memory_mb``.
Without a limit it stops itself at ``max_mb`` and then holds what it took, like a
leak that never ends, until the host recycles the runner for its stuck call; the
cap only keeps the machine that runs the tests safe.
"""

from __future__ import annotations

import os
import time
from typing import Any

from plughost_sdk import Plugin, Tool
from plughost_sdk.types import ToolParameterInfo, ToolParamType

MB = 1 << 20
_leaked: list[bytes] = []


def _chunk(megabytes: int) -> bytes:
    return b"\x01" * (megabytes * MB)  # written, so the pages are really resident


class MemoryHog(Plugin):
    @Tool(
        "grow",
        brief_description="Allocate memory until stopped (or up to max_mb), then hold it",
        parameters=[
            ToolParameterInfo(name="max_mb", param_type=ToolParamType.INTEGER, required=False),
            ToolParameterInfo(name="step_mb", param_type=ToolParamType.INTEGER, required=False),
        ],
    )
    def grow(self, max_mb: int = 1536, step_mb: int = 16, **kwargs: Any) -> str:
        held: list[bytes] = []
        while len(held) * step_mb < max_mb:
            held.append(_chunk(step_mb))
        while True:  # the cap was reached: keep the memory until the runner is recycled
            time.sleep(0.05)

    @Tool(
        "leak",
        brief_description="Keep megabytes more on every call",
        parameters=[ToolParameterInfo(name="mb", param_type=ToolParamType.INTEGER)],
    )
    async def leak(self, mb: int, **kwargs: Any) -> dict[str, Any]:
        _leaked.append(_chunk(mb))
        return {"content": "leaked", "total_mb": len(_leaked) * mb}

    @Tool("memory", brief_description="Report the runner's resident memory")
    async def memory(self, **kwargs: Any) -> dict[str, Any]:
        with open(f"/proc/{os.getpid()}/statm") as statm:
            rss_pages = int(statm.read().split()[1])
        rss_mb = rss_pages * os.sysconf("SC_PAGE_SIZE") // MB
        return {"content": "memory", "rss_mb": rss_mb, "pid": os.getpid()}


def create_plugin() -> MemoryHog:
    return MemoryHog()
