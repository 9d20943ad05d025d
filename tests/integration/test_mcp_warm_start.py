"""``plughost serve --mcp-stdio`` answers from its tool catalogue while the plugins start.

A real ``plughost serve`` runs the ``gated_start`` test plugin, whose ``on_load``
finishes only once the test creates a file in its data directory. What the
client gets before the test creates that file was answered before the plugin
was up: the order of events proves it, not timing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from plughost.mcp.first_answers import folders_state
from tests.mcp_servers.harness import PUBLISHED, plughost_client, plughost_serve_http

PLUGIN = Path(__file__).resolve().parent.parent / "plugins" / "held" / "gated_start"
DEADLINE = 60


def write_config(root: Path) -> Path:
    """A copy of the plugin in ``root`` and a serve configuration of it."""
    shutil.copytree(PLUGIN, root / "plugins" / "gated_start")
    path = root / "serve.toml"
    path.write_text(
        f"[host]\nplugin_dirs = [{json.dumps(str(root / 'plugins'))}]\n"
        f"data_dir = {json.dumps(str(root / 'data' / 'plugins'))}\n"
        f"temp_dir = {json.dumps(str(root / 'temp'))}\n"
        "[search]\nenabled = false\n"
    )
    return path


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(tmp_path)


RUN_STATE = ("data", "temp")
"""What a serve run writes in a configuration's folder: catalogue, first-answers memo, gates."""


