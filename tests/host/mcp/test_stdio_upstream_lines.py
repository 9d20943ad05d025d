"""The stdio transport to an upstream server: every line read in bounded memory, and in order.

A real server process (a Python one-liner) writes to the transport's read stream;
the line limit is lowered for the test, so an over-long line costs a few MiB. The
pipe's lines are split by the transport's protocol (``plughost.mcp.pipe_lines``),
for a process started by the connection and one started early by serve alike.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import subprocess
import sys
from types import SimpleNamespace
from typing import Any, cast

import anyio
import anyio.abc
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from plughost.mcp import stdio, stdio_server
from plughost.mcp.adopted_process import AdoptedProcess
from plughost.mcp.stdio import stdio_transport
from tests.host.mcp.loop_turns import lane_hook
from tests.waiting import wait_until

LIMIT = 1 << 20
PING = '{"jsonrpc": "2.0", "id": 1, "method": "ping"}'


async def read_all(program: str) -> tuple[list[object], list[str]]:
    """What the session reads from a server running ``program``, and what on_exit heard."""
    reasons: list[str] = []
    got: list[object] = []
    script = f"import sys\n{program}\nsys.stdout.flush()\n"
    with anyio.fail_after(20):
        async with stdio_transport(
            sys.executable, ["-c", script], env=None, cwd=None, on_exit=reasons.append
        ) as (read, _write):
            async for item in read:
                got.append(item.message if isinstance(item, SessionMessage) else item)
    return got, reasons


@pytest.fixture(params=["lines", "chunks"])
def reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Read by the pipe's protocol, or chunk by chunk where that protocol cannot be taken over."""
    if request.param == "chunks":
        monkeypatch.setattr(stdio, "_stdout_pipe", lambda process: None)
    return str(request.param)


async def test_a_line_over_the_limit_ends_the_servers_output_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    monkeypatch.setattr(stdio, "_LINE_LIMIT", LIMIT)
    # A line with no end that outgrows the limit, then a message that must never be read.
    program = f"sys.stdout.write('x' * {4 * LIMIT}); sys.stdout.write('\\n' + {PING!r} + '\\n')"

    got, reasons = await read_all(program)

    assert got == []
    assert len(reasons) == 1
    assert f"over {LIMIT} bytes" in reasons[0]


