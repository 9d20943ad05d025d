"""CallForwarder: the calls answered beside the SDK's server session, and what still sees them.

The official MCP client talks to a RegistryMCPServer over the SDK's in-memory
pair of streams, with a CallForwarder between them as ``plughost serve
--mcp-stdio`` puts one; the registry holds the demo provider of
``tests/mcp_servers/plughost_launcher.py``, and where a test asks the client
something, the ``AskingProvider`` here. Forwarding over real processes is
tested in ``tests/integration/test_mcp_forwarding.py``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import SessionMessage

from plughost.mcp import forwarding
from plughost.mcp.forwarding import CallForwarder
from plughost.mcp.registry_server import RegistryMCPServer
from plughost.mcp.stream_filters import eager_memory_stream
from plughost.tools.client_link import ClientRequestError, current_client
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import ToolExecutionResult, ToolInvocation, ToolSpec
from tests.mcp_servers.plughost_launcher import DemoProvider

Observed = list[tuple[str | None, bool]]


@asynccontextmanager
async def served(
    *providers: Any, **client_options: Any
) -> AsyncIterator[tuple[Client, CallForwarder, Observed]]:
    registry = ToolRegistry()
    for provider in (DemoProvider(), *providers):
        registry.register_provider(provider)
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

    async with forwarded_by(bridge, forwarder, from_client, to_client):
        client_options.setdefault("mode", "legacy")
        async with Client(transport(), cache=None, **client_options) as client:
            yield client, forwarder, observed


@asynccontextmanager
async def forwarded_by(
    bridge: RegistryMCPServer, forwarder: CallForwarder, from_client: Any, to_client: Any
) -> AsyncIterator[None]:
    """The bridge's server behind the forwarder, as ``plughost serve`` runs it."""
    options = bridge.server.create_initialization_options()
    async with (
        bridge.running(),
        forwarder.serving(from_client, to_client) as (read, write),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(bridge.server.run, read, write, options)
        yield
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
async def test_a_client_that_can_be_asked_is_answered_beside_the_session_alike(offer: str) -> None:
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

    assert (taken_quiet, taken_asking) == (4, 4)
    assert quiet == asking  # the same bytes either way
    assert [name for name, _ in observed] == ["greet", "pixel", "explode", "crash"]


class AskingProvider:
    """Tools that ask the client of the call: its model, its user, its log."""

    provider_name = "asking"
    provider_type = "builtin"

    async def list_tools(self, context: Any = None) -> list[ToolSpec]:
        return [ToolSpec(name=name, description=name) for name in ("ask", "form", "chatter")]

    async def invoke(self, invocation: ToolInvocation, context: Any = None) -> ToolExecutionResult:
        name = invocation.tool_name
        link = current_client.get()
        if link is None:
            return ToolExecutionResult.failure(name, "no client", "tool_error")
        try:
            if name == "ask":
                answer = await link.generate({"messages": [{"role": "user", "content": "2+2?"}]})
                return ToolExecutionResult(tool_name=name, content=answer["text"])
            if name == "form":
                schema = {"type": "object", "properties": {"who": {"type": "string"}}}
                reply = await link.elicit("plugin t.asking", "Who?", schema)
                return ToolExecutionResult(tool_name=name, content=reply["action"])
        except ClientRequestError as exc:
            return ToolExecutionResult.failure(name, str(exc), "tool_error")
        for level in (logging.INFO, logging.WARNING, logging.ERROR):
            link.log(level, "plugin.t", logging.getLevelName(level))
        return ToolExecutionResult(tool_name=name, content="logged")

    async def close(self) -> None:
        pass


async def test_a_taken_call_asks_the_client_what_the_session_would_ask_it() -> None:
    asked: list[str] = []

    async def form(context: Any, params: Any) -> Any:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"who": "Ada"})

    options = {"sampling_callback": sampling, "elicitation_callback": form}
    async with served(AskingProvider(), **options) as (client, fwd, _):
        sampled = await client.call_tool("ask", {})
        elicited = await client.call_tool("form", {})
        taken = fwd.forwarded

    assert sampled.content == [types.TextContent(text="ok")]
    assert elicited.content == [types.TextContent(text="accept")]
    assert asked == ["plugin t.asking asks (tool form): Who?"]
    assert taken == 2


async def test_a_taken_call_is_refused_what_the_client_did_not_offer_as_by_the_session() -> None:
    async with served(AskingProvider(), sampling_callback=sampling) as (client, fwd, _):
        refused = await client.call_tool("form", {})
        taken = fwd.forwarded

    assert refused.is_error and taken == 1
    refusal = "the MCP client did not offer elicitation (it declares no 'elicitation' capability)"
    assert refused.content == [types.TextContent(text=refusal)]


