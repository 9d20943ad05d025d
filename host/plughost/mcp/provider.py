"""MCPToolProvider: the tools of upstream MCP servers, as one ToolProvider.

Naming (model-facing names are ``[A-Za-z0-9_-]``, at most 64 characters, with
an 8-hex SHA-1 suffix when longer; see :mod:`plughost.tools.naming`):

=========  ===========================  ============================
entry      name                         tool_id
=========  ===========================  ============================
tool       ``mcp_{server}_{tool}``      ``mcp:{server}:{tool}``
resource   ``mcp_{server}_resource_{n}``  ``mcp:{server}:resource:{n}``
prompt     ``mcp_{server}_prompt_{n}``  ``mcp:{server}:prompt:{n}``
=========  ===========================  ============================

Calls go out under the server's original name. ``metadata`` records
``server``, ``original_name`` and ``kind``; a tool's ``readOnlyHint``
becomes ``metadata["read_only"]`` (a hint, never a guarantee); resources and
prompts are read-only. A tool's spec keeps the server's definition
(``mcp_tool``) and its results the server's answer (``mcp_result``), so that
``plughost serve`` passes both on as they are.

Servers connect lazily on the first :meth:`MCPToolProvider.list_tools` (all
at once, each bounded by its connect timeout, so a slow or broken server
never holds up the others) and report their state through
:meth:`MCPToolProvider.status`. When a server's catalog changes, the provider
tells its registry with ``notify_changed``.

What does not live here: one server's connection (:mod:`plughost.mcp.client`)
and result conversion (:mod:`plughost.mcp.content`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
import math
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, cast

import anyio
from mcp import Client
from mcp.shared.dispatcher import ProgressFnT
from mcp_types import RequestParamsMeta

from plughost.mcp.call_failures import call_failure
from plughost.mcp.client import (
    MCPConnection,
    ServerStatus,
    ServerUnavailableError,
)
from plughost.mcp.config import MCPConfig, MCPServerConfig
from plughost.mcp.content import result_from_mcp, result_from_prompt, result_from_resource
from plughost.mcp.provider_content import UpstreamContent
from plughost.mcp.server_views import Route, ServerView, build_view, tool_name
from plughost.mcp.status import ServerState
from plughost.mcp.upstream_requests import MAX_RECORD, UpstreamRequests
from plughost.mcp.upstream_subscriptions import UpstreamSubscriptions
from plughost.mcp.upstream_tap import UpstreamTap, forwarded_call
from plughost.tools import progress
from plughost.tools.progress import Progress
from plughost.tools.resources import PromptInfo, PromptResult, ResourceContent, ResourceInfo
from plughost.tracing import tracing
from plughost_sdk.models import (
    ToolAvailabilityContext,
    ToolExecutionContext,
    ToolExecutionResult,
    ToolInvocation,
    ToolSpec,
)

if TYPE_CHECKING:
    from plughost.tools.registry import ToolRegistry

__all__ = ["MCPToolProvider"]

log = logging.getLogger(__name__)


class MCPToolProvider:
    """Exposes the tools, resources and prompts of configured MCP servers.

    Args:
        config: The servers; an :class:`MCPConfig` or a mapping of server name
            to :class:`MCPServerConfig`.
        provider_name: Overrides ``config.provider_name``.
    """

    provider_type = "mcp"

    def __init__(
        self,
        config: MCPConfig | Mapping[str, MCPServerConfig],
        *,
        provider_name: str | None = None,
    ) -> None:
        if not isinstance(config, MCPConfig):
            config = MCPConfig(servers=dict(config))
        self.provider_name: str = provider_name or config.provider_name
        self._requests = UpstreamRequests(config.roots)
        self._subscriptions = UpstreamSubscriptions(self._resource_updated)
        self._connections = {
            name: MCPConnection(
                name,
                server,
                on_change=self._server_changed,
                callbacks=self._requests.callbacks(name),
                on_notification=self._subscriptions.notification,
                on_connected=self._connected,
                listen_uris=self._subscriptions.subscribed,
                on_log=functools.partial(self._requests.log, name),
            )
            for name, server in config.servers.items()
            if server.enabled
        }
        self._content = UpstreamContent(self._connections, self.provider_name)
        self._views: dict[str, ServerView] = {}
        self._quiet: Counter[str] = Counter()
        self._registry: ToolRegistry | None = None

    def bind_registry(self, registry: ToolRegistry) -> None:
        """Remember the registry to notify when a server's tools change."""
        self._registry = registry

    def status(self) -> dict[str, ServerStatus]:
        """The connection state of every enabled server, by name."""
        statuses = {name: conn.status() for name, conn in self._connections.items()}
        for name, view in self._views.items():  # the last listing, if still current
            if view.catalog is self._connections[name].catalog:
                # What clients can use: not the tools enabled_tools leaves out, nor those refused.
                statuses[name] = dataclasses.replace(
                    statuses[name], refused=view.refused, tools=len(view.specs)
                )
        return statuses

    async def list_tools(self, context: ToolAvailabilityContext | None = None) -> list[ToolSpec]:
        """Connect the servers not connected yet, then list every reachable server's tools."""
        await self._connect_pending(quiet=True)
        specs: list[ToolSpec] = []
        for name in self._connections:
            view = self._view(name)
            if view is not None:
                specs.extend(view.specs)
        return specs

    async def list_ready_tools(
        self, context: ToolAvailabilityContext | None = None
    ) -> list[ToolSpec]:
        """The tools of the servers connected now, without waiting for the others."""
        views = (self._view(name) for name in self._connections)
        return [spec for view in views if view is not None for spec in view.specs]

    async def reach(self, server: str, tool_name: str) -> ToolExecutionResult | None:
        """Wait for ``server`` to connect (or join its connect), at most its connect_timeout.

        Returns:
            None once it is connected (or is not a server of this provider); else
            the ``server_unavailable`` failure a call to ``tool_name`` gets, with why.
        """
        connection = self._connections.get(server)
        if connection is None:
            return None
        try:
            await connection.connect()
        except ServerUnavailableError as exc:
            message = f"MCP server {server!r} is unavailable: {exc}"
            return ToolExecutionResult.failure(tool_name, message, "server_unavailable")
        return None

    async def invoke(
        self, invocation: ToolInvocation, context: ToolExecutionContext | None = None
    ) -> ToolExecutionResult:
        """Call the tool on its server; every failure comes back as a failed result."""
        name = invocation.tool_name
        invocation = invocation.in_context(invocation.execution_context(context))
        route = self._route(name)
        if route is None:
            await self._connect_pending(quiet=False)  # a call before any listing connects too
            route = self._route(name)
        if route is None:
            return self._not_routed(name)
        connection = self._connections[route.server]
        timeout = connection.config.tool_timeout
        with self._requests.calling(route.server):  # the server may ask our caller mid-call
            result = await self._call(connection, route, invocation, timeout)
        # The result was built for this call alone (by _call), so it is completed in place.
        result.metadata = {"server": route.server, "original_name": route.target, **result.metadata}
        result.tool_name = name
        return result

    # --- resources and prompts, re-served (plughost.mcp.provider_content) ------------------

    async def list_resources(self) -> list[ResourceInfo]:
        """Every connected server's resources and templates."""
        await self._connect_pending(quiet=True)
        return self._content.list_resources()

    async def read_resource(self, uri: str) -> list[ResourceContent]:
        """Read a resource from its server (raises ``ContentError``)."""
        with self._requests.calling(self._content.server_of_uri(uri) or ""):
            return await self._content.read_resource(uri)

    async def list_prompts(self) -> list[PromptInfo]:
        """Every connected server's prompts, namespaced."""
        await self._connect_pending(quiet=True)
        return self._content.list_prompts()

    async def get_prompt(self, name: str, arguments: Mapping[str, str]) -> PromptResult:
        """Fill in a prompt on its server (raises ``ContentError``)."""
        return await self._content.get_prompt(name, arguments)

    async def complete(
        self,
        kind: Literal["prompt", "resource"],
        name: str,
        argument: str,
        value: str,
        context: Mapping[str, str],
    ) -> list[str]:
        """Completions from the server of the prompt or template."""
        return await self._content.complete(kind, name, argument, value, context)

    async def subscribe_resource(self, uri: str) -> bool:
        """Subscribe at the server that serves ``uri``; False when none of them does.

        Raises:
            ContentError: The server cannot or would not subscribe.
        """
        await self._connect_pending(quiet=False)  # a client may subscribe before listing
        server = self._content.server_of_uri(uri)
        if server is None:
            return False
        await self._subscriptions.subscribe(self._connections[server], uri)
        return True

    async def unsubscribe_resource(self, uri: str) -> None:
        """Unsubscribe at every server where ``uri`` is subscribed."""
        for server, connection in self._connections.items():
            if uri in self._subscriptions.subscribed(server):
                await self._subscriptions.unsubscribe(connection, uri)

    async def _connected(self, server: str, client: Client) -> None:
        timeout = self._connections[server].config.tool_timeout
        await self._subscriptions.restore(server, client, timeout)

    def _resource_updated(self, uri: str) -> None:
        if self._registry is not None:
            self._registry.notify_resource_updated(uri)

    async def close(self) -> None:
        """Close every server connection (each in its own owner task)."""
        async with anyio.create_task_group() as tg:
            for connection in self._connections.values():
                tg.start_soon(connection.close)

    # --- connecting -----------------------------------------------------------------------

    async def _connect_pending(self, *, quiet: bool) -> None:
        """Connect every server that wants it, concurrently; failures land in the status.

        Args:
            quiet: The caller is a listing that returns the new tools itself, so
                the registry needs no change notice for these connects.
        """
        pending = [conn for conn in self._connections.values() if conn.wants_connect()]
        if not pending:
            return
        async with anyio.create_task_group() as tg:
            for connection in pending:
                tg.start_soon(self._connect_one, connection, quiet)

    async def _connect_one(self, connection: MCPConnection, quiet: bool) -> None:
        self._quiet[connection.name] += quiet
        try:
            with contextlib.suppress(ServerUnavailableError):
                await connection.connect()
        finally:
            self._quiet[connection.name] -= quiet

    def _server_changed(self, server: str) -> None:
        if self._registry is not None and not self._quiet[server]:
            self._registry.notify_changed(self.provider_name)

    # --- specs and routes -----------------------------------------------------------------

    def _view(self, server: str) -> ServerView | None:
        connection = self._connections[server]
        catalog = connection.catalog
        if catalog is None:
            return None
        view = self._views.get(server)
        if view is None or view.catalog is not catalog:
            view = build_view(self.provider_name, server, connection.config, catalog)
            self._views[server] = view
        return view

    def _not_routed(self, name: str) -> ToolExecutionResult:
        """The failure for a name no live server offers: unknown, or its server is down."""
        for server, view in self._views.items():  # the last view of each server, even if down
            if name in view.routes:
                status = self._connections[server].status()
                reason = status.reason or status.state.value
                if status.retry_in:
                    reason += f" (next attempt in {status.retry_in:.1f} s)"
                message = f"MCP server {server!r} is unavailable: {reason}"
                return ToolExecutionResult.failure(name, message, "server_unavailable")
        message = f"Tool not found: {name} (no connected MCP server offers it)."
        return ToolExecutionResult.failure(name, message, "tool_not_found")

    def _route(self, name: str) -> Route | None:
        for server in self._connections:
            view = self._view(server)
            if view is not None and name in view.routes:
                return view.routes[name]
        return None

    # --- calls ----------------------------------------------------------------------------

    async def _call(
        self,
        connection: MCPConnection,
        route: Route,
        invocation: ToolInvocation,
        timeout: float,
    ) -> ToolExecutionResult:
        name, server = invocation.tool_name, route.server
        # Reads may be sent again after a lost connection; a tool call may not (it may have run).
        idempotent = route.kind != "tool"
        try:
            return await connection.request(
                _operation(route, invocation, connection), timeout=timeout, idempotent=idempotent
            )
        except Exception as exc:  # the provider promise: failures are results, never raised
            return call_failure(name, server, route.target, timeout, exc)

    def held_prefixes(self) -> list[str]:
        """``mcp_SERVER_`` of each server: no plugin tool takes a name of one's, up or down."""
        return [tool_name(server, "") + "_" for server in self._connections]

    def missing(self, name: str) -> ToolExecutionResult | None:
        """Why ``name``, a name of a server's that is not connected now, is not listed.

        The registry answers this instead of ``tool_not_found`` (see
        :class:`~plughost.tools.provider.ToolProvider`): a model that calls a tool of a
        server that failed, or is reconnecting, learns the server is down and why,
        not that the tool never existed. None for a name of no server's, or of a
        connected one (its server does not list it: it does not exist).
        """
        # "mcp_a_b_x" is server a_b's x or server a's b_x: one that is up and does not list
        # it is not its server; of two that are down, the longer name is the likelier.
        servers = [s for s in self._connections if name.startswith(tool_name(s, "") + "_")]
        down = [
            (s, status)
            for s in sorted(servers, key=len, reverse=True)
            if (status := self._connections[s].status()).state in _DOWN
        ]
        if not down:
            return None
        server, status = down[0]
        reason = status.reason or f"it is {status.state.value}"
        if status.retry_in is not None:
            reason += f" (next attempt in {status.retry_in:.1f} s)"
        timeout = self._connections[server].config.tool_timeout
        return call_failure(name, server, name, timeout, ServerUnavailableError(reason))

    # --- the direct lane (plughost.mcp.direct_lane) ---------------------------------------

    def forward_target(self, name: str) -> tuple[Route, MCPConnection, Client, UpstreamTap] | None:
        """Where a tool call of ``name`` can be written at once; None if it cannot be.

        It can when ``name`` is a tool (not a resource or prompt made one) of a
        connected server whose stdio transport has an open tap.
        """
        route = self._route(name)
        if route is None or route.kind != "tool":
            return None
        connection = self._connections[route.server]
        live = connection.live_tap()
        return None if live is None else (route, connection, *live)

    def calling(self, server: str) -> contextlib.AbstractContextManager[None]:
        """Held while a call to ``server`` runs: what it asks goes to the current caller."""
        return self._requests.calling(server)


