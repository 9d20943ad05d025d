"""plughost's MCP server, used by the official MCP SDK client, over real stdio and HTTP."""

from __future__ import annotations

import asyncio
import base64
import socket
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
import pytest_asyncio
from mcp import Client, StdioServerParameters
from mcp.client.subscriptions import ToolsListChanged

from plughost.mcp.server import serve_http
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import ToolInvocation
from tests.mcp_servers.harness import LAUNCHER, ServerProcess, free_port, port_is_open
from tests.mcp_servers.plughost_launcher import PIXEL_PNG, DemoProvider

Connect = Callable[..., AbstractAsyncContextManager[Client]]


@pytest.fixture(scope="module")
def http_launcher() -> Iterator[ServerProcess]:
    with ServerProcess(LAUNCHER, "http") as server:
        yield server


@pytest.fixture(params=["stdio", "http"])
def connect(request: pytest.FixtureRequest) -> Connect:
    """Connect the official client to a plughost server over the parametrized transport."""

    @asynccontextmanager
    async def factory(**options: Any) -> AsyncIterator[Client]:
        target: Any
        if request.param == "stdio":
            target = StdioServerParameters(command=sys.executable, args=[str(LAUNCHER), "stdio"])
        else:
            target = request.getfixturevalue("http_launcher").url
        async with Client(target, cache=None, **options) as client:
            yield client

    return factory


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=["stdio", "http"])
async def client(request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    """One official client per transport, for the tests that only read."""
    target: Any
    if request.param == "stdio":
        target = StdioServerParameters(command=sys.executable, args=[str(LAUNCHER), "stdio"])
    else:
        target = request.getfixturevalue("http_launcher").url
    # Setup and teardown of a module fixture run in different tasks, and the client's
    # anyio contexts must be exited by the task that entered them: an owner task holds it.
    entered, leave = asyncio.Event(), asyncio.Event()
    held: list[Client] = []

    async def own() -> None:
        async with Client(target, cache=None) as client:
            held.append(client)
            entered.set()
            await leave.wait()

    owner = asyncio.create_task(own())
    try:
        await asyncio.wait_for(entered.wait(), timeout=30)
        yield held[0]
    finally:
        leave.set()
        await owner


reads_shared = pytest.mark.asyncio(loop_scope="module")


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


@reads_shared
async def test_client_lists_the_registry_tools_with_their_schemas(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}

    assert {"greet", "pixel", "explode", "crash", "add_tool"} <= set(tools)
    assert tools["greet"].input_schema["required"] == ["name"]
    assert tools["greet"].description == "Greet someone."
    assert tools["pixel"].annotations is not None
    assert tools["pixel"].annotations.read_only_hint is True


@reads_shared
async def test_client_calls_a_tool_and_gets_its_text(client: Client) -> None:
    result = await client.call_tool("greet", {"name": "Ada"})

    assert not result.is_error
    assert text_of(result) == "Hello, Ada!"


@reads_shared
async def test_client_gets_an_image_result_as_image_content(client: Client) -> None:
    result = await client.call_tool("pixel", {})

    [block] = result.content
    assert isinstance(block, types.ImageContent)
    assert block.mime_type == "image/png"
    assert base64.b64decode(block.data) == PIXEL_PNG


@reads_shared
async def test_failures_come_back_as_is_error_results_not_protocol_errors(
    client: Client,
) -> None:
    failed = await client.call_tool("explode", {})
    crashed = await client.call_tool("crash", {})
    invalid = await client.call_tool("greet", {"nom": "Ada"})
    unknown = await client.call_tool("no_such_tool", {})

    assert failed.is_error
    assert text_of(failed) == "the fuse was lit"
    assert crashed.is_error
    assert "provider bug" in text_of(crashed)
    assert invalid.is_error
    assert "name" in text_of(invalid)
    assert unknown.is_error
    assert "no_such_tool" in text_of(unknown)


async def test_a_2026_client_hears_list_changed_on_its_listen_stream(connect: Connect) -> None:
    async with connect() as client:
        assert client.protocol_version == "2026-07-28"
        async with client.listen(tools_list_changed=True) as subscription:
            added = await client.call_tool("add_tool", {"name": "fresh_2026"})
            with anyio.fail_after(10):
                event = await anext(aiter(subscription))
        names = {tool.name for tool in (await client.list_tools()).tools}

    assert not added.is_error
    assert isinstance(event, ToolsListChanged)
    assert "fresh_2026" in names


async def test_a_handshake_era_client_hears_list_changed_on_its_session(
    connect: Connect,
) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with connect(mode="legacy", message_handler=on_message) as client:
        assert client.server_capabilities.tools is not None
        assert client.server_capabilities.tools.list_changed is True
        await client.list_tools()
        await client.call_tool("add_tool", {"name": "fresh_legacy"})
        with anyio.fail_after(10):
            await changed.wait()
        names = {tool.name for tool in (await client.list_tools()).tools}

    assert "fresh_legacy" in names


async def test_serve_http_refuses_a_non_loopback_address_without_allow_remote() -> None:
    with pytest.raises(ValueError, match="allow_remote=True"):
        await serve_http(ToolRegistry(), "0.0.0.0", free_port())


async def test_serve_http_raises_os_error_when_the_port_is_taken() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(OSError, match="in use"):
            await serve_http(ToolRegistry(), "127.0.0.1", taken.getsockname()[1])


async def test_serve_http_signals_ready_serves_and_shuts_down_when_cancelled() -> None:
    registry = ToolRegistry()
    provider = DemoProvider()
    registry.register_provider(provider)
    port = free_port()
    ready = asyncio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_http(registry, port=port, ready=ready))
        with anyio.fail_after(10):
            await ready.wait()
        async with Client(f"http://127.0.0.1:{port}/mcp", cache=None, mode="legacy") as client:
            result = await client.call_tool("greet", {"name": "Bo"})
            # A registry change while a client is connected must not disturb shutdown.
            await registry.invoke(ToolInvocation(tool_name="add_tool", arguments={"name": "x"}))
        tg.cancel_scope.cancel()

    assert text_of(result) == "Hello, Bo!"
    assert not port_is_open(port)
