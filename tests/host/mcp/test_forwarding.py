"""CallForwarder: the calls answered beside the SDK's server session, and what still sees them.

The official MCP client talks to a RegistryMCPServer over the SDK's in-memory
pair of streams, with a CallForwarder between them as ``plughost serve
--mcp-stdio`` puts one; the registry holds the demo provider of
``tests/mcp_servers/plughost_launcher.py``. Forwarding over real processes is
tested in ``tests/integration/test_mcp_forwarding.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.message import SessionMessage

from plughost.mcp.forwarding import CallForwarder
from plughost.mcp.registry_server import RegistryMCPServer
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import ToolExecutionResult, ToolSpec
from tests.mcp_servers.plughost_launcher import DemoProvider

Observed = list[tuple[str | None, bool]]


@asynccontextmanager
async def served(**client_options: Any) -> AsyncIterator[tuple[Client, CallForwarder, Observed]]:
    registry = ToolRegistry()
    registry.register_provider(DemoProvider())
    observed: Observed = []

    def observe(spec: ToolSpec | None, result: ToolExecutionResult, seconds: float) -> None:
        observed.append((spec.name if spec is not None else None, result.success))

    registry.add_call_observer(observe)
    bridge = RegistryMCPServer(registry)
    forwarder = CallForwarder(bridge)
    to_server, from_client = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_client, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](0)

    @asynccontextmanager
    async def transport() -> AsyncIterator[tuple[Any, Any]]:
        yield from_server, to_server

    options = bridge.server.create_initialization_options()
    async with (
        bridge.running(),
        forwarder.serving(from_client, to_client) as (read, write),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(bridge.server.run, read, write, options)
        client_options.setdefault("mode", "legacy")
        async with Client(transport(), cache=None, **client_options) as client:
            yield client, forwarder, observed
        tg.cancel_scope.cancel()


async def sampling(context: Any, params: types.CreateMessageRequestParams) -> Any:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(text="ok"), model="test"
    )


def as_json(result: types.CallToolResult) -> Any:
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


async def test_calls_answered_beside_the_session_are_observed_by_the_registry() -> None:
    async with served() as (client, forwarder, observed):
        greeted = await client.call_tool("greet", {"name": "Ada"})
        refused = await client.call_tool("greet", {})
        unknown = await client.call_tool("no_such_tool", {})

    assert greeted.content == [types.TextContent(text="Hello, Ada!")]
    assert refused.is_error and unknown.is_error
    assert forwarder.forwarded == 3
    assert observed == [("greet", True), ("greet", False), (None, False)]


async def elicitation(context: Any, params: Any) -> Any:
    return types.ElicitResult(action="decline")


@pytest.mark.parametrize("offer", ["sampling", "elicitation"])
async def test_a_client_that_can_be_asked_is_answered_by_the_session_alike(offer: str) -> None:
    calls = [("greet", {"name": "Ada"}), ("pixel", {}), ("explode", {}), ("crash", {})]
    callbacks = {"sampling": {"sampling_callback": sampling}}.get(offer) or {
        "elicitation_callback": elicitation
    }
    async with served() as (client, forwarder, _):
        quiet = [as_json(await client.call_tool(name, args)) for name, args in calls]
        taken_quiet = forwarder.forwarded
    async with served(**callbacks) as (client, forwarder, observed):
        asking = [as_json(await client.call_tool(name, args)) for name, args in calls]
        taken_asking = forwarder.forwarded

    assert (taken_quiet, taken_asking) == (4, 0)
    assert quiet == asking  # the same bytes either way
    assert [name for name, _ in observed] == ["greet", "pixel", "explode", "crash"]


async def test_a_client_that_set_a_log_level_is_answered_by_the_session_from_then_on() -> None:
    async with served() as (client, forwarder, _):
        await client.call_tool("greet", {"name": "Ada"})
        with pytest.warns(MCPDeprecationWarning):  # deprecated in 2026-07-28, current before
            await client.set_logging_level("info")
        await client.call_tool("greet", {"name": "Ada"})

    assert forwarder.forwarded == 1


async def test_a_2026_client_is_answered_by_the_session() -> None:
    async with served(mode="2026-07-28") as (client, forwarder, observed):
        greeted = await client.call_tool("greet", {"name": "Ada"})

    assert greeted.content == [types.TextContent(text="Hello, Ada!")]
    assert forwarder.forwarded == 0
    assert observed == [("greet", True)]
