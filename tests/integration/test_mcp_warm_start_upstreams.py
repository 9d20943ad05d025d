"""During a warm start, a call waits only for its own upstream.

A real ``plughost serve --mcp-stdio`` gateway with two upstreams: ``time``
(mcp-server-time) and ``slow`` (tests/mcp_servers/gated_server.py), which
answers nothing until the test writes a line to its FIFO. A call to ``time``'s
tool that returns before the test has written that line ran while ``slow`` was
still starting: the order of events proves it, not timing. ``slow``'s
``connect_timeout`` outlasts the test's deadline, so a call that waited for
every upstream would not return in time. A call to ``slow`` when it cannot start
fails naming it and why, whether it comes while serve is starting or once serve
has gone live without it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import mcp_types as types
import pytest

from tests.mcp_servers.harness import HERE, PUBLISHED, plughost_client

GATED = HERE / "gated_server.py"
TIME = PUBLISHED / "bin" / "mcp-server-time"
DEADLINE = 60
CATALOGUE = "tool-catalogue.json"


def open_gate(folder: Path, line: str) -> None:
    """Write ``line`` to slow's FIFO; blocks until its server opens it to read."""
    with (folder / "gate").open("w", encoding="utf-8") as gate:
        gate.write(line + "\n")


def texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


async def live_start(config: Path) -> None:
    """Start once with slow let through, so the catalogue holds both upstreams' tools."""
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as group:
            group.start_soon(anyio.to_thread.run_sync, open_gate, config.parent, "go")
            async with plughost_client(config, None) as client:
                listed = [tool.name for tool in (await client.list_tools()).tools]
    assert "mcp_slow_note" in listed
    assert "mcp_time_get_current_time" in listed


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The gateway's configuration, after one live start; each test starts warm from it."""
    if not TIME.exists():
        pytest.fail("mcp-server-time is needed: run scripts/install_test_mcp_servers.sh")
    folder = tmp_path_factory.mktemp("upstreams")
    os.mkfifo(folder / "gate")
    (folder / "notes.log").touch()
    path = folder / "serve.toml"
    path.write_text(
        f"[host]\ndata_dir = {json.dumps(str(folder / 'data' / 'plugins'))}\n"
        f"temp_dir = {json.dumps(str(folder / 'temp'))}\n"
        "[search]\nenabled = false\n"
        f"[mcp.servers.time]\ncommand = {json.dumps(str(TIME))}\n"
        'args = ["--local-timezone", "UTC"]\n'
        f"[mcp.servers.slow]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = {json.dumps([str(GATED), str(folder / 'gate'), str(folder / 'notes.log')])}\n"
        f"connect_timeout = {DEADLINE * 2}\n"
        f"retry_delay = {DEADLINE * 2}\n"  # one that failed is not started again in a test
    )
    anyio.run(live_start, path)
    return path


@pytest.fixture(scope="module")
def saved(config: Path) -> bytes:
    return (config.parent / "data" / CATALOGUE).read_bytes()


@pytest.fixture
def warm(config: Path, saved: bytes) -> Path:
    """The configuration, with the catalogue the live start left (a start rewrites it)."""
    catalogue = config.parent / "data" / CATALOGUE
    catalogue.write_bytes(saved)
    catalogue.chmod(0o600)
    return config


async def test_a_call_to_a_connected_upstream_runs_while_another_is_still_starting(
    warm: Path,
) -> None:
    with anyio.fail_after(DEADLINE):
        async with plughost_client(warm, None) as client:
            fast = await client.call_tool("mcp_time_get_current_time", {"timezone": "UTC"})
            # slow reads its FIFO before its first message: it has not answered yet.
            await anyio.to_thread.run_sync(open_gate, warm.parent, "go")
            noted = await client.call_tool("mcp_slow_note", {"text": "after"})

    assert not fast.is_error, texts(fast)
    assert '"timezone": "UTC"' in texts(fast)[0]
    assert texts(noted) == ["noted: after"]


async def test_a_call_to_an_upstream_that_cannot_start_fails_naming_it_and_why(
    warm: Path,
) -> None:
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as group:
            group.start_soon(anyio.to_thread.run_sync, open_gate, warm.parent, "stop")
            async with plughost_client(warm, None) as client:
                result = await client.call_tool("mcp_slow_note", {"text": "never"})

    assert result.is_error
    [text] = texts(result)
    assert text.startswith("MCP server 'slow' is unavailable: ")
    assert "exited with code 1" in text
    assert "never" not in (warm.parent / "notes.log").read_text()
