"""PipeLines: a pipe's lines, each offered to a hook as it is read, the rest handed on in order.

Reading a pipe through asyncio's ``StreamReader`` costs every line a wake-up of
the task that reads it, and a child process's output one more turn of the loop
before that (asyncio's subprocess transport passes each read on with
``call_soon``). A gateway call through ``plughost serve`` over stdio crosses two
pipes, its request on the client's and its answer on the upstream's: three of
the five turns of the loop such a call took were these hand-offs.

:class:`PipeLines` is the pipe transport's protocol itself. It splits what the
transport read into lines in the transport's own read callback and offers each
line to a hook there and then: a line the hook takes (a call on the direct lane,
or the answer to one: :mod:`plughost.mcp.direct_lane`) is handled with no task
woken. Any other line waits in a queue for the task that reads them
(:meth:`PipeLines.next`), which hands it to the session as before. Order is kept:
while an earlier line is queued, or is being handed on, a later one is queued
behind it and offered to the hook only when its turn comes. Reading pauses while
``_PAUSE_AT`` lines wait, so a session that falls behind holds the writer back
through the pipe, as a task that stopped reading would.

A line longer than its limit, a read that fails, or a hook that raises ends the
lines: :meth:`PipeLines.next` raises it, once every line before it has been
handed on, and the pipe is read no more.

What does not live here: which pipe, and what a line means
(:mod:`plughost.mcp.stdio`, :mod:`plughost.mcp.stdio_server`).
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from typing import NoReturn

__all__ = ["LineTooLongError", "PipeLines"]

_PAUSE_AT = 64  # lines waiting for the reading task past which the pipe is not read
_RESUME_AT = 16


class LineTooLongError(Exception):
    """The pipe carried more bytes than the limit without ending the line."""


class PipeLines(asyncio.Protocol):
    """The read side of one pipe, as lines (see the module doc).

    Args:
        hook: Returns the hook that sees each line first, or None for no hook
            (read at each line: the hook may be set after reading began). A line
            the hook returns True for is the hook's; any other goes to :meth:`next`.
        limit: The longest line, in bytes, without its end.
        final_line: Whether bytes after the last newline, at the end of the pipe,
            make a line too.
        inner: A protocol that is told when the pipe closes (the subprocess
            transport's own, so that it still learns its child's output ended).
    """

    def __init__(
        self,
        hook: Callable[[], Callable[[bytes], bool] | None],
        *,
        limit: int,
        final_line: bool,
        inner: asyncio.BaseProtocol | None = None,
    ) -> None:
        self._hook = hook
        self._limit = limit
        self._final_line = final_line
        self._inner = inner
        self._partial = bytearray()
        # Lines for the reading task, each with whether the hook has seen it already.
        self._queue: collections.deque[tuple[bytes, bool]] = collections.deque()
        self._handing_on = False  # the reading task holds a line it has not yet handed on
        self._ended = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._transport: asyncio.ReadTransport | None = None
        self._paused = False

    # --- the transport's side ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if isinstance(transport, asyncio.ReadTransport):
            self._transport = transport

    def data_received(self, data: bytes) -> None:
        """Split ``data`` into lines; offer each to the hook, or queue it."""
        if self._ended:
            return
        try:
            start = 0
            while (end := data.find(b"\n", start)) >= 0:
                if self._partial:  # the line began in an earlier read
                    self._partial += data[start:end]
                    line = bytes(self._partial)  # its own: the buffer is reused
                    self._partial.clear()
                else:  # all of it in this read: copied once, not twice
                    line = data[start:end]
                if len(line) > self._limit:  # a whole line in one read, a reader's early bytes
                    self._too_long()
                if line and not line.isspace():
                    self._line(line)
                start = end + 1
            self._partial += data[start:]
            if len(self._partial) > self._limit:
                self._too_long()
        except Exception as exc:  # raised to the reading task, after the lines before it
            self._pause()  # nothing more is read: whatever comes next would be dropped
            self._end(exc)
            return
        if len(self._queue) >= _PAUSE_AT:
            self._pause()
        self._wake()

    def eof_received(self) -> bool | None:
        self._end(None)
        return None  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._end(exc)
        if self._inner is not None:
            self._inner.connection_lost(exc)

    # --- the reading task's side -------------------------------------------------------------

    async def next(self) -> bytes | None:
        """The next line no hook took; None once the pipe ended.

        A line returned is being handed on until the next call: meanwhile every
        new line waits behind it.

        Raises:
            LineTooLongError: A line was over the limit.
            OSError: The pipe could not be read.
            Exception: What the hook raised.
        """
        self._handing_on = False
        while True:
            while self._queue:
                line, offered = self._queue.popleft()
                hook = None if offered else self._hook()
                if hook is not None and hook(line):
                    continue  # queued behind another line: the hook's all the same
                self._handing_on = True
                self._resume_if_drained()
                return line
            self._resume_if_drained()
            if self._error is not None:
                raise self._error
            if self._ended:
                return None
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    # --- inside ------------------------------------------------------------------------------

    def _line(self, line: bytes) -> None:
        if self._queue or self._handing_on:
            self._queue.append((line, False))  # offered to the hook in its turn
            return
        hook = self._hook()
        if hook is None or not hook(line):
            self._queue.append((line, True))

    def _too_long(self) -> NoReturn:
        raise LineTooLongError(
            f"a line over {self._limit} bytes, more than one JSON-RPC message may hold"
        )

    def _end(self, exc: BaseException | None) -> None:
        if self._ended:
            return
        if exc is None and self._final_line and self._partial and not self._partial.isspace():
            self._queue.append((bytes(self._partial), False))
        self._partial.clear()
        self._ended = True
        self._error = exc
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done() and (self._queue or self._ended):
            waiter.set_result(None)

    def _pause(self) -> None:
        if not self._paused and self._transport is not None and not self._ended:
            self._paused = True
            self._transport.pause_reading()

    def _resume_if_drained(self) -> None:
        if self._paused and len(self._queue) <= _RESUME_AT and not self._ended:
            self._paused = False
            if self._transport is not None:
                self._transport.resume_reading()
