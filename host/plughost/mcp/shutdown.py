"""How the MCP servers end without losing an answer: count calls, wait for the writes.

``plughost serve`` drains the host first (calls finish or are answered with
``shutting_down``); the servers then wait until every ``tools/call`` they were
answering has returned (:class:`CallCounter`) and, over stdio, until the SDK's
writer has written the last answer (:func:`written`), before they stop.

What does not live here: the servers (:mod:`plughost.mcp.server`).
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import anyio.lowlevel

__all__ = ["CallCounter", "stop_requested", "written"]


class CallCounter:
    """Counts the calls being answered; :meth:`quiet` waits until there are none."""

    def __init__(self) -> None:
        self._calls = 0
        self._quiet = asyncio.Event()
        self._quiet.set()

    def __enter__(self) -> None:
        self._calls += 1

    def __exit__(self, *exc: object) -> None:
        self._calls -= 1
        if not self._calls:
            self._quiet.set()

    async def quiet(self) -> None:
        """Wait until no call is being answered."""
        while self._calls:
            self._quiet.clear()
            await self._quiet.wait()


async def written(stream: Any, patience: float = 2.0) -> None:
    """Wait until the stdio writer has written every message handed to it (bounded).

    The SDK's write stream holds no buffer: a message is handed straight to the
    writer task, which writes and flushes it before it waits for the next one. So
    once no sender waits and the writer waits to receive, everything is out.
    """
    inner = getattr(stream, "_inner", stream)
    statistics = getattr(inner, "statistics", None)
    with anyio.move_on_after(patience):
        while True:
            for _ in range(8):  # let answers just returned by handlers reach the stream
                await anyio.lowlevel.checkpoint()
            if statistics is None:
                return
            state = statistics()
            if state.tasks_waiting_send == 0 and state.tasks_waiting_receive > 0:
                return
            await anyio.sleep(0.01)  # the writer is writing: look again shortly


async def stop_requested(stopped: anyio.Event, stopping: asyncio.Event) -> bool:
    """Wait until a server stops by itself (False) or ``stopping`` is set (True)."""
    requested = False
    async with anyio.create_task_group() as tg:

        async def wait_stopping() -> None:
            nonlocal requested
            await stopping.wait()
            requested = True
            tg.cancel_scope.cancel()

        async def wait_stopped() -> None:
            await stopped.wait()
            tg.cancel_scope.cancel()

        tg.start_soon(wait_stopping)
        tg.start_soon(wait_stopped)
    return requested
