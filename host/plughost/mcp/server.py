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
from collections.abc import AsyncIterator, Callable, Generator
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
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ToolsListChanged,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from plughost.mcp.bearer import require_bearer
from plughost.mcp.client_link import MCPClientLink, set_logging_level
from plughost.mcp.content import result_to_mcp
from plughost.mcp.event_store import MemoryEventStore
from plughost.mcp.input_rounds import (
    DEFAULT_INPUT_TIMEOUT,
    InputRounds,
    ParkedCall,
    asks_in_rounds,
)
from plughost.mcp.pagination import DEFAULT_PAGE_SIZE, page_of
from plughost.mcp.server_content import (
    ContentHandlers,
    ResourceSubscriptions,
    SourceListenHandler,
)
from plughost.mcp.shutdown import CallCounter, HttpActivity, stop_requested
from plughost.mcp.shutdown import written as written_out
from plughost.mcp.stdio_server import stdio_streams
from plughost.tools import progress
from plughost.tools.client_link import current_client
from plughost.tools.provider import ChangeListener, ToolProvider
from plughost.tools.resources import ContentCatalog
from plughost_sdk.models import (
    ToolExecutionContext,
    ToolExecutionResult,
    ToolInvocation,
    ToolSpec,
)

__all__ = [
    "DEFAULT_HTTP_PORT",
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_SESSION_IDLE_TIMEOUT",
    "MCP_HTTP_PATH",
    "RegistryMCPServer",
    "is_loopback",
    "serve_http",
    "serve_stdio",
]

log = logging.getLogger(__name__)

DEFAULT_HTTP_PORT = 8765
DEFAULT_SESSION_IDLE_TIMEOUT = 600.0
"""Seconds an HTTP session may stay idle before it is closed."""
DEFAULT_MAX_SESSIONS = 500
"""HTTP sessions open at once, at most (each costs tens of kilobytes and a task)."""
MCP_HTTP_PATH = "/mcp"
SSE_RETRY_MS = 1000
"""The reconnection delay suggested to clients in each SSE stream's priming event."""
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

    @property
    def providers(self) -> tuple[ToolProvider, ...]: ...

    def add_resource_listener(self, listener: Callable[[str], None]) -> None: ...

    def remove_resource_listener(self, listener: Callable[[str], None]) -> None: ...


