"""Serve a ToolRegistry over MCP, on stdio or streamable HTTP.

Built on the MCP SDK's lowlevel ``Server``: ``tools/list`` lists the
registry's tools (``input_schema`` is the spec's ``parameters_schema``) and
``tools/call`` runs :meth:`ToolRegistry.invoke`, which checks the arguments
itself. A failing tool, bad arguments or an unknown name come back as an
``is_error`` result carrying the model-facing message, never as a protocol
error; an exception in the registry is caught and reported the same way.

When the registry's tools change (its listener), connected clients hear
``notifications/tools/list_changed``: clients of the 2026 protocol on their
``subscriptions/listen`` stream, handshake-era clients on their session.

HTTP binds loopback unless told otherwise: serving another interface needs
``allow_remote=True``, because the server runs tools for whoever connects and
has no authentication of its own.

What does not live here: the CLI (``plughost serve --mcp-stdio`` /
``--mcp-http``) and result conversion (:mod:`plughost.mcp.content`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import math
import socket
from collections.abc import AsyncIterator, Generator
from importlib import metadata
from typing import Any, Protocol

import anyio
import mcp_types as types
import uvicorn
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from plughost.mcp.bearer import require_bearer
from plughost.mcp.content import result_to_mcp
from plughost.tools.provider import ChangeListener
from plughost_sdk.models import (
    ToolExecutionContext,
    ToolExecutionResult,
    ToolInvocation,
    ToolSpec,
)

__all__ = [
    "DEFAULT_HTTP_PORT",
    "MCP_HTTP_PATH",
    "RegistryMCPServer",
    "is_loopback",
    "serve_http",
    "serve_stdio",
]

log = logging.getLogger(__name__)

DEFAULT_HTTP_PORT = 8765
MCP_HTTP_PATH = "/mcp"
_SHUTDOWN_GRACE = 3.0
_NOTIFY_TIMEOUT = 2.0
_TRACKED = "plughost.tools_list_changed"


class ToolSource(Protocol):
    """What the server needs of a :class:`~plughost.tools.registry.ToolRegistry`."""

    async def list_tools(self) -> list[ToolSpec]: ...

    async def invoke(
        self,
        invocation: ToolInvocation,
        context: ToolExecutionContext | None = None,
        *,
        listed_all: bool = False,
    ) -> ToolExecutionResult: ...

    def add_listener(self, listener: ChangeListener) -> None: ...

    def remove_listener(self, listener: ChangeListener) -> None: ...


class _Server(Server[Any]):
    """The lowlevel server, advertising ``tools.listChanged`` on every transport."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


class RegistryMCPServer:
    """A registry dressed as an MCP server; :meth:`running` keeps clients informed of changes.

    Args:
        registry: The tools to serve.
        name: The server name clients see.
    """

    def __init__(self, registry: ToolSource, *, name: str = "plughost") -> None:
        self.registry = registry
        self._bus = InMemorySubscriptionBus()
        self._connections: dict[int, Connection] = {}
        self._changes: MemoryObjectSendStream[None] | None = None
        self._change_pending = False
        self.server = _Server(
            name,
            version=_version(),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=ListenHandler(self._bus),
        )
        self.server.middleware.append(self._track_connection)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Listen to the registry and forward its changes to clients while inside."""
        send, receive = anyio.create_memory_object_stream[None](math.inf)
        self._changes = send
        self.registry.add_listener(self._registry_changed)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._forward_changes, receive)
                try:
                    yield
                finally:
                    tg.cancel_scope.cancel()
        finally:
            self.registry.remove_listener(self._registry_changed)
            self._changes = None
            send.close()
            receive.close()

    # --- handlers -------------------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        specs = await self.registry.list_tools()
        return types.ListToolsResult(tools=[_tool_of(spec) for spec in specs])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name = params.name
        invocation = ToolInvocation(
            tool_name=name,
            arguments=dict(params.arguments or {}),
            call_id="" if ctx.request_id is None else str(ctx.request_id),
        )
        try:
            # An MCP client is shown every listed tool: deferred ones run without a search.
            context = ToolExecutionContext(platform="mcp")
            result = await self.registry.invoke(invocation, context, listed_all=True)
        except Exception as exc:  # a tool fault is never a protocol error
            log.exception("mcp tool call failed in the registry tool=%s", name)
            message = f"Tool {name} could not be run: {type(exc).__name__}: {exc}"
            result = ToolExecutionResult.failure(name, message, "registry_error")
        return result_to_mcp(result)

    # --- change notifications -------------------------------------------------------------

    async def _track_connection(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Remember handshake-era connections, to send them tools/list_changed later."""
        result = await call_next(ctx)
        connection = _connection_of(ctx)
        if (
            connection is not None
            and connection.state.get(_TRACKED) is None
            and connection.protocol_version not in MODERN_PROTOCOL_VERSIONS
        ):
            key = id(connection)
            connection.state[_TRACKED] = True
            self._connections[key] = connection
            connection.exit_stack.callback(self._connections.pop, key, None)
        return result

    def _registry_changed(self, provider_name: str) -> None:
        if self._change_pending or self._changes is None:
            return
        self._change_pending = True
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._changes.send_nowait(None)

    async def _forward_changes(self, changes: MemoryObjectReceiveStream[None]) -> None:
        with changes:
            async for _ in changes:
                self._change_pending = False
                log.debug("mcp tools changed, notifying clients legacy=%d", len(self._connections))
                await self._bus.publish(ToolsListChanged())
                for connection in list(self._connections.values()):
                    # Best effort and never raises; bounded so a client that stopped
                    # reading cannot hold up the others.
                    with anyio.move_on_after(_NOTIFY_TIMEOUT):
                        await connection.send_tool_list_changed()


