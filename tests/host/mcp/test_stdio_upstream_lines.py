"""The stdio transport to an upstream server: every line read in bounded memory.

A real server process (a Python one-liner) writes to the transport's read stream;
the line limit is lowered for the test, so an over-long line costs a few MiB.
"""

from __future__ import annotations

import sys

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from plughost.mcp import stdio, stdio_server
from plughost.mcp.stdio import stdio_transport

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


async def test_a_line_over_the_limit_ends_the_servers_output_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stdio, "_LINE_LIMIT", LIMIT)
    # A line with no end that outgrows the limit, then a message that must never be read.
    program = f"sys.stdout.write('x' * {4 * LIMIT}); sys.stdout.write('\\n' + {PING!r} + '\\n')"

    got, reasons = await read_all(program)

    assert got == []
    assert len(reasons) == 1
    assert f"over {LIMIT} bytes" in reasons[0]


async def test_lines_up_to_the_limit_and_split_across_reads_arrive_whole(
    monkeypatch: pytest.MonkeyPatch,
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
