"""The server side of MCP over stdio: this process's stdin and stdout, read and written by the loop.

The SDK's ``stdio_server`` reads each line and writes (then flushes) each message
in a worker thread: three thread hand-offs per request and answer, a third of a
trivial call's time on a busy machine. When stdin and stdout are pipes or
sockets (as every MCP client that starts a server makes them), :func:`stdio_streams`
reads and writes them from the event loop instead, with asyncio's pipe
transports, and each message is written by the task that sends it (the answer
to a call goes into the pipe from the task that has it, with no writer task to
wake). Anything else (a terminal, a file) goes to the SDK's own transport.

It keeps the SDK's guard for the protocol stream: while serving, fd 0 reads
``/dev/null`` and fd 1 writes to stderr, so a handler or child process that reads
stdin gets EOF and stray output cannot corrupt the stream; the protocol uses
private duplicates of the two descriptors, and both are put back on exit, in
blocking mode again.

The first requests may have been answered before serve loaded the SDK
(:mod:`plughost.mcp.first_answers`): what the client wrote meanwhile is read
first, as if it had just arrived, and :class:`PipeWriter` drops the session's
answers to requests already answered (or, for a tool list that differs from the
one given, tells the client the list changed).

What does not live here: the server (:mod:`plughost.mcp.server`).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from plughost.mcp import first_answers
from plughost.mcp.pipe_lines import LineTooLongError, PipeLines
from plughost.mcp.stream_filters import EagerSend, eager_memory_stream

__all__ = ["stdio_streams"]

log = logging.getLogger(__name__)

_LINE_LIMIT = 256 * 1024 * 1024  # one JSON-RPC message, at most (bytes)
_FIRST = frozenset({"initialize", "tools/list"})
"""Requests whose first answers the next run gives before serving (first_answers)."""
_LIST_CHANGED = '{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}'


@contextlib.asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """Yield the (read stream, write stream) pair ``Server.run`` takes, over stdin and stdout."""
    early, given = first_answers.take()  # before anything else reads stdin
    if not (first_answers.is_pipe(0) and first_answers.is_pipe(1)):
        async with stdio_server() as streams:
            yield streams
        return
    with _claimed(0, _devnull) as in_fd, _claimed(1, _stderr) as out_fd:
        async with _pipe_streams(in_fd, out_fd, early, given) as streams:
            yield streams


def _devnull() -> int:
    return os.open(os.devnull, os.O_RDONLY)


def _stderr() -> int:
    return os.dup(2)


@contextlib.contextmanager
def _claimed(fd: int, diversion: Callable[[], int]) -> Any:
    """Serve ``fd`` from a private duplicate; point ``fd`` itself at ``diversion`` meanwhile."""
    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    diverted = diversion()
    try:
        os.dup2(diverted, fd)
    finally:
        os.close(diverted)
    try:
        yield private
    finally:
        with contextlib.suppress(OSError):
            os.set_blocking(private, True)  # the descriptor may be shared beyond this process
        os.dup2(private, fd)
        os.close(private)


@contextlib.asynccontextmanager
async def _pipe_streams(
    in_fd: int, out_fd: int, early: bytes = b"", given: first_answers.Given | None = None
) -> AsyncIterator[tuple[Any, Any]]:
    loop = asyncio.get_running_loop()
    # closefd=False: the descriptors are _claimed's to restore and close.
    in_file = os.fdopen(in_fd, "rb", buffering=0, closefd=False)
    out_file = os.fdopen(out_fd, "wb", buffering=0, closefd=False)
    write_pipe, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out_file)
    write_pipe.set_write_buffer_limits(high=0)  # drain() waits until the pipe took it all
    write_stream = PipeWriter(asyncio.StreamWriter(write_pipe, protocol, None, loop), given)
    # Split as the loop reads them: a call the lane takes wakes no task (pipe_lines).
    lines = PipeLines(lambda: write_stream.line_hook, limit=_LINE_LIMIT, final_line=True)
    if early:
        lines.data_received(early)  # written before serving began: read first, in order
    read_pipe, _ = await loop.connect_read_pipe(lambda: lines, in_file)
    # Eager: a message moves between the pipe's task and the session's with no extra turn.
    incoming, read_stream = eager_memory_stream[SessionMessage | Exception](0)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_read, lines, incoming, write_stream)
            yield read_stream, write_stream
            tg.cancel_scope.cancel()
    finally:
        write_stream.close()
        read_pipe.close()
        write_pipe.close()


async def _read(
    lines: PipeLines,
    incoming: EagerSend[SessionMessage | Exception],
    writer: PipeWriter,
) -> None:
    async with incoming:
        while line := await _next_line(lines):
            try:
                message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except ValueError as exc:
                await incoming.send(exc)
                continue
            if isinstance(message, types.JSONRPCRequest) and message.method in _FIRST:
                writer.watch(message)
            await incoming.send(SessionMessage(message))


async def _next_line(lines: PipeLines) -> bytes:
    try:
        return await lines.next() or b""
    except (LineTooLongError, ConnectionError, OSError) as exc:  # too long, or the pipe failed
        log.warning("mcp stdin unreadable, closing reason=%s", exc)
        return b""


class PipeWriter(anyio.abc.ObjectSendStream[SessionMessage]):
    """The session's write stream: each message is written to stdout by the task that sends it.

    A message goes into the pipe whole, in the order of the sends, and ``send``
    returns once the pipe took it (the transport buffers nothing past that). A
    cancelled sender raises before its message is written; once written, the
    message goes out even if the sender is cancelled while it waits.
    """

    def __init__(
        self, writer: asyncio.StreamWriter, given: first_answers.Given | None = None
    ) -> None:
        self._writer = writer
        self._senders = 0
        self._broken = False
        self._given = given or first_answers.Given()
        self.line_hook: Callable[[bytes], bool] | None = None
        """Sees each line the client writes first; True takes it from the session."""

    def watch(self, request: types.JSONRPCRequest) -> None:
        """Note an ``initialize`` or a ``tools/list`` with no cursor: the session's answers
        to the latest are the next run's first answers (:mod:`plughost.mcp.first_answers`)."""
        if self._given.path is None:
            return  # no memo to keep (an embedder's server): nothing is parsed again
        params = request.params or {}
        if not params.get("cursor") and type(request.id) in (str, int):
            self._given.watched[request.id] = request.method

    def _first_answer(self, message: types.JSONRPCMessage, data: str) -> str | None:
        """The line to write for the session's answer ``data``; None writes nothing."""
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            return data
        given = self._given
        method = given.watched.pop(message.id, None) if message.id is not None else None
        early = given.answers.pop(message.id, None) if message.id is not None else None
        if method is None and early is None:
            return data
        result = (
            json.loads(data).get("result") if isinstance(message, types.JSONRPCResponse) else None
        )
        if method is not None and result is not None:
            given.record(method, result)
        if early is None:
            return data
        answered, given_result = early
        if result == given_result:
            return None  # the client has this very answer already
        if answered == "tools/list":
            log.info("mcp tool list differs from the one given before serving; telling the client")
            return _LIST_CHANGED
        log.warning("mcp %s answered before serving differs from the session's", answered)
        return None

    def write_now(self, data: bytes) -> bool:
        """Put ``data`` into the pipe after what was sent before it, without waiting.

        False if the client's end is gone.
        """
        if self._broken:
            return False
        try:
            self._writer.write(data)
        except (ConnectionError, OSError) as exc:
            log.debug("mcp stdout closed reason=%s", exc)
            self._broken = True
            return False
        return True

    @property
    def pending(self) -> bool:
        """Whether a message handed to this stream is not yet all in the pipe."""
        return self._senders > 0 or self._writer.transport.get_write_buffer_size() > 0

    async def send(self, item: SessionMessage, /) -> None:
        """Write ``item`` as one line; wait until the pipe took it.

        Raises:
            anyio.BrokenResourceError: The client's end of the pipe is gone.
        """
        await anyio.lowlevel.checkpoint_if_cancelled()
        if self._broken:
            raise anyio.BrokenResourceError
        data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
        if self._given.watched or self._given.answers:
            line = self._first_answer(item.message, data)
            if line is None:
                return
            data = line
        self._senders += 1
        try:
            self._writer.write(data.encode() + b"\n")
            await self._writer.drain()
        except (ConnectionError, OSError) as exc:  # the client is gone
            log.debug("mcp stdout closed reason=%s", exc)
            self._broken = True
            raise anyio.BrokenResourceError from exc
        finally:
            self._senders -= 1

    def close(self) -> None:
        """Refuse every later send."""
        self._broken = True

    async def aclose(self) -> None:
        """Refuse every later send (the pipe is closed by whoever opened it)."""
        self.close()
