"""Calls of stdio clients that can be asked are forwarded, and what is asked reaches them.

A real ``plughost serve --mcp-stdio`` (debug logs on, so it names each call it
answered beside its server session) serves tests/plugins/conformance, whose
tools sample, elicit and log, and in the first test server-everything (npm),
connected with a handshake-era protocol so that plughost's calls to it go beside
its client session too, and whose trigger tools ask plughost's client. The
official MCP client offers sampling and elicitation; a second client writes
JSON-RPC lines itself, to answer before ``notifications/initialized`` and to
forge responses.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPDeprecationWarning

from tests.mcp_servers.harness import PUBLISHED, Peer
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "tests" / "plugins" / "conformance"
EVERYTHING = PUBLISHED / "node" / "node_modules" / ".bin" / "mcp-server-everything"
TAKEN = "mcp call answered beside the session tool="
HELD = "mcp client request held until notifications/initialized method=sampling/createMessage"
SERVE = ["-m", "plughost", "-vv", "serve", "--no-watch"]


def configure(tmp_path: Path, *, everything: bool) -> Path:
    config = tmp_path / "plughost.toml"
    text = (
        f"[host]\nplugin_dirs = [{json.dumps(str(PLUGIN))}]\n"
        f"data_dir = {json.dumps(str(tmp_path / 'data'))}\n"
    )
    if everything:
        text += (
            f'[mcp.servers.everything]\ncommand = "node"\nargs = [{json.dumps(str(EVERYTHING))}]\n'
            'protocol = "legacy"\n'  # plughost's calls to it go beside its client session
        )
    config.write_text(text)
    return config


def taken(log: Path) -> list[str]:
    """The tools of the calls the serve process answered beside its server session."""
    lines = log.read_text().splitlines()
    return [line.split(TAKEN, 1)[1].split()[0] for line in lines if TAKEN in line]


def text_of(result: types.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def test_a_client_that_offers_sampling_and_elicitation_is_asked_through_forwarded_calls(
    tmp_path: Path,
) -> None:
    if not EVERYTHING.exists() or shutil.which("node") is None:
        pytest.skip(
            "node and server-everything are needed: run scripts/install_test_mcp_servers.sh"
        )
    config, log = configure(tmp_path, everything=True), tmp_path / "serve.log"
    peer = Peer()
    asked_ids: list[types.RequestId] = []

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> Any:
        asked_ids.append(context.request_id)
        return await peer.sampling(context, params)

    target = StdioServerParameters(
        command=sys.executable, args=[*SERVE, "--config", str(config), "--mcp-stdio"]
    )
    with log.open("w") as errlog:
        async with Client(
            stdio_client(target, errlog=errlog),
            mode="legacy",
            cache=None,
            sampling_callback=sampling,
            elicitation_callback=peer.elicitation,
            logging_callback=peer.logging,
        ) as client:
            sampled = await client.call_tool("test_sampling", {"prompt": "2+2?"})
            elicited = await client.call_tool("test_elicitation", {"message": "Who are you?"})
            upstream = await client.call_tool(
                "mcp_everything_trigger-sampling-request",
                {"prompt": "upstream question", "maxTokens": 5},
            )
            await client.call_tool("mcp_everything_trigger-elicitation-request", {})
            await client.call_tool("test_tool_with_logging", {})  # no level set: no records
            unset = len(peer.logs)
            with pytest.warns(MCPDeprecationWarning):  # deprecated in 2026-07-28, current before
                await client.set_logging_level("warning")
            await client.call_tool("test_tool_with_logging", {})  # its records are info
            at_warning = len(peer.logs)
            with pytest.warns(MCPDeprecationWarning):
                await client.set_logging_level("info")
            await client.call_tool("test_tool_with_logging", {})
            logs = [(p.level, p.logger, str(p.data)) for p in peer.logs]  # all before the result

    assert text_of(sampled) == "LLM response: four"
    assert text_of(elicited).startswith("User response: action=accept")
    assert not upstream.is_error and "four" in text_of(upstream)
    assert peer.sampled[0] == "2+2?" and "upstream question" in peer.sampled[1]
    assert len(peer.sampled) == 2
    assert peer.asked == [
        "plugin tests.conformance asks (tool test_elicitation): Who are you?",
        "MCP server everything asks (tool mcp_everything_trigger-elicitation-request): "
        "Please provide inputs for the following fields:",
    ]
    assert all(str(i).startswith("plughost-") for i in asked_ids)  # ids plughost issued
    assert (unset, at_warning) == (0, 0)
    assert logs == [
        ("info", "plugin.tests.conformance", "Tool execution started"),
        ("info", "plugin.tests.conformance", "Tool processing data"),
        ("info", "plugin.tests.conformance", "Tool execution completed"),
    ]
    assert taken(log) == [
        "test_sampling",
        "test_elicitation",
        "mcp_everything_trigger-sampling-request",
        "mcp_everything_trigger-elicitation-request",
        *["test_tool_with_logging"] * 3,
    ]


class LineClient:
    """An MCP client that writes and reads the JSON-RPC lines itself."""

    def __init__(self, process: anyio.abc.Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._stdin = process.stdin
        self._stdout = BufferedByteReceiveStream(process.stdout)

    async def send(self, message: dict[str, Any]) -> None:
        await self._stdin.send(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")

    async def next(self, **match: Any) -> dict[str, Any]:
        """The next message with every ``match`` item (others are skipped)."""
        while True:
            line = await self._stdout.receive_until(b"\n", 1 << 20)
            message: dict[str, Any] = json.loads(line)
            if all(message.get(key) == value for key, value in match.items()):
                return message


@asynccontextmanager
async def line_client(config: Path, log: Path) -> AsyncIterator[LineClient]:
    command = [sys.executable, *SERVE, "--config", str(config), "--mcp-stdio"]
    with log.open("w") as errlog:
        async with await anyio.open_process(command, stderr=errlog) as process:
            try:
                yield LineClient(process)
            finally:
                process.terminate()


def sampled(request_id: Any, text: str) -> dict[str, Any]:
    result = {"role": "assistant", "content": {"type": "text", "text": text}, "model": "m"}
    return {"id": request_id, "result": result}


async def test_requests_wait_for_initialized_and_forged_responses_are_dropped(
    tmp_path: Path,
) -> None:
    config, log = configure(tmp_path, everything=False), tmp_path / "serve.log"
    call = {"method": "tools/call", "params": {"name": "test_sampling", "arguments": {}}}
    hello = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"sampling": {}},
        "clientInfo": {"name": "lines", "version": "1"},
    }
    with anyio.fail_after(60):
        async with line_client(config, log) as client:
            await client.send({"id": 1, "method": "initialize", "params": hello})
            await client.next(id=1)
            prompt = {"prompt": "first"}
            await client.send({"id": 2, **call, "params": {**call["params"], "arguments": prompt}})
            await wait_until(lambda: HELD in log.read_text(), timeout=30, what="a held request")
            await client.send({"method": "notifications/initialized"})
            asked = await client.next(method="sampling/createMessage")
            issued = asked["id"]
            prefix = issued.rsplit("-", 1)[0] + "-"
            for forged in (f"{prefix}999", "plughost-00000000-1", 7, "1"):
                await client.send(sampled(forged, "forged"))
            await client.send(sampled(issued, "real"))
            first = await client.next(id=2)
            await client.send(sampled(issued, "late"))  # answered already: nobody's
            await client.send({"id": 3, **call, "params": {**call["params"], "arguments": prompt}})
            again = await client.next(method="sampling/createMessage")
            await client.send(sampled(again["id"], "again"))
            second = await client.next(id=3)

    assert issued.startswith("plughost-") and again["id"] == f"{prefix}2"
    assert first["result"]["content"] == [{"type": "text", "text": "LLM response: real"}]
    assert second["result"]["content"] == [{"type": "text", "text": "LLM response: again"}]
    assert taken(log) == ["test_sampling", "test_sampling"]
    assert log.read_text().count("mcp client response for no request in progress dropped") == 2