class _Server(Server[Any]):
    """The lowlevel server, advertising ``listChanged`` for tools, resources and prompts."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options
            or NotificationOptions(
                tools_changed=True, resources_changed=True, prompts_changed=True
            ),
            experimental_capabilities,
            extensions,
        )


class RegistryMCPServer:
    """A registry dressed as an MCP server; :meth:`running` keeps clients informed of changes.

    Args:
        registry: The tools to serve.
        name: The server name clients see.
        page_size: Tools per ``tools/list`` page; clients follow ``nextCursor`` for the rest.
        input_timeout: Seconds a call parked for a 2026-07-28 client's answer waits for
            the client's retry before it is cancelled (:mod:`plughost.mcp.input_rounds`).
    """

    def __init__(
        self,
        registry: ToolSource,
        *,
        name: str = "plughost",
        page_size: int = DEFAULT_PAGE_SIZE,
        input_timeout: float = DEFAULT_INPUT_TIMEOUT,
    ) -> None:
        if page_size < 1:
            raise ValueError(f"page_size must be at least 1, got {page_size}")
        self.registry = registry
        self.page_size = page_size
        self.rounds = InputRounds(input_timeout)
        self._bus = InMemorySubscriptionBus()
        self._connections: dict[int, Connection] = {}
        self._changes: MemoryObjectSendStream[None] | None = None
        self._change_pending = False
        self.calls = CallCounter()
        catalog = ContentCatalog(registry)
        self.subscriptions = ResourceSubscriptions(self._bus, catalog)
        content = ContentHandlers(catalog, self.subscriptions)
        self.server = _Server(
            name,
            version=_version(),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=SourceListenHandler(
                ListenHandler(self._bus), self.subscriptions
            ),
            on_list_resources=content.list_resources,
            on_list_resource_templates=content.list_templates,
            on_read_resource=content.read_resource,
            on_subscribe_resource=content.subscribe,
            on_unsubscribe_resource=content.unsubscribe,
            on_list_prompts=content.list_prompts,
            on_get_prompt=content.get_prompt,
            on_completion=content.complete,
        )
        # Registered after construction: the constructor argument warns that logging is
        # deprecated in the 2026 protocol, which handshake-era clients still use.
        self.server.add_request_handler(
            "logging/setLevel", types.SetLevelRequestParams, set_logging_level
        )
        self.server.middleware.append(self._track_connection)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Listen to the registry and forward its changes to clients while inside."""
        send, receive = anyio.create_memory_object_stream[None](math.inf)
        self._changes = send
        self.registry.add_listener(self._registry_changed)
        self.registry.add_resource_listener(self.subscriptions.updated)
        try:
            with self.rounds.open():  # on the way out, parked calls are cancelled
                async with anyio.create_task_group() as tg, self.subscriptions.delivering():
                    tg.start_soon(self._forward_changes, receive)
                    try:
                        yield
                    finally:
                        tg.cancel_scope.cancel()
        finally:
            self.registry.remove_resource_listener(self.subscriptions.updated)
            self.registry.remove_listener(self._registry_changed)
            self._changes = None
            send.close()
            receive.close()

    # --- handlers -------------------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        specs = await self.registry.list_tools()
        cursor = params.cursor if params is not None else None
        page, next_cursor = page_of(specs, cursor, self.page_size)
        return types.ListToolsResult(
            tools=[_tool_of(spec) for spec in page], next_cursor=next_cursor
        )

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        with self.calls:
            # A retry is always taken as one, so that a state is never silently ignored.
            if params.request_state is not None or asks_in_rounds(ctx):
                return await self._answer_in_rounds(ctx, params)
            return await self._answer_call(ctx, params)

    async def _answer_call(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        link = MCPClientLink(ctx)
        return result_to_mcp(await self._run_call(ctx, params, link))

    async def _run_call(
        self,
        ctx: ServerRequestContext[Any],
        params: types.CallToolRequestParams,
        link: MCPClientLink,
    ) -> ToolExecutionResult:
        name = params.name
        invocation = ToolInvocation(
            tool_name=name,
            arguments=dict(params.arguments or {}),
            call_id="" if ctx.request_id is None else str(ctx.request_id),
        )
        token = current_client.set(link)  # seen by the plugin's logs, sampling, elicitation
        try:
            async with link.serving():
                if _progress_token(ctx) is None:
                    return await self._invoke(invocation)
                return await self._invoke_with_progress(ctx, invocation)
        except Exception as exc:  # a tool fault is never a protocol error
            log.exception("mcp tool call failed in the registry tool=%s", name)
            message = f"Tool {name} could not be run: {type(exc).__name__}: {exc}"
            return ToolExecutionResult.failure(name, message, "registry_error")
        finally:
            current_client.reset(token)

    async def _answer_in_rounds(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        """A 2026-07-28 client that can be asked: the call may park between its requests."""
        if params.request_state is None:

            async def run(call: ParkedCall) -> ToolExecutionResult:
                link = MCPClientLink(ctx, ask=call.ask)
                call.relink = link.rebind
                return await self._run_call(ctx, params, link)

            call = self.rounds.start(params, run)
        else:
            call = self.rounds.resume(ctx, params)
        step = await self.rounds.advance(call)
        if isinstance(step, types.InputRequiredResult):
            return step
        return result_to_mcp(step)

    async def _invoke(self, invocation: ToolInvocation) -> ToolExecutionResult:
        # A client's notifications/cancelled cancels this task (the SDK does that), and
        # the cancellation travels down to the runner or the upstream server.
        # An MCP client is shown every listed tool: deferred ones run without a search.
        context = ToolExecutionContext(platform="mcp")
        return await self.registry.invoke(invocation, context, listed_all=True)

    async def _invoke_with_progress(
        self, ctx: ServerRequestContext[Any], invocation: ToolInvocation
    ) -> ToolExecutionResult:
        """Invoke, relaying the tool's progress reports as notifications/progress.

        Reports arrive on the event loop from wherever the tool runs; they are queued
        and sent in order by one task, which drains the queue before the result goes.
        """
        send, receive = anyio.create_memory_object_stream[progress.Progress](math.inf)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_relay_progress, ctx, receive)
            try:
                with progress.reporting(send.send_nowait):
                    result = await self._invoke(invocation)
            finally:
                send.close()
        return result

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
                # A provider change may change tools, resources and prompts alike.
                for event in (ToolsListChanged(), ResourcesListChanged(), PromptsListChanged()):
                    await self._bus.publish(event)
                for connection in list(self._connections.values()):
                    # Best effort and never raises; bounded so a client that stopped
                    # reading cannot hold up the others.
                    with anyio.move_on_after(_NOTIFY_TIMEOUT):
                        await connection.send_tool_list_changed()
                        await connection.send_resource_list_changed()
                        await connection.send_prompt_list_changed()


def _progress_token(ctx: ServerRequestContext[Any, Any]) -> Any:
    meta: Any = ctx.meta or {}
    return meta.get("progress_token", meta.get("progressToken"))


async def _relay_progress(
    ctx: ServerRequestContext[Any, Any],
    reports: MemoryObjectReceiveStream[progress.Progress],
) -> None:
    with reports:
        async for report in reports:
            try:
                await ctx.session.report_progress(report.progress, report.total, report.message)
            except Exception as exc:  # the client went away: the call itself goes on
                log.debug("mcp progress not sent reason=%s", exc)


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


async def serve_stdio(
    registry: ToolSource,
    *,
    name: str = "plughost",
    page_size: int = DEFAULT_PAGE_SIZE,
    input_timeout: float = DEFAULT_INPUT_TIMEOUT,
    stopping: asyncio.Event | None = None,
    written: asyncio.Event | None = None,
) -> None:
    """Serve ``registry`` over this process's stdin and stdout until stdin closes.

    While serving, stray writes to stdout go to stderr and reads of stdin find
    end-of-file, so nothing corrupts the protocol stream
    (:mod:`plughost.mcp.stdio_server`). Once ``stopping`` is set (the host has
    drained its calls), the server waits until every call it was answering has
    been answered and written out, then returns: no client loses a result to a
    shutdown. ``written`` is set at that moment: when stdin is not a pipe, leaving
    the SDK's stdio transport still waits for stdin to close (its reader is a
    thread that cannot be cancelled), so a program that exits need not wait for
    this to return.
    """
    bridge = RegistryMCPServer(
        registry, name=name, page_size=page_size, input_timeout=input_timeout
    )
    log.info("mcp server serving on stdio name=%s", name)
    async with (
        bridge.running(),
        stdio_streams() as (read_stream, write_stream),
        anyio.create_task_group() as tg,
    ):

        async def run() -> None:
            await bridge.server.run(
                read_stream, write_stream, bridge.server.create_initialization_options()
            )
            tg.cancel_scope.cancel()  # stdin closed

        tg.start_soon(run)
        if stopping is not None:
            await stopping.wait()
            await bridge.calls.quiet()
            await written_out(write_stream)
            if written is not None:
                written.set()
            tg.cancel_scope.cancel()


async def serve_http(
    registry: ToolSource,
    host: str = "127.0.0.1",
    port: int = DEFAULT_HTTP_PORT,
    *,
    ready: asyncio.Event | None = None,
    allow_remote: bool = False,
    name: str = "plughost",
    bearer_token: str | None = None,
    session_idle_timeout: float | None = DEFAULT_SESSION_IDLE_TIMEOUT,
    max_sessions: int | None = DEFAULT_MAX_SESSIONS,
    page_size: int = DEFAULT_PAGE_SIZE,
    input_timeout: float = DEFAULT_INPUT_TIMEOUT,
    stopping: asyncio.Event | None = None,
) -> None:
    """Serve ``registry`` over streamable HTTP at ``http://{host}:{port}/mcp`` until cancelled.

    Once ``stopping`` is set (the host has drained its calls), the server waits
    until every call it was answering has been answered, then shuts down, so
    that no client loses a result to a shutdown.

    Each client holds a session; one that sends nothing for ``session_idle_timeout``
    seconds is closed (its client gets HTTP 404 and starts a new one), and while
    ``max_sessions`` are open a new session is refused with HTTP 503.

    Args:
        registry: The tools to serve.
        host: The interface to bind; loopback by default.
        port: The TCP port (0 picks a free one, logged at INFO).
        ready: Set once the server accepts connections.
        allow_remote: Required to bind anything but a loopback address.
        name: The server name clients see.
        bearer_token: When given, every request must carry ``Authorization: Bearer <it>``
            (``plughost serve --mcp-http`` always gives one, see :mod:`plughost.mcp.bearer`).
        session_idle_timeout: Seconds before an idle session is closed; None keeps it forever.
        max_sessions: Open sessions at most; None for no limit.
        page_size: Tools per ``tools/list`` page.
        input_timeout: Seconds a call parked for a 2026-07-28 client's answer is kept.

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
    bridge = RegistryMCPServer(
        registry, name=name, page_size=page_size, input_timeout=input_timeout
    )
    # On 127.0.0.1, localhost and ::1 the SDK refuses foreign Host/Origin headers
    # (DNS rebinding protection).
    # The event store makes every SSE stream open with a priming event and a retry
    # hint, and lets a client that lost a stream resume it with Last-Event-ID.
    app: ASGIApp = bridge.server.streamable_http_app(
        streamable_http_path=MCP_HTTP_PATH,
        host=host,
        session_idle_timeout=session_idle_timeout,
        max_sessions=max_sessions,
        event_store=MemoryEventStore(),
        retry_interval=SSE_RETRY_MS,
    )
    if bearer_token is not None:
        app = require_bearer(app, bearer_token)
    activity = HttpActivity()
    app = activity.wrap(app)
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
                if stopping is not None and await stop_requested(stopped, stopping):
                    await bridge.calls.quiet()  # every call answered; uvicorn sends the rest
                    await activity.settled()  # and what clients ask on receiving an answer
                    server.should_exit = True
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
