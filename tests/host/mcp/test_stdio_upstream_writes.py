"""The stdio transport to an upstream server: what is sent reaches the server's stdin at once.

A real server process (a Python one-liner) echoes its stdin to its stdout; the
transport writes each message in the sending task, straight into the pipe.
"""

from __future__ import annotations

import sys

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from plughost.mcp.stdio import stdio_transport
from tests.host.mcp.loop_turns import without_a_turn

ECHO = "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line); sys.stdout.flush()\n"
EXIT = "import sys\nsys.stdin.readline()\nsys.exit(3)\n"


def ping(n: int) -> SessionMessage:
    return SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=n, method="ping"))


async def test_a_message_is_written_to_the_server_without_a_turn_of_the_loop() -> None:
    with anyio.fail_after(20):
        async with stdio_transport(
            sys.executable, ["-c", ECHO], env=None, cwd=None, on_exit=lambda _: None
        ) as (read, write):
            assert await without_a_turn(lambda: write.send(ping(1)))
            await write.send(ping(2))
            got = [await read.receive(), await read.receive()]
    assert [item.message for item in got] == [ping(1).message, ping(2).message]


async def test_a_cancelled_sender_writes_nothing() -> None:
    with anyio.fail_after(20):
        async with stdio_transport(
            sys.executable, ["-c", ECHO], env=None, cwd=None, on_exit=lambda _: None
        ) as (read, write):
            with anyio.CancelScope() as scope:
                scope.cancel()
                await write.send(ping(1))
            await write.send(ping(2))
            got = await read.receive()
    assert got.message == ping(2).message


async def test_a_write_to_a_server_that_exited_fails_after_its_exit_is_reported() -> None:
    reasons: list[str] = []
    with anyio.fail_after(20):
        async with stdio_transport(
            sys.executable, ["-c", EXIT], env=None, cwd=None, on_exit=reasons.append
        ) as (read, write):
            await write.send(ping(1))
            with pytest.raises(anyio.EndOfStream):
                await read.receive()
            with pytest.raises(anyio.ClosedResourceError):
                await write.send(ping(2))
    assert reasons == ["command exited with code 3"]
