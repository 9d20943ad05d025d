"""Helpers for the MCP tests: free ports and real server processes (HTTP, restartable)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import mcp_types

from tests.serving import serve_mcp_http

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DEMO_SERVER = HERE / "demo_server.py"
LAUNCHER = HERE / "plughost_launcher.py"
INSTALL_SCRIPT = ROOT / "scripts" / "install_test_mcp_servers.sh"
PUBLISHED = ROOT / ".venv-mcp-servers"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_is_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def recording_upstream_config(tmp_path: Path) -> tuple[Path, Path]:
    """A serve configuration whose one upstream is forwarding_server.py as ``fwd``.

    Connected with a handshake-era protocol (the session a server may ask through
    mid-call, and the one the direct lane serves); returns the configuration and the
    folder the upstream records its events in.
    """
    import json

    folder = tmp_path / "upstream"
    folder.mkdir()
    config = tmp_path / "plughost.toml"
    config.write_text(
        f"[host]\ndata_dir = {json.dumps(str(tmp_path / 'data'))}\n"
        f"[mcp.servers.fwd]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(HERE / 'forwarding_server.py'))}, {json.dumps(str(folder))}]\n"
        'protocol = "legacy"\n'
    )
    return config, folder


@contextlib.contextmanager
def plughost_serve_http(token_file: Path, *args: str) -> Iterator[tuple[str, str]]:
    """Run ``plughost serve ARGS --mcp-http`` on a port of its own; yield its URL and token."""
    with serve_mcp_http(token_file, "--no-watch", *args) as served:
        yield served.url, served.token


def wait_for_port(port: int, *, timeout: float = 15.0, process: subprocess.Popen[Any]) -> None:
    """Block until 127.0.0.1:port accepts connections; fail clearly on a deadline or exit."""
    deadline = time.monotonic() + timeout
    while not port_is_open(port):
        if process.poll() is not None:
            raise AssertionError(f"server exited with {process.returncode} before listening")
        if time.monotonic() > deadline:
            raise AssertionError(f"nothing listened on port {port} within {timeout} s")
        time.sleep(0.02)


def kill_server(process: subprocess.Popen[bytes] | None, port: int) -> None:
    """SIGKILL a server's process group and wait until its port is closed."""
    if process is not None and process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    deadline = time.monotonic() + 10
    while port_is_open(port):  # the listening socket dies with the process
        assert time.monotonic() < deadline, f"port {port} still open after kill"
        time.sleep(0.02)


class ServerProcess:
    """A test MCP server run over HTTP (or SSE) in a real subprocess, restartable on its port."""

    def __init__(self, script: Path, mode: str, port: int | None = None) -> None:
        self.script = script
        self.mode = mode
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        path = "/sse" if self.mode == "sse" else "/mcp"
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self) -> ServerProcess:
        self.process = subprocess.Popen(
            [sys.executable, str(self.script), self.mode, str(self.port)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_for_port(self.port, process=self.process)
        return self

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        deadline = time.monotonic() + 10
        while port_is_open(self.port):  # the listening socket dies with the process
            assert time.monotonic() < deadline, f"port {self.port} still open after kill"
            time.sleep(0.02)

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.kill()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is gone for our purposes.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().split()[2] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # reaped between the two looks
        return False


@contextlib.asynccontextmanager
async def plughost_client(
    config: Path, served: tuple[str, str] | None, *, mode: str = "legacy", **callbacks: Any
) -> AsyncIterator[Any]:
    """An official SDK ``Client`` of ``plughost serve --config CONFIG``.

    Over stdio (a ``plughost serve --mcp-stdio`` of its own) when ``served`` is None,
    else over streamable HTTP to ``served`` (the URL and token of
    :func:`plughost_serve_http`). ``callbacks`` go to ``Client`` as they are.
    """
    from mcp import Client, StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with contextlib.AsyncExitStack() as stack:
        target: Any
        if served is None:
            args = ["-m", "plughost", "serve", "--no-watch", "--config", str(config)]
            target = StdioServerParameters(command=sys.executable, args=[*args, "--mcp-stdio"])
        else:
            url, token = served
            headers = {"Authorization": f"Bearer {token}"}
            http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
            target = streamable_http_client(url, http_client=http)
        client = Client(target, mode=mode, cache=None, **callbacks)
        yield await stack.enter_async_context(client)


class Peer:
    """An MCP client's model and user (its callbacks), and what the server sent it."""

    def __init__(self) -> None:
        self.logs: list[mcp_types.LoggingMessageNotificationParams] = []
        self.updated: list[str] = []
        self.sampled: list[str] = []
        self.asked: list[str] = []

    async def sampling(
        self, context: Any, params: mcp_types.CreateMessageRequestParams
    ) -> mcp_types.CreateMessageResult:
        content = params.messages[0].content
        self.sampled.append(content.text if isinstance(content, mcp_types.TextContent) else "")
        return mcp_types.CreateMessageResult(
            role="assistant", content=mcp_types.TextContent(text="four"), model="test-model"
        )

    async def elicitation(
        self, context: Any, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        self.asked.append(params.message)
        return mcp_types.ElicitResult(
            action="accept", content={"username": "ada", "email": "ada@example.com"}
        )

    async def logging(self, params: mcp_types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    async def messages(self, message: Any) -> None:
        if isinstance(message, mcp_types.ResourceUpdatedNotification):
            self.updated.append(message.params.uri)


def server_pids(fragment: str) -> list[int]:
    """Host pids of the running MCP server processes whose command line has ``fragment``.

    A stdio server runs in a pid namespace of its own (it reports itself as pid
    2), under the sandbox's two helpers, whose command lines name it too; the
    server itself is the process that no longer runs the sandbox's launcher.
    Only this test process's descendants count: the same server started by a
    test in another worker is not this test's.
    """
    import psutil

    found = []
    for process in psutil.Process().children(recursive=True):
        try:
            line = " ".join(process.cmdline())
            ours = fragment in line and "plughost_runner.sandbox.launch" not in line
            if ours and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process.pid)
        except psutil.NoSuchProcess:
            continue  # ended since it was listed
    return found


def server_pid(fragment: str) -> int:
    """The host pid of the one running MCP server whose command line has ``fragment``."""
    pids = server_pids(fragment)
    if len(pids) != 1:
        raise AssertionError(f"expected one server process with {fragment!r}, found {pids}")
    return pids[0]