async def test_a_taken_call_logs_to_the_client_at_the_level_it_set_and_before_its_result() -> None:
    seen: list[tuple[str, str]] = []

    async def logs(params: types.LoggingMessageNotificationParams) -> None:
        seen.append((params.level, str(params.data)))

    async with served(AskingProvider(), logging_callback=logs) as (client, forwarder, _):
        await client.call_tool("chatter", {})
        before_level = list(seen)
        with pytest.warns(MCPDeprecationWarning):  # deprecated in 2026-07-28, current before
            await client.set_logging_level("warning")
        await client.call_tool("chatter", {})
        at_warning = list(seen)  # sent before the result, so all here now
        loud = types.SetLevelRequestParams.model_construct(level="loud")
        with pytest.raises(MCPError):  # refused by the server
            await client.session.send_request(types.SetLevelRequest(params=loud), types.EmptyResult)
        await client.call_tool("chatter", {})
        taken = forwarder.forwarded

    assert before_level == []  # no level set: nothing is sent
    assert at_warning == [("warning", "WARNING"), ("error", "ERROR")]
    assert seen == at_warning * 2  # a level the server refused changes nothing
    assert taken == 3


async def test_a_2026_client_is_answered_by_the_session() -> None:
    async with served(mode="2026-07-28") as (client, forwarder, observed):
        greeted = await client.call_tool("greet", {"name": "Ada"})

    assert greeted.content == [types.TextContent(text="Hello, Ada!")]
    assert forwarder.forwarded == 0
    assert observed == [("greet", True)]


async def test_a_cancelled_taken_call_cancels_what_it_asked_the_client() -> None:
    asked, released = anyio.Event(), anyio.Event()
    seen: list[Any] = []

    async def waits(context: Any, params: types.CreateMessageRequestParams) -> Any:
        seen.append(context.request_id)
        asked.set()
        try:
            await anyio.sleep_forever()
        finally:
            released.set()  # the client's handler ends: plughost told it the ask is over

    async with served(AskingProvider(), sampling_callback=waits) as (client, forwarder, _):
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "ask", {})
                await asked.wait()
                tg.cancel_scope.cancel()  # the client cancels its tools/call
            await released.wait()
        greeted = await client.call_tool("greet", {"name": "Ada"})

    assert str(seen[0]).startswith("plughost-")
    assert greeted.content == [types.TextContent(text="Hello, Ada!")]
    assert forwarder.forwarded == 2


async def test_a_call_sent_right_behind_a_set_level_logs_at_that_level_as_on_the_session() -> None:
    registry = ToolRegistry()
    registry.register_provider(AskingProvider())
    bridge = RegistryMCPServer(registry)
    forwarder = CallForwarder(bridge)
    # eager, as the stdio transport's: two lines read at once reach the forwarder in one go
    to_server, from_client = eager_memory_stream[SessionMessage | Exception](100)
    to_client, from_server = eager_memory_stream[SessionMessage | Exception](100)
    hello = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "lines", "version": "1"},
    }
    lines = [
        {"id": 1, "method": "initialize", "params": hello},
        {"method": "notifications/initialized"},
        {"id": 2, "method": "logging/setLevel", "params": {"level": "warning"}},
        {"id": 3, "method": "tools/call", "params": {"name": "chatter", "arguments": {}}},
    ]
    seen: list[Any] = []
    async with forwarded_by(bridge, forwarder, from_client, to_client):
        for line in lines:  # one after the other, no answer awaited
            message = types.jsonrpc_message_adapter.validate_python({"jsonrpc": "2.0", **line})
            await to_server.send(SessionMessage(message))
        with anyio.fail_after(10):
            while not seen or getattr(seen[-1], "id", None) != 3:
                item = await from_server.receive()
                assert isinstance(item, SessionMessage)
                seen.append(item.message)
    for stream in (to_server, from_client, to_client, from_server):
        stream.close()

    logged = [
        m.params["level"] for m in seen if getattr(m, "method", "") == "notifications/message"
    ]
    assert logged == ["warning", "error"]


async def test_calls_go_through_the_session_while_the_program_traces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(forwarding, "tracing", lambda: True)  # tracing() has tests of its own
    async with served() as (client, forwarder, observed):
        greeted = await client.call_tool("greet", {"name": "Ada"})

    assert greeted.content == [types.TextContent(text="Hello, Ada!")]
    assert forwarder.forwarded == 0 and observed == [("greet", True)]


async def test_a_call_with_more_in_its_params_than_the_forwarder_reads_is_left_to_the_session() -> (
    None
):
    async with served() as (client, forwarder, observed):
        plain = await client.call_tool("greet", {"name": "Ada"})
        taken = forwarder.forwarded
        marked = await client.call_tool("greet", {"name": "Ada"}, meta={"example.com/trace": "1"})
        after = forwarder.forwarded

    assert (taken, after) == (1, 1)  # the second went through the session
    assert as_json(marked) == as_json(plain)
    assert observed == [("greet", True), ("greet", True)]
