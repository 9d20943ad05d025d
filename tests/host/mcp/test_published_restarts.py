"""server-everything (the reference TypeScript server) restarted between calls, on every transport.

Over streamable HTTP it answers a session it does not know with HTTP 400 "No valid
session ID provided" (the specification says 404): the lost session is noticed
either way and a new one started. Over SSE and stdio the end of the stream marks
the connection lost at once, before any call.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator

import psutil
import pytest

from plughost.mcp.client import ServerState
from plughost.mcp.config import MCPServerConfig
from plughost.mcp.provider import MCPToolProvider
from plughost_sdk.models import ToolExecutionResult, ToolInvocation
from tests.mcp_servers.harness import PUBLISHED, free_port, kill_server, server_pid, wait_for_port
from tests.waiting import wait_until

EVERYTHING = PUBLISHED / "node" / "node_modules" / ".bin" / "mcp-server-everything"


@pytest.fixture(scope="module", autouse=True)
def _everything_installed() -> None:
    if not EVERYTHING.exists():
        pytest.fail(f"{EVERYTHING} is missing: run scripts/install_test_mcp_servers.sh")
    if shutil.which("node") is None:
        pytest.fail("node is needed to run @modelcontextprotocol/server-everything")


class Everything:
    """server-everything over SSE or streamable HTTP, restartable on its port."""

    def __init__(self, mode: str) -> None:
        self.mode, self.port = mode, free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{'sse' if self.mode == 'sse' else 'mcp'}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["node", str(EVERYTHING), self.mode],
            env={**os.environ, "PORT": str(self.port)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_for_port(self.port, process=self.process)

    def kill(self) -> None:
        kill_server(self.process, self.port)


@pytest.fixture(params=["sse", "streamableHttp"])
def everything(request: pytest.FixtureRequest) -> Iterator[Everything]:
    server = Everything(request.param)
    server.start()
    try:
        yield server
    finally:
        server.kill()


async def echo(provider: MCPToolProvider, text: str) -> ToolExecutionResult:
    return await provider.invoke(
        ToolInvocation(tool_name="mcp_ev_echo", arguments={"message": text})
    )


async def test_a_restarted_http_server_everything_serves_the_next_call(
    everything: Everything, caplog: pytest.LogCaptureFixture
) -> None:
    provider = MCPToolProvider({"ev": MCPServerConfig(url=everything.url, tool_timeout=15)})
    try:
        first = await echo(provider, "a")
        everything.kill()
        if everything.mode == "sse":  # its event stream ended: lost at once
            await wait_until(
                lambda: provider.status()["ev"].state is ServerState.DISCONNECTED,
                timeout=10,
                what="the SSE connection is marked lost",
            )
        everything.start()

        second = await echo(provider, "b")
        status = provider.status()["ev"]
    finally:
        await provider.close()

    assert first.content == "Echo: a"
    assert second.success, second.error_message
    assert second.content == "Echo: b"
    assert status.state is ServerState.CONNECTED
    if everything.mode == "streamableHttp":
        reconnects = [r.getMessage() for r in caplog.records if "reconnecting" in r.getMessage()]
        assert any("No valid session ID provided (HTTP 400)" in m for m in reconnects), reconnects


async def test_a_killed_stdio_server_everything_is_marked_lost_and_restarted() -> None:
    config = MCPServerConfig(command="node", args=[str(EVERYTHING)])
    provider = MCPToolProvider({"ev": config})
    try:
        first = await echo(provider, "a")
        server = psutil.Process(server_pid("mcp-server-everything"))
        server.kill()
        await wait_until(
            lambda: provider.status()["ev"].state is ServerState.DISCONNECTED,
            timeout=10,
            what="the stdio connection is marked lost",
        )
        lost = provider.status()["ev"]

        second = await echo(provider, "b")
    finally:
        await provider.close()

    assert first.content == "Echo: a"
    assert "killed by signal 9" in lost.reason
    assert second.content == "Echo: b"
