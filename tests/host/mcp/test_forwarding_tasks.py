"""CallForwarder: each call taken runs in a task the forwarder owns, ended with it.

A client's lines go straight to a CallForwarder in front of a RegistryMCPServer
(as in ``plughost serve --mcp-stdio``), over eager streams that hold them, so
that a call and its cancel reach the forwarder in one go.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from plughost.mcp.forwarding import CallForwarder
from plughost.mcp.registry_server import RegistryMCPServer
from plughost.mcp.stream_filters import EagerReceive, EagerSend, eager_memory_stream
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import ToolExecutionResult, ToolInvocation, ToolSpec
from tests.host.mcp.test_forwarding import forwarded_by

HELLO = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "lines", "version": "1"},
}


class WaitingProvider:
    """``wait`` runs until cancelled; ``echo`` answers with its text."""

    provider_name = "waiting"
    provider_type = "builtin"

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.ended = anyio.Event()

    async def list_tools(self, context: Any = None) -> list[ToolSpec]:
        text = {"type": "object", "properties": {"text": {"type": "string"}}}
        return [
            ToolSpec(name="wait", description="wait"),
            ToolSpec(name="echo", description="echo", parameters_schema=text),
        ]

    async def invoke(self, invocation: ToolInvocation, context: Any = None) -> ToolExecutionResult:
        if invocation.tool_name == "echo":
            arguments = invocation.arguments
            text = arguments.get("text") if isinstance(arguments, dict) else None
            return ToolExecutionResult(tool_name="echo", content=str(text))
        self.started.set()
        try:
            await anyio.sleep_forever()
        finally:
            self.ended.set()
        raise AssertionError("unreachable")

    async def close(self) -> None:
        pass


@asynccontextmanager
async def lines_to(
    provider: WaitingProvider, forwarder_of: list[CallForwarder]
) -> AsyncIterator[tuple[EagerSend[Any], EagerReceive[Any]]]:
    """The client's end of a served forwarder: (its lines in, the server's messages out)."""
    registry = ToolRegistry()
    registry.register_provider(provider)
    bridge = RegistryMCPServer(registry)
    forwarder = CallForwarder(bridge)
    forwarder_of.append(forwarder)
    to_server, from_client = eager_memory_stream[SessionMessage | Exception](100)
    to_client, from_server = eager_memory_stream[SessionMessage | Exception](100)
    try:
        async with forwarded_by(bridge, forwarder, from_client, to_client):
            await send(to_server, {"id": 1, "method": "initialize", "params": HELLO})
            await until_answered(from_server, 1)
            await send(to_server, {"method": "notifications/initialized"})
            yield to_server, from_server
    finally:
        for stream in (to_server, from_client, to_client, from_server):
            stream.close()


async def send(stream: EagerSend[Any], line: dict[str, Any]) -> None:
    message = types.jsonrpc_message_adapter.validate_python({"jsonrpc": "2.0", **line})
    await stream.send(SessionMessage(message))


async def until_answered(stream: EagerReceive[Any], request_id: int) -> list[Any]:
    """The server's messages up to and with the answer to ``request_id``."""
    seen: list[Any] = []
    with anyio.fail_after(10):
        while not seen or getattr(seen[-1], "id", None) != request_id:
            item = await stream.receive()
            assert isinstance(item, SessionMessage)
            seen.append(item.message)
    return seen


def call(request_id: int, tool: str, **arguments: Any) -> dict[str, Any]:
    params = {"name": tool, "arguments": arguments}
    return {"id": request_id, "method": "tools/call", "params": params}


async def test_a_call_cancelled_before_its_task_ran_is_never_answered_and_frees_its_id() -> None:
    forwarder: list[CallForwarder] = []
    async with lines_to(WaitingProvider(), forwarder) as (to_server, from_server):
        await send(to_server, call(2, "echo", text="first"))  # both read in one go
        await send(to_server, {"method": "notifications/cancelled", "params": {"requestId": 2}})
        await send(to_server, call(2, "echo", text="second"))
        await send(to_server, call(3, "echo", text="third"))
        seen = await until_answered(from_server, 3)

    answers = [m for m in seen if isinstance(m, types.JSONRPCResponse)]
    assert [(m.id, m.result["content"][0]["text"]) for m in answers] == [
        (2, "second"),
        (3, "third"),
    ]
    assert forwarder[0].forwarded == 3


async def test_a_call_still_running_when_serving_ends_is_cancelled_and_waited_for() -> None:
    provider = WaitingProvider()
    forwarder: list[CallForwarder] = []
    with anyio.fail_after(10):
        async with lines_to(provider, forwarder) as (to_server, _):
            await send(to_server, call(2, "wait"))
            await provider.started.wait()
        assert provider.ended.is_set()  # ended before serving returned
    assert forwarder[0].forwarded == 1
