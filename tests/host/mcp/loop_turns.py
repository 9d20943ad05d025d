"""Checks of where work runs on the event loop: without a turn given up, or outside any task."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import anyio.lowlevel


async def without_a_turn(step: Callable[[], Awaitable[object]]) -> bool:
    """Whether ``step`` finished before the event loop ran what was queued just before it."""
    order: list[str] = []
    asyncio.get_running_loop().call_soon(order.append, "turn")
    await step()
    order.append("done")
    await anyio.lowlevel.checkpoint()
    return order == ["done", "turn"]


def lane_hook(seen: list[str]) -> Callable[[bytes], bool]:
    """A line hook that takes the line ``lane`` and notes whether a task was running it.

    No task is running when the hook is called from a pipe transport's read
    callback, as :class:`plughost.mcp.pipe_lines.PipeLines` calls it.
    """

    def hook(line: bytes) -> bool:
        if line != b"lane":
            return False
        seen.append(f"hook in a task: {asyncio.current_task() is not None}")
        return True

    return hook
