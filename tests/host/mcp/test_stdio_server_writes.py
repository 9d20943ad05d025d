"""plughost's stdio MCP server writes each message from the task that sends it.

The loop-driven transport of :mod:`plughost.mcp.stdio_server` runs over a real
pipe here; the test reads the other end. :func:`plughost.mcp.shutdown.written`
is what a stopping server waits on before it closes the transport.
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.to_thread
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from plughost.mcp import stdio_server
from plughost.mcp.shutdown import written
from tests.host.mcp.loop_turns import lane_hook, without_a_turn


def ping(n: int, pad: str = "") -> SessionMessage:
    params = {"pad": pad} if pad else None
    return SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=n, method="ping", params=params))


def line(message: SessionMessage) -> bytes:
    return message.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"


@asynccontextmanager
async def served() -> AsyncIterator[tuple[stdio_server.PipeWriter, dict[str, int]]]:
    """The transport's write stream over fresh pipes, and the descriptors still open.

    ``fds["out"]`` is the read end of the server's stdout; a test that closes it
    takes it out of the dict first.
    """
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    fds = {"in_read": in_read, "in_write": in_write, "out": out_read, "out_write": out_write}
    try:
        async with stdio_server._pipe_streams(in_read, out_write) as (read, write), read:
            yield write, fds
    finally:
        for fd in fds.values():
            os.close(fd)


def read_exactly(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            break
        data += chunk
    return data


async def test_a_message_is_in_the_pipe_when_its_send_returns() -> None:
    with anyio.fail_after(10):
        async with served() as (write, fds):
            out = fds["out"]
            os.set_blocking(out, False)  # nothing may have to wait for the loop
            await write.send(ping(1))
            assert os.read(out, 1 << 16) == line(ping(1))


async def test_a_message_is_written_without_a_turn_of_the_loop() -> None:
    with anyio.fail_after(10):
        async with served() as (write, fds):
            assert await without_a_turn(lambda: write.send(ping(1)))
            await write.send(ping(2))
            expected = line(ping(1)) + line(ping(2))
            assert read_exactly(fds["out"], len(expected)) == expected


async def test_a_cancelled_sender_writes_nothing() -> None:
    with anyio.fail_after(10):
        async with served() as (write, fds):
            out = fds["out"]
            with anyio.CancelScope() as scope:
                scope.cancel()
                await write.send(ping(1))
            await write.send(ping(2))
            assert read_exactly(out, len(line(ping(2)))) == line(ping(2))


async def test_written_returns_once_a_message_larger_than_the_pipe_is_all_in_it() -> None:
    big = ping(1, "x" * (1 << 20))  # far more than a pipe holds
    release = threading.Event()
    with anyio.fail_after(20):
        async with served() as (write, fds), anyio.create_task_group() as tg:
            out = fds["out"]
            tg.start_soon(write.send, big)
            await anyio.wait_all_tasks_blocked()
            assert write.pending  # the sender waits for the reader

            def drain() -> bytes:
                release.wait()
                return read_exactly(out, len(line(big)))

            got: list[bytes] = []

            async def reader() -> None:
                got.append(await anyio.to_thread.run_sync(drain))

            tg.start_soon(reader)
            release.set()
            await written(write)
            assert not write.pending
    assert got == [line(big)]


async def test_a_send_after_the_reader_is_gone_fails_as_a_broken_stream() -> None:
    with anyio.fail_after(10):
        async with served() as (write, fds):
            os.close(fds.pop("out"))
            with pytest.raises(anyio.BrokenResourceError):
                await write.send(ping(1))
            with pytest.raises(anyio.BrokenResourceError):
                await write.send(ping(2))


async def test_a_client_line_the_hook_takes_is_handled_as_the_loop_reads_it() -> None:
    # A call on the direct lane is taken in the pipe's read callback, with no task woken;
    # the client's other lines reach the session, in order, after it.
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    seen: list[str] = []
    try:
        with anyio.fail_after(10):
            async with stdio_server._pipe_streams(in_read, out_write) as (read, write), read:
                write.line_hook = lane_hook(seen)
                os.write(in_write, b"lane\n" + line(ping(1)) + line(ping(2)))
                first, second = await read.receive(), await read.receive()
    finally:
        for fd in (in_read, in_write, out_read, out_write):
            os.close(fd)
    assert seen == ["hook in a task: False"]
    assert [first.message.id, second.message.id] == [1, 2]
