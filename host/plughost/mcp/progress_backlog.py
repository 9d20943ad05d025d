"""ProgressBacklog: a call's progress reports waiting for its MCP client, in bounded memory.

A tool's reports (a plugin's ``ctx.report_progress``, an upstream server's
``notifications/progress``) arrive as fast as the tool sends them; the client
takes them as fast as it reads. All of them go out, in order, while the client
keeps up. One that falls behind (its stdout pipe full, its SSE stream unread)
would otherwise make the host keep every report a tool sends, without a bound:
the backlog keeps the newest :data:`PENDING_REPORTS` and drops the oldest, since
a report supersedes those before it (progress only grows). The newest report
is never dropped, and all that are kept go before the result.

What does not live here: the server that relays them
(:mod:`plughost.mcp.registry_server`).
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Awaitable, Callable
from typing import Final

from plughost.tools.progress import Progress

__all__ = ["PENDING_REPORTS", "ProgressBacklog"]

log = logging.getLogger(__name__)

PENDING_REPORTS: Final = 1024
"""Reports kept for a client that has yet to take them; past that, the oldest go."""


class ProgressBacklog:
    """The reports of one call not yet sent: the newest :data:`PENDING_REPORTS`, in order."""

    def __init__(self) -> None:
        self._reports: collections.deque[Progress] = collections.deque(maxlen=PENDING_REPORTS)
        self._ready = asyncio.Event()
        self._closed = False

    def put(self, report: Progress) -> None:
        """Queue ``report``; the oldest waiting one goes if the backlog is full."""
        if not self._closed:
            self._reports.append(report)
            self._ready.set()

    def close(self) -> None:
        """No more reports come: :meth:`relay` ends once it has sent those kept."""
        self._closed = True
        self._ready.set()

    async def relay(self, send: Callable[[Progress], Awaitable[None]]) -> None:
        """Send each kept report in order until :meth:`close`; a failed send is skipped."""
        while True:
            while self._reports:
                report = self._reports.popleft()
                try:
                    await send(report)
                except Exception as exc:  # the client went away: the call itself goes on
                    log.debug("mcp progress not sent reason=%s", exc)
            if self._closed:
                return
            self._ready.clear()
            await self._ready.wait()
