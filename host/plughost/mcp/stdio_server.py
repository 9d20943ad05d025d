"""The server side of MCP over stdio: this process's stdin and stdout, read and written by the loop.

The SDK's ``stdio_server`` reads each line and writes (then flushes) each message
in a worker thread: three thread hand-offs per request and answer, a third of a
trivial call's time on a busy machine. When stdin and stdout are pipes or
sockets (as every MCP client that starts a server makes them), :func:`stdio_streams`
reads and writes them from the event loop instead, with asyncio's pipe
transports. Anything else (a terminal, a file) goes to the SDK's own transport.

It keeps the SDK's guard for the protocol stream: while serving, fd 0 reads
``/dev/null`` and fd 1 writes to stderr, so a handler or child process that reads
stdin gets EOF and stray output cannot corrupt the stream; the protocol uses
private duplicates of the two descriptors, and both are put back on exit, in
blocking mode again.

What does not live here: the server (:mod:`plughost.mcp.server`).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import stat
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from plughost.mcp.stream_filters import EagerReceive, EagerSend, eager_memory_stream

__all__ = ["stdio_streams"]

log = logging.getLogger(__name__)

_LINE_LIMIT = 256 * 1024 * 1024  # one JSON-RPC message, at most (bytes)


@contextlib.asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """Yield the (read stream, write stream) pair ``Server.run`` takes, over stdin and stdout."""
    if not (_is_pipe(0) and _is_pipe(1)):
        async with stdio_server() as streams:
            yield streams
        return
    with _claimed(0, _devnull) as in_fd, _claimed(1, _stderr) as out_fd:
        async with _pipe_streams(in_fd, out_fd) as streams:
            yield streams


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


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
async def _pipe_streams(in_fd: int, out_fd: int) -> AsyncIterator[tuple[Any, Any]]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_LINE_LIMIT)
    # closefd=False: the descriptors are _claimed's to restore and close.
    in_file = os.fdopen(in_fd, "rb", buffering=0, closefd=False)
    out_file = os.fdopen(out_fd, "wb", buffering=0, closefd=False)
    read_pipe, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), in_file
    )
    write_pipe, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out_file)
    write_pipe.set_write_buffer_limits(high=0)  # drain() waits until the pipe took it all
    writer = asyncio.StreamWriter(write_pipe, protocol, None, loop)
    # Eager: a message moves between the pipe's task and the session's with no extra turn.
    incoming, read_stream = eager_memory_stream[SessionMessage | Exception](0)
    write_stream, outgoing = eager_memory_stream[SessionMessage](0)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_read, reader, incoming)
            tg.start_soon(_write, writer, outgoing)
            yield read_stream, write_stream
            tg.cancel_scope.cancel()
    finally:
        read_pipe.close()
        write_pipe.close()


async def _read(
    reader: asyncio.StreamReader, incoming: EagerSend[SessionMessage | Exception]
) -> None:
    async with incoming:
        while line := await _readline(reader):
            if not line.strip():
                continue
            try:
                message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except ValueError as exc:
                await incoming.send(exc)
                continue
            await incoming.send(SessionMessage(message))


async def _readline(reader: asyncio.StreamReader) -> bytes:
    try:
        return await reader.readline()
    except (ValueError, ConnectionError, OSError) as exc:  # too long, or the pipe failed
        log.warning("mcp stdin unreadable, closing reason=%s", exc)
        return b""


async def _write(writer: asyncio.StreamWriter, outgoing: EagerReceive[Any]) -> None:
    async with outgoing:
        async for message in outgoing:
            data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
            try:
                writer.write(data.encode() + b"\n")
                await writer.drain()
            except (ConnectionError, OSError) as exc:  # the client is gone
                log.debug("mcp stdout closed reason=%s", exc)
                return