@pytest.fixture(scope="module")
def warmed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A folder for every warm start here, and the state of its plugin after its live start."""
    return {"config": write_config(tmp_path_factory.mktemp("warmed")), "plugins": None}


@pytest.fixture
def warm_config(warmed: dict[str, Any]) -> Path:
    """The shared folder as a live start (a real serve, the gate open) has just left it.

    The live start runs once, and again only if a test changed the plugin's
    folder (any file's size or change time). Before each test the run state is
    put back as that live start left it (its catalogue, its memo, the gate
    closed), so each test starts as if it had run the live start itself.
    """
    config: Path = warmed["config"]
    plugins, snapshot = config.parent / "plugins", config.parent / "snapshot"
    if warmed["plugins"] != folders_state([str(plugins)]):
        for name in ("plugins", *RUN_STATE, "snapshot"):
            shutil.rmtree(config.parent / name, ignore_errors=True)
        shutil.copytree(PLUGIN, plugins / "gated_start")
        assert asyncio.run(a_live_start(config)) == ["gated_echo"]
        for name in RUN_STATE:
            if (config.parent / name).exists():
                shutil.copytree(config.parent / name, snapshot / name)
        warmed["plugins"] = folders_state([str(plugins)])
        return config
    for name in RUN_STATE:
        shutil.rmtree(config.parent / name, ignore_errors=True)
        if (snapshot / name).exists():
            shutil.copytree(snapshot / name, config.parent / name)
    return config


def gate(config: Path) -> Path:
    """The file the plugin's on_load waits for."""
    return config.parent / "data" / "plugins" / "tests.gated_start" / "open"


def open_gate(config: Path) -> None:
    gate(config).parent.mkdir(parents=True, exist_ok=True)
    gate(config).touch()


class _Watched:
    """A client's write stream that sets ``sent`` once a ``method`` request has gone to the pipe."""

    def __init__(self, inner: Any, sent: asyncio.Event, method: str) -> None:
        self.inner = inner
        self.sent = sent
        self.method = method

    async def send(self, item: Any) -> None:
        await self.inner.send(item)
        message = getattr(item.message, "root", item.message)
        if getattr(message, "method", None) == self.method:
            self.sent.set()

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> _Watched:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@contextlib.asynccontextmanager
async def watched_stdio(
    config: Path, sent: asyncio.Event, method: str
) -> AsyncIterator[tuple[Any, Any]]:
    """``plughost serve --mcp-stdio`` whose client says when it has sent a ``method`` request."""
    args = ["-m", "plughost", "serve", "--no-watch", "--config", str(config), "--mcp-stdio"]
    async with stdio_client(StdioServerParameters(command=sys.executable, args=args)) as (
        read,
        write,
    ):
        yield read, _Watched(write, sent, method)


async def names(client: object) -> list[str]:
    return [tool.name for tool in (await client.list_tools()).tools]  # type: ignore[attr-defined]


async def a_live_start(config: Path) -> list[str]:
    """Start once with the gate open, so the catalogue holds the live list; then close it."""
    open_gate(config)
    async with plughost_client(config, None) as client:
        listed = await names(client)
    gate(config).unlink()
    assert (config.parent / "data" / "tool-catalogue.json").exists()
    return listed


async def test_a_warm_start_lists_tools_and_takes_a_call_before_the_plugin_is_up(
    warm_config: Path,
) -> None:
    config = warm_config  # the live start ran once, for the whole file

    sent = asyncio.Event()
    with anyio.fail_after(DEADLINE):
        transport = watched_stdio(config, sent, "tools/call")
        async with Client(transport, mode="legacy", cache=None) as client:
            before = await names(client)  # the plugin's on_load is still waiting
            assert not gate(config).exists()
            call = asyncio.ensure_future(client.call_tool("gated_echo", {"text": "hi"}))
            await sent.wait()
            # Sent after the call on the same pipe, and answered while the plugin is
            # still held: serve had read the call before the plugin was up.
            assert await names(client) == ["gated_echo"]
            open_gate(config)
            result = await call

    assert before == ["gated_echo"]
    assert not result.is_error
    assert [b.text for b in result.content if isinstance(b, types.TextContent)] == ["started: hi"]


async def test_a_call_to_an_upstream_tool_runs_while_a_plugin_is_still_starting(
    config: Path,
) -> None:
    time_server = PUBLISHED / "bin" / "mcp-server-time"
    if not time_server.exists():
        pytest.fail("mcp-server-time is needed: run scripts/install_test_mcp_servers.sh")
    with config.open("a") as file:
        file.write(
            f"[mcp.servers.time]\ncommand = {json.dumps(str(time_server))}\n"
            'args = ["--local-timezone", "UTC"]\n'
        )
    await a_live_start(config)

    with anyio.fail_after(DEADLINE):
        async with plughost_client(config, None) as client:
            result = await client.call_tool(
                "mcp_time_convert_time",
                {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
            )
            held = not gate(config).exists()  # the plugin's on_load is still waiting
            open_gate(config)

    assert held
    assert not result.is_error


async def test_a_warm_start_over_http_lists_tools_before_the_plugin_is_up(
    warm_config: Path,
) -> None:
    config = warm_config  # the live start ran once, for the whole file

    with anyio.fail_after(DEADLINE):
        token = config.parent / "token"
        with plughost_serve_http(token, "--config", str(config)) as served:
            async with plughost_client(config, served) as client:
                before = await names(client)  # the plugin's on_load is still waiting
                held = not gate(config).exists()
                open_gate(config)
                result = await client.call_tool("gated_echo", {"text": "hi"})

    assert held
    assert before == ["gated_echo"]
    assert [b.text for b in result.content if isinstance(b, types.TextContent)] == ["started: hi"]


class Pipes:
    """A ``plughost serve --mcp-stdio`` process spoken to in newline-delimited JSON-RPC."""

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process
        self.buffer = b""

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")

    async def answers(self) -> AsyncIterator[dict[str, Any]]:
        """Every message serve writes, until it closes stdout."""
        assert self.process.stdout is not None
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                yield json.loads(line)
            try:
                self.buffer += await self.process.stdout.receive()
            except anyio.EndOfStream:
                return


async def test_a_strict_warm_start_lists_the_catalogue_and_runs_no_call_before_refusing(
    warm_config: Path,
) -> None:
    config = warm_config  # the live start ran once, for the whole file
    fail = gate(config).with_name("fail")
    args = ["-m", "plughost", "serve", "--no-watch", "--strict", "--config", str(config)]

    with anyio.fail_after(DEADLINE):
        async with await anyio.open_process([sys.executable, *args, "--mcp-stdio"]) as process:
            pipes = Pipes(process)
            params = {"protocolVersion": "2025-11-25", "capabilities": {}}
            params["clientInfo"] = {"name": "test", "version": "1"}
            await pipes.send({"id": 1, "method": "initialize", "params": params})
            await pipes.send({"method": "notifications/initialized"})
            await pipes.send({"id": 2, "method": "tools/list"})
            call = {"name": "gated_echo", "arguments": {"text": "hi"}}
            await pipes.send({"id": 3, "method": "tools/call", "params": call})
            answered: dict[Any, Any] = {}
            async for message in pipes.answers():
                answered[message.get("id")] = message
                if message.get("id") == 2:  # listed while the plugin is held: fail it now
                    listed = [tool["name"] for tool in message["result"]["tools"]]
                    held = not gate(config).exists() and not fail.exists()
                    fail.parent.mkdir(parents=True, exist_ok=True)
                    fail.touch()
            code = await process.wait()

    assert held
    assert listed == ["gated_echo"]
    assert 3 not in answered  # the call was held, and the refused start ran nothing
    assert code == 3


# Last of the warm starts: it edits the plugin, after which the next warm start
# in this file would run the live start again.
async def test_a_changed_plugin_file_is_not_served_from_the_catalogue(warm_config: Path) -> None:
    config = warm_config  # the live start ran once, for the whole file
    source = config.parent / "plugins" / "gated_start" / "plugin.py"
    source.write_text(source.read_text().replace('"gated_echo"', '"gated_echo_v2"'))

    sent = asyncio.Event()
    with anyio.fail_after(DEADLINE):
        transport = watched_stdio(config, sent, "tools/list")
        async with Client(transport, mode="legacy", cache=None) as client:
            # Asked while the plugin is held: only the live list knows the new name.
            listing = asyncio.ensure_future(names(client))
            await sent.wait()
            open_gate(config)
            listed = await listing

    assert listed == ["gated_echo_v2"]


async def test_serve_over_http_on_a_port_in_use_says_so_before_any_plugin_starts(
    config: Path,
) -> None:
    args = ["-m", "plughost", "serve", "--no-watch", "--config", str(config)]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        token = ["--mcp-token-file", str(config.parent / "token")]
        with anyio.fail_after(DEADLINE):  # the plugin's gate never opens: no start ends
            done = await anyio.run_process(
                [sys.executable, *args, "--mcp-http", address, *token], check=False
            )

    assert done.returncode == 3
    assert "cannot serve MCP over HTTP" in done.stderr.decode()
    assert "in use" in done.stderr.decode()