async def test_a_line_over_the_limit_that_ends_within_one_read_is_refused(
    monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    monkeypatch.setattr(stdio, "_LINE_LIMIT", 1000)
    # One write: the whole line, its end and the next message arrive in one read.
    program = f"""
import json
long = json.dumps({{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {{"pad": "z" * 1500}}}})
sys.stdout.write(long + '\\n' + {PING!r} + '\\n')
"""

    got, reasons = await read_all(program)

    assert got == []
    assert len(reasons) == 1
    assert "over 1000 bytes" in reasons[0]


async def test_lines_up_to_the_limit_and_split_across_reads_arrive_whole(
    monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    monkeypatch.setattr(stdio, "_LINE_LIMIT", LIMIT)
    # Half the limit of padding, written in small writes: the line spans many reads.
    program = f"""
ping = {PING!r}
line = ping[:-1] + ', "params": {{"pad": "' + 'y' * {LIMIT // 2} + '"}}}}'
sys.stdout.write(ping + '\\n\\n  \\n')
for i in range(0, len(line), 4096):
    sys.stdout.write(line[i:i + 4096])
    sys.stdout.flush()
sys.stdout.write('\\n' + ping + '\\n')
"""

    got, _ = await read_all(program)

    assert [type(message) for message in got] == [types.JSONRPCRequest] * 3
    assert isinstance(got[1], types.JSONRPCRequest)
    assert got[1].params == {"pad": "y" * (LIMIT // 2)}


def test_the_limit_is_256_mib_as_serve_puts_on_its_own_clients_lines() -> None:
    assert stdio._LINE_LIMIT == stdio_server._LINE_LIMIT == 256 * 1024 * 1024


async def started(program: str, how: str) -> tuple[anyio.abc.Process, asyncio.StreamReader]:
    """A server running ``program``, started as a connection starts one (``anyio``) or as
    serve starts one early, before its loop runs (``early``); and its stdout's reader."""
    command = [sys.executable, "-c", f"import sys\n{program}\nsys.stdin.read()"]
    pipe = subprocess.PIPE
    if how == "early":
        early = subprocess.Popen(command, stdin=pipe, stdout=pipe, stderr=pipe)
        adopted = await AdoptedProcess.adopt(early)
        return adopted, adopted.stdout_pipe()[1]
    process = await anyio.open_process(command, stdin=pipe, stdout=pipe, stderr=pipe)
    return process, process._process.stdout  # type: ignore[attr-defined]


@pytest.mark.parametrize("how", ["anyio", "early"])
async def test_a_line_the_hook_takes_is_handled_as_the_loop_reads_it(how: str) -> None:
    # An answer on the direct lane is taken in the pipe's read callback, with no task woken;
    # the session still gets the line after it.
    program = f"sys.stdin.readline(); print('lane'); print({PING!r}); sys.stdout.flush()"
    process, _ = await started(program, how)
    seen: list[str] = []
    with anyio.fail_after(20):
        async with stdio_transport(
            sys.executable, [], env=None, cwd=None, on_exit=lambda _: None, adopted=process
        ) as (read, write):
            write.line_hook = lane_hook(seen)
            assert write.write_now(b"\n", False)
            item = await read.receive()
    assert isinstance(item, SessionMessage)
    assert seen == ["hook in a task: False"]


@pytest.mark.parametrize("how", ["anyio", "early"])
async def test_what_a_server_wrote_before_its_output_was_read_comes_first(how: str) -> None:
    # An early-launched server (mcp.early_launch) may answer before its transport reads it:
    # those bytes wait in the process's own reader, and are read first, whole and in order,
    # the half line among them completed by what the server writes next.
    ping = json.loads(PING)
    first, second = json.dumps({**ping, "id": 1}), json.dumps({**ping, "id": 2})
    program = (
        f"print({first!r}); sys.stdout.write({second[:10]!r}); sys.stdout.flush(); "
        f"sys.stdin.readline(); print({second[10:]!r}); sys.stdout.flush()"
    )
    process, reader = await started(program, how)
    buffered = reader._buffer  # type: ignore[attr-defined]
    await wait_until(lambda: len(buffered) > len(first) + 1, timeout=20, what="the early output")
    got: list[object] = []
    with anyio.fail_after(20):
        async with stdio_transport(
            sys.executable, [], env=None, cwd=None, on_exit=lambda _: None, adopted=process
        ) as (read, write):
            write.line_hook = lambda line: False
            assert write.write_now(b"\n", False)
            async for item in read:
                assert isinstance(item, SessionMessage)
                assert isinstance(item.message, types.JSONRPCRequest)
                got.append(item.message.id)
                if len(got) == 2:
                    break
    assert got == [1, 2]


async def test_a_line_read_just_before_the_reader_was_taken_over_still_arrives() -> None:
    # asyncio's subprocess transport hands what it read to the process's reader a turn of
    # the loop later: a line read in the turn the transport starts is still on its way then.
    program = f"sys.stdin.readline(); print({PING!r}); sys.stdout.flush()"
    process, _ = await started(program, "anyio")
    transport = process._transport  # type: ignore[attr-defined]
    stdout = transport.get_pipe_transport(1).get_extra_info("pipe").fileno()
    stdin = transport.get_pipe_transport(0).get_extra_info("pipe").fileno()
    os.write(stdin, b"\n")
    # Blocking the loop until the line can be read: the loop reads it in its next turn,
    # the turn in which the transport below starts.
    assert select.select([stdout], [], [], 20)[0], "the server did not write"
    await asyncio.sleep(0)
    with anyio.fail_after(20):
        async with stdio_transport(
            sys.executable, [], env=None, cwd=None, on_exit=lambda _: None, adopted=process
        ) as (read, _write):
            item = await read.receive()
    assert isinstance(item, SessionMessage)
    assert isinstance(item.message, types.JSONRPCRequest)


async def test_reading_stays_paused_when_what_was_read_early_fills_the_queue() -> None:
    # An early-launched server that wrote many lines before its output was read: they fill
    # the reader's queue, and the pipe must stay paused until the session drains it.
    program = 'sys.stdout.write(\'{"jsonrpc": "2.0", "method": "n"}\\n\' * 200)'
    process, reader = await started(program, "early")
    buffered = reader._buffer  # type: ignore[attr-defined]
    await wait_until(lambda: buffered.count(b"\n") == 200, timeout=20, what="the early output")
    pipe = cast(AdoptedProcess, process).stdout_pipe()[0]
    lines = await stdio._lines_of(process, cast(Any, SimpleNamespace(line_hook=None)))
    try:
        assert lines is not None
        assert isinstance(pipe, asyncio.ReadTransport)
        assert not pipe.is_reading()
    finally:
        await stdio._stop(process, "test", grace=1)
        await process.aclose()


async def test_a_line_over_the_limit_written_before_the_output_was_read_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An early-launched server's reader may hold a whole over-long line, ended: it is
    # refused as one arriving read by read is.
    monkeypatch.setattr(stdio, "_LINE_LIMIT", LIMIT)
    program = f"sys.stdout.write('x' * {2 * LIMIT} + '\\n' + {PING!r} + '\\n')"
    process, reader = await started(program, "early")
    buffered = reader._buffer  # type: ignore[attr-defined]
    await wait_until(lambda: buffered.endswith(b"\n"), timeout=20, what="the early output")
    reasons: list[str] = []
    got: list[object] = []
    with anyio.fail_after(20):
        async with stdio_transport(
            sys.executable, [], env=None, cwd=None, on_exit=reasons.append, adopted=process
        ) as (read, _write):
            async for item in read:
                got.append(item)
    assert got == []
    assert len(reasons) == 1
    assert f"over {LIMIT} bytes" in reasons[0]
