"""How the MCP servers end without losing an answer: count calls, wait for the writes.

``plughost serve`` drains the host first (calls finish or are answered with
``shutting_down``); the servers then wait until every ``tools/call`` they were
answering has returned (:class:`CallCounter`) and, over stdio, until the SDK's
writer has written the last answer (:func:`written`), before they stop. Over
HTTP the server also waits until its clients fell quiet (:class:`HttpActivity`):
an SDK client that receives a call's answer often asks one more thing before it
hands the answer to its caller (``tools/list``, to validate the result against
the tool's output schema), and a listener closed under that request would cost
the caller an answer the server had already sent.

What does not live here: the servers (:mod:`plughost.mcp.server`).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import anyio
import anyio.lowlevel
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["CallCounter", "HttpActivity", "stop_requested", "written"]

HTTP_SETTLE = 0.5  # seconds without a request before a stopping HTTP server closes


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


class HttpActivity:
    """Tracks an ASGI app's HTTP requests, so that a server stops only once clients fell quiet.

    Long-lived ``GET`` streams (server-to-client notifications) do not count:
    they end only when the server does.
    """

    def __init__(self) -> None:
        self._requests = 0
        self._last = time.monotonic()

    def wrap(self, app: ASGIApp) -> ASGIApp:
        """``app``, counting its HTTP requests other than ``GET``."""

        async def counted(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http" or scope.get("method") == "GET":
                await app(scope, receive, send)
                return
            self._requests += 1
            self._last = time.monotonic()
            try:
                await app(scope, receive, send)
            finally:
                self._requests -= 1
                self._last = time.monotonic()

        return counted

    async def settled(self, quiet: float = HTTP_SETTLE, patience: float = 2.0) -> None:
        """Wait (at most ``patience`` s) until no request ran for ``quiet`` seconds."""
        with anyio.move_on_after(patience):
            while True:
                idle = time.monotonic() - self._last
                if not self._requests and idle >= quiet:
                    return
                await anyio.sleep(max(0.02, quiet - idle) if not self._requests else 0.02)


async def written(stream: Any, patience: float = 2.0) -> None:
    """Wait until the stdio transport has written every message handed to it (bounded).

    On pipes, each message is written by the task that sends it, and the stream
    says whether some message is not yet all in the pipe (``pending``). The SDK's
    own transport holds no buffer either: a message is handed straight to its
    writer task, which writes and flushes it before it waits for the next one; so
    once no sender waits and the writer waits to receive, everything is out.
    """
    inner = getattr(stream, "_inner", stream)
    with anyio.move_on_after(patience):
        while True:
            for _ in range(8):  # let answers just returned by handlers reach the stream
                await anyio.lowlevel.checkpoint()
            if _written(inner):
                return
            await anyio.sleep(0.01)  # a message is being written: look again shortly


def _written(stream: Any) -> bool:
    pending = getattr(stream, "pending", None)
    if isinstance(pending, bool):
        return not pending
    statistics = getattr(stream, "statistics", None)
    if statistics is None:
        return True
    state = statistics()
    return bool(state.tasks_waiting_send == 0 and state.tasks_waiting_receive > 0)


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
