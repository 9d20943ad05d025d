"""Upstream MCP servers that die, restart or hang: no call runs twice, status tells the truth.

The recording server (official SDK) writes a line for every call start, so a test
can count how often a call really ran upstream.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from plughost.mcp.client import ServerState
from plughost.mcp.config import MCPServerConfig
from plughost.mcp.provider import MCPToolProvider
from plughost.mcp.server import serve_http
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import ToolExecutionResult, ToolInvocation
from tests.mcp_servers.harness import HERE, free_port, kill_server, server_pid, wait_for_port
from tests.waiting import wait_until

RECORDER = HERE / "recording_server.py"


class Recorder:
    """The recording server's log: one ``event label pid`` line per event."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def lines(self, event: str, label: str) -> list[str]:
        if not self.path.exists():
            return []
        text = self.path.read_text(encoding="utf-8")
        return [line for line in text.splitlines() if line.split()[:2] == [event, label]]

    def pid_of(self, label: str) -> int:
        return int(self.lines("start", label)[0].split()[2])


class HTTPRecorder:
    """The recording server over HTTP, in its own process group, restartable on its port."""

    def __init__(self, log: Path, mode: str) -> None:
        self.log, self.mode, self.port = log, mode, free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{'sse' if self.mode == 'sse' else 'mcp'}"

    def start(self) -> None:
        command = [sys.executable, str(RECORDER), str(self.log), self.mode, str(self.port)]
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        wait_for_port(self.port, process=self.process)

    def kill(self) -> None:
        kill_server(self.process, self.port)


@pytest.fixture
def recorder(tmp_path: Path) -> Recorder:
    log = tmp_path / "calls.log"
    log.touch()  # a file named in a stdio server's args: its sandbox lets it write there
    return Recorder(log)


@pytest.fixture
def http_recorder(recorder: Recorder) -> Iterator[HTTPRecorder]:
    """A recording server of the test's own, to kill and restart."""
    server = HTTPRecorder(recorder.path, "http")
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture(scope="module")
def shared_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HTTPRecorder]:
    """One recording server for the tests that leave it running (labels keep them apart)."""
    server = HTTPRecorder(tmp_path_factory.mktemp("shared") / "calls.log", "http")
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
async def stdio_provider(recorder: Recorder) -> AsyncIterator[MCPToolProvider]:
    config = MCPServerConfig(
        command=sys.executable, args=[str(RECORDER), str(recorder.path)], tool_timeout=20
    )
    provider = MCPToolProvider({"rec": config})
    try:
        yield provider
    finally:
        await provider.close()


async def call(provider: MCPToolProvider, name: str, **arguments: Any) -> ToolExecutionResult:
    return await provider.invoke(ToolInvocation(tool_name=name, arguments=arguments))


async def call_killed_midway(
    provider: MCPToolProvider, recorder: Recorder, kill: Any
) -> ToolExecutionResult:
    """Start a long call, kill the server once the call started there, return the outcome."""
    outcome: list[ToolExecutionResult] = []

    async def long_call() -> None:
        outcome.append(await call(provider, "mcp_rec_record", label="once", seconds=30))

    async with anyio.create_task_group() as tg:
        tg.start_soon(long_call)
        await wait_until(
            lambda: bool(recorder.lines("start", "once")), timeout=20, what="call start"
        )
        kill()
    return outcome[0]


async def test_a_stdio_call_killed_midway_fails_as_maybe_run_and_is_never_sent_again(
    stdio_provider: MCPToolProvider, recorder: Recorder
) -> None:
    await call(stdio_provider, "mcp_rec_whoami")  # connected

    def kill() -> None:
        os.kill(server_pid(str(recorder.path)), signal.SIGKILL)  # the host's pid of it

    result = await call_killed_midway(stdio_provider, recorder, kill)
    await wait_until(
        lambda: stdio_provider.status()["rec"].state is ServerState.DISCONNECTED,
        timeout=10,
        what="the status says disconnected",
    )
    status = stdio_provider.status()["rec"]
    after = await call(stdio_provider, "mcp_rec_record", label="after")

    assert not result.success
    assert result.error_code == "outcome_unknown"
    assert "may or may not have run" in result.error_message
    assert "killed by signal 9" in result.error_message
    assert len(recorder.lines("start", "once")) == 1
    assert "killed by signal 9" in status.reason
    assert after.success, after.error_message
    assert len(recorder.lines("start", "after")) == 1


async def test_an_http_call_killed_midway_is_not_sent_to_the_restarted_server(
    http_recorder: HTTPRecorder, recorder: Recorder
) -> None:
    provider = MCPToolProvider(
        {"rec": MCPServerConfig(url=http_recorder.url, tool_timeout=20, protocol="legacy")}
    )
    try:
        await call(provider, "mcp_rec_whoami")

        def kill_and_restart() -> None:
            http_recorder.kill()
            http_recorder.start()

        result = await call_killed_midway(provider, recorder, kill_and_restart)
        after = await call(provider, "mcp_rec_record", label="after")
    finally:
        await provider.close()

    assert not result.success
    assert result.error_code == "outcome_unknown", result.error_message
    assert len(recorder.lines("start", "once")) == 1
    assert after.success, after.error_message
    assert len(recorder.lines("start", "after")) == 1


async def _exit_reason_of_a_command_that_exits() -> str:
    """Connect a provider of its own to ``/bin/false``; the reason its status gives."""
    provider = MCPToolProvider({"false": MCPServerConfig(command="/bin/false", retry_delay=30)})
    try:
        await provider.list_tools()
        status = provider.status()["false"]
    finally:
        await provider.close()
    assert status.state is ServerState.FAILED
    return status.reason or ""