def _operation(
    route: Route, invocation: ToolInvocation, connection: MCPConnection
) -> Callable[[Client], Awaitable[ToolExecutionResult]]:
    name, target = invocation.tool_name, route.target
    arguments = _arguments(invocation)
    if route.kind == "resource":

        async def read(client: Client) -> ToolExecutionResult:
            return result_from_resource(name, await client.read_resource(target))

        return read
    if route.kind == "prompt":
        texts = {key: _as_text(value) for key, value in arguments.items()}

        async def get(client: Client) -> ToolExecutionResult:
            return result_from_prompt(name, await client.get_prompt(target, texts))

        return get

    meta = _conversation_meta(invocation)
    receiver = progress.current()
    relay = None if receiver is None else _relay_to(receiver)

    async def call(client: Client) -> ToolExecutionResult:
        tap = connection.tap_of(client)
        if tap is not None and not tracing():  # traced calls keep the SDK's spans
            params = {"name": target, "arguments": arguments, "_meta": meta or {}}
            forwarded = await forwarded_call(client, tap, params, relay)
            return result_from_mcp(name, forwarded)
        result = await client.call_tool(target, arguments, progress_callback=relay, meta=meta)
        return result_from_mcp(name, result)

    return call


def _conversation_meta(invocation: ToolInvocation) -> RequestParamsMeta | None:
    """The call's conversation for the server, as ``_meta`` keys ``plughost/session_id``...

    Only the identifiers travel: the model's reasoning and the call's metadata
    stay on the host, since an MCP server is often someone else's program.
    """
    meta = {
        f"plughost/{key}": value
        for key in ("session_id", "stream_id")
        if (value := getattr(invocation, key))
    }
    return cast(RequestParamsMeta, meta) if meta else None


def _relay_to(receiver: progress.ProgressCallback) -> ProgressFnT:
    """The SDK's progress callback, passing the server's reports to the caller's receiver.

    The SDK calls it from its own task, outside the caller's context: the
    receiver is captured here, when the call is made. The server's word is
    checked as a runner's is: a report whose progress or total is not a finite
    number is dropped (it would reach an MCP client as JSON it cannot read), and
    the message is cut at :data:`~plughost.mcp.upstream_requests.MAX_RECORD`.
    """

    async def relay(progress: float, total: float | None, message: str | None) -> None:
        if not math.isfinite(progress) or (total is not None and not math.isfinite(total)):
            return
        receiver(Progress(progress, total, None if message is None else message[:MAX_RECORD]))

    return relay


def _arguments(invocation: ToolInvocation) -> dict[str, Any]:
    """The call's arguments as a dict (the registry has parsed them already)."""
    arguments = invocation.arguments
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return {}
    return arguments if isinstance(arguments, dict) else {}


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


_DOWN = frozenset({ServerState.CONNECTING, ServerState.DISCONNECTED, ServerState.FAILED})
"""States in which a server lists nothing: a call to one of its names is told why."""
