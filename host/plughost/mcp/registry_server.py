"""RegistryMCPServer: a ToolRegistry dressed as an MCP server, with no transport in it.

Built on the MCP SDK's lowlevel ``Server``: ``tools/list`` lists the
registry's tools (``input_schema`` is the spec's ``parameters_schema``; an
upstream MCP server's tool is its own definition under the namespaced name) and
``tools/call`` runs :meth:`ToolRegistry.invoke`, which checks the arguments
itself. A failing tool, bad arguments or an unknown name come back as an
``is_error`` result carrying the model-facing message, never as a protocol
error; an exception in the registry is caught and reported the same way.

When the registry's tools change (its listener), connected clients hear
``notifications/tools/list_changed``: clients of the 2026 protocol on their
``subscriptions/listen`` stream, handshake-era clients on their session.

Kept apart from :mod:`plughost.mcp.server`, which runs this server on stdio or
streamable HTTP (and re-exports :class:`RegistryMCPServer`), so that what a
client may ask and how it connects read separately.

What does not live here: the transports (:mod:`plughost.mcp.server`), resources
and prompts (:mod:`plughost.mcp.server_content`) and result conversion
(:mod:`plughost.mcp.content`).
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import metadata
from typing import Any, Protocol

import anyio
import mcp_types as types
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

from plughost.mcp.client_link import MCPClientLink, set_logging_level
from plughost.mcp.content import result_to_mcp
from plughost.mcp.input_rounds import (
    DEFAULT_INPUT_TIMEOUT,
    DEFAULT_MAX_PARKED,
    InputRounds,
    ParkedCall,
    asks_in_rounds,
)
from plughost.mcp.pagination import DEFAULT_PAGE_SIZE, page_of
from plughost.mcp.progress_backlog import ProgressBacklog
from plughost.mcp.server_content import (
    ContentHandlers,
    ResourceSubscriptions,
    SourceListenHandler,
)
from plughost.mcp.shutdown import CallCounter
from plughost.tools import progress
from plughost.tools.client_link import ClientLink, current_client
from plughost.tools.provider import ChangeListener, ToolProvider
from plughost.tools.resources import ContentCatalog
from plughost_sdk.models import (
    ToolExecutionContext,
    ToolExecutionResult,
    ToolInvocation,
    ToolSpec,
)

__all__ = ["RegistryMCPServer", "Reporter", "ServedLink", "ToolSource"]

log = logging.getLogger(__name__)

_NOTIFY_TIMEOUT = 2.0
_TRACKED = "plughost.tools_list_changed"


Reporter = Callable[[progress.Progress], Awaitable[None]]
"""Sends one progress report of a call to the client that made it."""


class ServedLink(ClientLink, Protocol):
    """A client link that is served around a call (:meth:`MCPClientLink.serving`)."""

    def serving(self) -> contextlib.AbstractAsyncContextManager[None]: ...


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
        max_parked: Calls parked at once, at most; past it a plugin's question is refused.
        one_client: Whether the server has one client only (stdio): then every call's
            link names the same client (:meth:`client_of`).
    """

    def __init__(
        self,
        registry: ToolSource,
        *,
        name: str = "plughost",
        page_size: int = DEFAULT_PAGE_SIZE,
        input_timeout: float = DEFAULT_INPUT_TIMEOUT,
        max_parked: int = DEFAULT_MAX_PARKED,
        one_client: bool = False,
    ) -> None:
        if page_size < 1:
            raise ValueError(f"page_size must be at least 1, got {page_size}")
        self.registry = registry
        self.page_size = page_size
        self._one_client = one_client
        self.rounds = InputRounds(input_timeout, max_parked)
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

    def client_of(self, ctx: ServerRequestContext[Any] | None) -> object | None:
        """Who made the request of ``ctx``: the same for all of one client's requests.

        Over stdio that is the server's one client; over HTTP, the connection of a
        handshake-era session (a 2026-07-28 request has one of its own, so each of its
        calls is a client of its own: cautious, never wrong). None when it is unknown.
        """
        if self._one_client:
            return self
        if ctx is None:
            return None
        return getattr(ctx.session, "_connection", None)  # private in SDK 2.3

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
        link = MCPClientLink(ctx, tool=params.name, client=self.client_of(ctx))
        return result_to_mcp(await self._run_call(ctx, params, link))

    async def _run_call(
        self,
        ctx: ServerRequestContext[Any],
        params: types.CallToolRequestParams,
        link: MCPClientLink,
    ) -> ToolExecutionResult:
        call_id = "" if ctx.request_id is None else str(ctx.request_id)
        report = None if _progress_token(ctx) is None else _reporter(ctx)
        return await self.run_call(params.name, params.arguments, call_id, link, report)

    async def run_call(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        call_id: str,
        link: ServedLink,
        report: Reporter | None,
    ) -> ToolExecutionResult:
        """Run one ``tools/call`` on the registry; every fault comes back as a failed result.

        Args:
            name: The tool the client called.
            arguments: Its arguments, as the client sent them.
            call_id: The client's request id.
            link: The client, for the plugin's logs, sampling and elicitation.
            report: Sends a progress report to the client; None when it asked for none.
        """
        invocation = ToolInvocation(
            tool_name=name, arguments=dict(arguments or {}), call_id=call_id
        )
        token = current_client.set(link)  # seen by the plugin's logs, sampling, elicitation
        try:
            async with link.serving():
                if report is None:
                    return await self._invoke(invocation)
                return await self._invoke_with_progress(report, invocation)
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
                link = MCPClientLink(
                    ctx, ask=call.ask, tool=params.name, client=self.client_of(ctx)
                )
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
        self, report: Reporter, invocation: ToolInvocation
    ) -> ToolExecutionResult:
        """Invoke, relaying the tool's progress reports as notifications/progress.

        Reports arrive on the event loop from wherever the tool runs; they are queued
        (:class:`~plughost.mcp.progress_backlog.ProgressBacklog`: bounded, newest kept)
        and sent in order by one task, which drains the queue before the result goes.
        """
        backlog = ProgressBacklog()
        async with anyio.create_task_group() as tg:
            tg.start_soon(backlog.relay, report)
            try:
                with progress.reporting(backlog.put):
                    result = await self._invoke(invocation)
            finally:
                backlog.close()
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


def _reporter(ctx: ServerRequestContext[Any, Any]) -> Reporter:
    async def report(report: progress.Progress) -> None:
        await ctx.session.report_progress(report.progress, report.total, report.message)

    return report


def _connection_of(ctx: ServerRequestContext[Any, Any]) -> Connection | None:
    # ServerSession is a per-request proxy; the per-client Connection behind it is the
    # stable identity that can be notified later and that tells us when the client left
    # (its exit_stack). The SDK keeps it private on the session in 2.3.
    connection = getattr(ctx.session, "_connection", None)
    return connection if isinstance(connection, Connection) else None


def _tool_of(spec: ToolSpec) -> types.Tool:
    if isinstance(spec.mcp_tool, types.Tool):  # an upstream's tool: all of it, renamed
        return spec.mcp_tool.model_copy(update={"name": spec.name})
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


def _version() -> str:
    try:
        return metadata.version("plughost")
    except metadata.PackageNotFoundError:
        return "0"
