"""plughost's stdio MCP server keeps the protocol stream to itself.

The official client runs tests/mcp_servers/stray_output_server.py over pipes (the
loop-driven transport of plughost.mcp.stdio_server); its tool prints to stdout,
writes to fd 1 and reads fd 0.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import mcp_types as types
from mcp import Client, StdioServerParameters

from tests.mcp_servers.harness import HERE

SERVER = HERE / "stray_output_server.py"


async def test_stray_output_goes_to_stderr_and_stdin_reads_end_of_file(tmp_path: Path) -> None:
    stderr = tmp_path / "stderr.txt"
    command = f"exec {shlex.quote(sys.executable)} {shlex.quote(str(SERVER))} 2>{stderr}"
    params = StdioServerParameters(command="/bin/sh", args=["-c", command])
    async with Client(params, mode="legacy", cache=None) as client:
        first = await client.call_tool("stray", {})
        second = await client.call_tool("stray", {})  # the stream survived the first

    for result in (first, second):
        assert not result.is_error
        assert [c.text for c in result.content if isinstance(c, types.TextContent)] == ["read b''"]
    lines = stderr.read_text().splitlines()
    assert lines.count("stray print") == 2
    assert lines.count("stray write") == 2