async def test_a_command_that_exits_is_reported_with_its_exit_code() -> None:
    # Repeated: the closed pipe and the exit status arrive in either order, and the
    # pipe first used to win as "Connection closed" in about one connect in twenty.
    # Forty providers, each with its own process, eight at a time: each connect is
    # its own race, and the others' work on the loop only varies its timing more.
    reasons: list[str] = []
    for _ in range(5):
        async with asyncio.TaskGroup() as tg:
            batch = [tg.create_task(_exit_reason_of_a_command_that_exits()) for _ in range(8)]
        reasons.extend(task.result() for task in batch)

    assert len(reasons) == 40
    assert set(reasons) == {"command exited with code 1"}


async def test_a_call_to_a_tool_of_a_server_that_is_down_says_the_server_is_down_and_why() -> None:
    config = MCPServerConfig(command="/bin/false", retry_delay=30)
    provider = MCPToolProvider({"false": config, "false_too": config})
    registry = ToolRegistry()
    registry.register_provider(provider)
    try:
        await registry.list_tools()  # neither connects: the live list has none of their tools
        down = await registry.invoke(ToolInvocation(tool_name="mcp_false_too_read", arguments={}))
        unknown = await registry.invoke(ToolInvocation(tool_name="mcp_nothing_x", arguments={}))
    finally:
        await registry.close()

    assert down.error_code == "server_unavailable"
    said = down.error_message or ""  # the longest server name that fits is the one named
    assert said.startswith("MCP server 'false_too' is unavailable: command exited with code 1")
    assert "next attempt in" in said
    assert unknown.error_code == "tool_not_found"  # a name of no server's is just unknown


async def test_a_name_two_servers_could_own_is_explained_by_the_one_that_is_down(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = MCPServerConfig(command="/bin/false", retry_delay=30)
    provider = MCPToolProvider({"a": config, "a_b": config})
    try:
        await provider.list_tools()  # both fail
        up = dataclasses.replace(provider.status()["a_b"], state=ServerState.CONNECTED)
        monkeypatch.setattr(provider._connections["a_b"], "status", lambda: up)
        # server a's tool b_x: a_b is up and does not list x, so the name can only be a's
        explained = provider.missing("mcp_a_b_x")
    finally:
        await provider.close()

    assert explained is not None and explained.error_code == "server_unavailable"
    assert (explained.error_message or "").startswith("MCP server 'a' is unavailable")


async def test_a_hung_server_does_not_hold_the_others_past_its_connect_timeout(
    shared_http: HTTPRecorder,
) -> None:
    # Ignores SIGTERM and a closed stdin: only SIGKILL stops it.
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    hung = MCPServerConfig(command=sys.executable, args=["-c", stubborn], connect_timeout=1)
    alone = MCPToolProvider({"rec": MCPServerConfig(url=shared_http.url)})
    try:
        started = time.monotonic()
        await alone.list_tools()
        rec_alone = time.monotonic() - started
    finally:
        await alone.close()
    provider = MCPToolProvider({"hung": hung, "rec": MCPServerConfig(url=shared_http.url)})
    try:
        started = time.monotonic()
        names = {spec.name for spec in await provider.list_tools()}
        elapsed = time.monotonic() - started
        await wait_until(
            lambda: provider.status()["hung"].state is ServerState.FAILED,
            timeout=5,
            what="the hung server is marked failed",
        )
        status = provider.status()["hung"]
    finally:
        await provider.close()

    assert "mcp_rec_record" in names
    # Given up at its connect timeout: its stop (SIGTERM ignored, then SIGKILL) is no
    # longer the listing's to wait for, nor is a server that never answers.
    bound = 2 * hung.connect_timeout + rec_alone
    assert elapsed < bound, f"{elapsed:.2f} s, the other alone {rec_alone:.2f} s"
    assert "connect_timeout" in status.reason


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_cancelling_a_call_cancels_it_on_the_upstream_server(
    transport: str, recorder: Recorder, request: pytest.FixtureRequest
) -> None:
    if transport == "stdio":
        config = MCPServerConfig(command=sys.executable, args=[str(RECORDER), str(recorder.path)])
    else:
        server: HTTPRecorder = request.getfixturevalue("shared_http")
        recorder = Recorder(server.log)
        config = MCPServerConfig(url=server.url, protocol="legacy")
    provider = MCPToolProvider({"rec": config})
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: call(provider, "mcp_rec_record", label="stop", seconds=30))
            await wait_until(
                lambda: bool(recorder.lines("start", "stop")), timeout=20, what="start"
            )
            tg.cancel_scope.cancel()
        await wait_until(
            lambda: bool(recorder.lines("cancelled", "stop")), timeout=10, what="upstream cancel"
        )
    finally:
        await provider.close()

    assert not recorder.lines("done", "stop")


async def test_an_upstream_servers_progress_is_relayed_through_plughosts_mcp_server(
    shared_http: HTTPRecorder,
) -> None:
    registry = ToolRegistry()
    registry.register_provider(MCPToolProvider({"rec": MCPServerConfig(url=shared_http.url)}))
    port, ready = free_port(), asyncio.Event()
    heard: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: serve_http(registry, port=port, ready=ready))
            with anyio.fail_after(10):
                await ready.wait()
            async with Client(f"http://127.0.0.1:{port}/mcp", cache=None) as client:
                result = await client.call_tool(
                    "mcp_rec_record", {"label": "steps", "steps": 3}, progress_callback=on_progress
                )
            tg.cancel_scope.cancel()
    finally:
        await registry.close()

    assert not result.is_error
    assert [(p, t) for p, t, _ in heard] == [(1, 3), (2, 3), (3, 3)]
    assert heard[0][2] == "step 1 of 3"