def _connection_of(ctx: ServerRequestContext[Any, Any]) -> Connection | None:
    # ServerSession is a per-request proxy; the per-client Connection behind it is the
    # stable identity that can be notified later and that tells us when the client left
    # (its exit_stack). The SDK keeps it private on the session in 2.3.
    connection = getattr(ctx.session, "_connection", None)
    return connection if isinstance(connection, Connection) else None


def _tool_of(spec: ToolSpec) -> types.Tool:
    annotations = None
    read_only = spec.metadata.get("read_only")
    if isinstance(read_only, bool):
        annotations = types.ToolAnnotations(read_only_hint=read_only)
    # No output_schema: a declared one obliges every result to carry matching
    # structured content, which the registry does not promise.
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description or None,
        input_schema=spec.parameters_schema,
        annotations=annotations,
    )


# --- transports -------------------------------------------------------------------------------


async def serve_stdio(registry: ToolSource, *, name: str = "plughost") -> None:
    """Serve ``registry`` over this process's stdin and stdout until stdin closes.

    While serving, stray writes to stdout are diverted to stderr by the SDK so
    they cannot corrupt the protocol stream.
    """
    bridge = RegistryMCPServer(registry, name=name)
    log.info("mcp server serving on stdio name=%s", name)
    async with bridge.running(), stdio_server() as (read_stream, write_stream):
        await bridge.server.run(
            read_stream, write_stream, bridge.server.create_initialization_options()
        )


async def serve_http(
    registry: ToolSource,
    host: str = "127.0.0.1",
    port: int = DEFAULT_HTTP_PORT,
    *,
    ready: asyncio.Event | None = None,
    allow_remote: bool = False,
    name: str = "plughost",
    bearer_token: str | None = None,
) -> None:
    """Serve ``registry`` over streamable HTTP at ``http://{host}:{port}/mcp`` until cancelled.

    Args:
        registry: The tools to serve.
        host: The interface to bind; loopback by default.
        port: The TCP port (0 picks a free one, logged at INFO).
        ready: Set once the server accepts connections.
        allow_remote: Required to bind anything but a loopback address.
        name: The server name clients see.
        bearer_token: When given, every request must carry ``Authorization: Bearer <it>``
            (``plughost serve --mcp-http`` always gives one, see :mod:`plughost.mcp.bearer`).

    Raises:
        ValueError: ``host`` is not a loopback address and ``allow_remote`` is False.
        OSError: The address cannot be bound (for example, the port is taken).
    """
    if not allow_remote and not is_loopback(host):
        raise ValueError(
            f"refusing to serve MCP on {host!r}: it is not a loopback address, and the "
            "server runs tools for anyone who can connect, without authentication; "
            "bind 127.0.0.1 (the default) or pass allow_remote=True"
        )
    host = host.strip("[]")
    bridge = RegistryMCPServer(registry, name=name)
    # On 127.0.0.1, localhost and ::1 the SDK refuses foreign Host/Origin headers
    # (DNS rebinding protection).
    app: ASGIApp = bridge.server.streamable_http_app(streamable_http_path=MCP_HTTP_PATH, host=host)
    if bearer_token is not None:
        app = require_bearer(app, bearer_token)
    started = anyio.Event()
    config = uvicorn.Config(
        _signal_startup(app, started),
        log_config=None,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=int(_SHUTDOWN_GRACE),
    )
    server = _EmbeddedUvicorn(config)
    sock = _bind(host, port)  # bound and listening before serving: no startup race
    address = sock.getsockname()
    try:
        async with bridge.running(), anyio.create_task_group() as tg:
            stopped = anyio.Event()
            tg.start_soon(_run_uvicorn, server, sock, stopped)
            try:
                await _first_of(started, stopped)
                if started.is_set():
                    shown = f"[{address[0]}]" if ":" in address[0] else address[0]
                    url = f"http://{shown}:{address[1]}{MCP_HTTP_PATH}"
                    log.info("mcp server serving on %s", url)
                    if ready is not None:
                        ready.set()
                await stopped.wait()
            finally:
                server.should_exit = True
    finally:
        sock.close()


def _signal_startup(app: ASGIApp, started: anyio.Event) -> ASGIApp:
    """Wrap ``app`` so that ``started`` is set once its lifespan startup completed."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await app(scope, receive, send)
            return

        async def watch(message: Message) -> None:
            await send(message)
            if message["type"] == "lifespan.startup.complete":
                started.set()

        await app(scope, receive, watch)

    return wrapped


async def _first_of(*events: anyio.Event) -> None:
    async with anyio.create_task_group() as tg:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        for event in events:
            tg.start_soon(wait, event)


class _EmbeddedUvicorn(uvicorn.Server):
    """uvicorn without its own signal handlers: the embedding program owns Ctrl-C and SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


async def _run_uvicorn(server: uvicorn.Server, sock: socket.socket, stopped: anyio.Event) -> None:
    # Shielded so that cancelling serve_http asks uvicorn to shut down (should_exit)
    # instead of tearing it apart mid-request; its shutdown is bounded by the grace.
    try:
        with anyio.CancelScope(shield=True):
            await server.serve(sockets=[sock])
    finally:
        stopped.set()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address, ``localhost`` or ``[::1]``) is a loopback address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _version() -> str:
    try:
        return metadata.version("plughost")
    except metadata.PackageNotFoundError:
        return "0"
