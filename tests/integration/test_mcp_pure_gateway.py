"""``plughost serve`` with only an ``[mcp]`` table: a gateway with no plugins serves.

A real ``plughost serve`` process whose configuration names upstream MCP servers
and no plugin folder is driven by the official MCP client over stdio and
streamable HTTP; with neither plugins nor servers, serve refuses to start and
says what to pass.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import mcp_types as types
import psutil
import pytest

from tests.mcp_servers.harness import PUBLISHED, plughost_client, plughost_serve_http
from tests.processes import command_line

TIME_SERVER = PUBLISHED / "bin" / "mcp-server-time"


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not TIME_SERVER.exists():
        pytest.fail("mcp-server-time is needed: run scripts/install_test_mcp_servers.sh")
    path = tmp_path_factory.mktemp("gateway") / "up.toml"
    path.write_text(
        f"[mcp.servers.time]\ncommand = {json.dumps(str(TIME_SERVER))}\n"
        'args = ["--local-timezone", "UTC"]\n'
    )
    return path


@pytest.fixture(scope="module")
def http_server(config: Path) -> Iterator[tuple[str, str]]:
    with plughost_serve_http(config.parent / "token", "--config", str(config)) as served:
        yield served


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_serve_with_only_mcp_servers_serves_their_tools(
    transport: str, config: Path, request: pytest.FixtureRequest
) -> None:
    served = request.getfixturevalue("http_server") if transport == "http" else None
    async with plughost_client(config, served) as client:
        listed = sorted(t.name for t in (await client.list_tools()).tools)
        result = await client.call_tool(
            "mcp_time_convert_time",
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
        )

    assert [n for n in listed if n.startswith("mcp_")] == [
        "mcp_time_convert_time",
        "mcp_time_get_current_time",
    ]
    assert not result.is_error
    text = "".join(b.text for b in result.content if isinstance(b, types.TextContent))
    assert json.loads(text)["target"]["datetime"].endswith("T21:00:00+09:00")


async def test_a_pure_gateway_starts_no_fork_server_for_runners_it_never_needs(
    config: Path,
) -> None:
    async with plughost_client(config, None) as client:
        # A call, not a listing: a warm start lists its tools before its upstream is up.
        await client.call_tool("mcp_time_get_current_time", {"timezone": "UTC"})
        # The client's own child: a child of serve between its fork and its exec still
        # shows serve's command line.
        serve = [
            p
            for p in psutil.Process().children()
            if str(config) in command_line(p) and "--mcp-stdio" in command_line(p)
        ]
        assert len(serve) == 1, serve
        below = [" ".join(command_line(p)) for p in serve[0].children(recursive=True)]

    assert any("mcp-server-time" in line for line in below), below
    assert not any("plughost_runner.forkserver" in line for line in below), below


def test_a_pure_gateway_says_so_at_start_and_watches_no_folder(config: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "plughost", "serve", "--config", str(config)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert process.stderr is not None
    reader = threading.Thread(target=lambda: [lines.put(line) for line in process.stderr])
    reader.start()
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 60
        # Up to the start-up summary, after which a watcher would start at once; then
        # everything it prints until SIGTERM has stopped it.
        while not any("plugin" in line.lower() and "Ctrl-C" in line for line in seen):
            seen.append(lines.get(timeout=max(0.0, deadline - time.monotonic())))
    finally:
        process.terminate()
        process.wait(30)
        reader.join(10)
        process.stderr.close()
    while not lines.empty():
        seen.append(lines.get_nowait())
    printed = "".join(seen)

    assert "No plugin folders: serving the upstream MCP servers only" in printed
    assert "plugin(s) loaded" not in printed
    assert "nothing to watch" not in printed


def test_serve_with_neither_plugins_nor_mcp_servers_says_what_to_pass(tmp_path: Path) -> None:
    empty = tmp_path / "empty.toml"
    empty.write_text("[serve]\nlog_format = 'text'\n")

    done = subprocess.run(
        [sys.executable, "-m", "plughost", "serve", "--config", str(empty), "--mcp-stdio"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 2
    assert "nothing to serve" in done.stderr
    assert "[mcp.servers]" in done.stderr and "--plugins" in done.stderr
