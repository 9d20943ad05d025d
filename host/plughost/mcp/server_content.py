"""The resource, prompt and completion handlers of the MCP server, over a ContentCatalog.

``resources/list``, ``resources/templates/list``, ``resources/read``,
``prompts/list``, ``prompts/get`` and ``completion/complete`` read the merged
:class:`~plughost.tools.resources.ContentCatalog` of the registry (plugins'
``@Resource``/``@Prompt`` and upstream MCP servers' own). An unknown URI or prompt,
or a provider failure, is a JSON-RPC error (``INVALID_PARAMS`` for what the
client asked wrong, ``INTERNAL_ERROR`` otherwise) carrying the provider's message.

``resources/subscribe`` and ``resources/unsubscribe`` keep a per-connection set of
URIs; :class:`ResourceSubscriptions` delivers
``notifications/resources/updated`` to handshake-era connections that subscribed,
and publishes the same event on the ``subscriptions/listen`` bus for 2026 clients.

What does not live here: tools (:mod:`plughost.mcp.server`), the catalog itself.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import math
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS

from plughost.mcp.content import content_to_mcp
from plughost.tools.resources import (
    ContentCatalog,
    ContentError,
    PromptInfo,
    ResourceContent,
    ResourceInfo,
)

__all__ = ["ContentHandlers", "ResourceSubscriptions"]

log = logging.getLogger(__name__)

_SUBSCRIBED = "plughost.resource_subscriptions"
_NOTIFY_TIMEOUT = 2.0


class ContentHandlers:
    """The lowlevel server's handlers for resources, prompts and completions."""

    def __init__(self, catalog: ContentCatalog, subscriptions: ResourceSubscriptions) -> None:
        self._catalog = catalog
        self._subscriptions = subscriptions

    async def list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        """``resources/list``: plain resources, not templates."""
        resources = await self._catalog.list_resources()
        return types.ListResourcesResult(resources=[_resource_of(r) for r in resources])

    async def list_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        """``resources/templates/list``."""
        templates = await self._catalog.list_templates()
        return types.ListResourceTemplatesResult(
            resource_templates=[_template_of(t) for t in templates]
        )

    async def read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        """``resources/read``, routed to the provider that serves the URI."""
        uri = str(params.uri)
        with _as_mcp_error():
            contents = await self._catalog.read_resource(uri)
        return types.ReadResourceResult(contents=[_contents_of(c) for c in contents])

    async def list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        """``prompts/list``."""
        prompts = await self._catalog.list_prompts()
        return types.ListPromptsResult(prompts=[_prompt_of(p) for p in prompts])

    async def get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        """``prompts/get``, routed to the provider that serves the prompt."""
        with _as_mcp_error():
            result = await self._catalog.get_prompt(params.name, dict(params.arguments or {}))
        messages = [
            types.PromptMessage(role=m.role, content=content_to_mcp([m.content])[0])
            for m in result.messages
        ]
        return types.GetPromptResult(description=result.description, messages=messages)

    async def complete(
        self, ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        """``completion/complete`` for a prompt argument or a template variable."""
        ref = params.ref
        kind: Any = "prompt" if isinstance(ref, types.PromptReference) else "resource"
        name = ref.name if isinstance(ref, types.PromptReference) else ref.uri
        context = dict(params.context.arguments or {}) if params.context else {}
        values = await self._catalog.complete(
            kind, name, params.argument.name, params.argument.value, context
        )
        return types.CompleteResult(
            completion=types.Completion(values=values, total=len(values), has_more=False)
        )

    async def subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        """``resources/subscribe``: remember the URI for this connection."""
        self._subscriptions.add(ctx, str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        """``resources/unsubscribe``: forget the URI for this connection."""
        self._subscriptions.remove(ctx, str(params.uri))
        return types.EmptyResult()


class ResourceSubscriptions:
    """Which connections subscribed to which URIs, and delivery of updates to them."""

    def __init__(self, bus: InMemorySubscriptionBus) -> None:
        self._bus = bus
        self._connections: dict[int, Connection] = {}
        self._updates: MemoryObjectSendStream[str] | None = None

    def add(self, ctx: ServerRequestContext[Any], uri: str) -> None:
        """Subscribe the connection of ``ctx`` to ``uri``."""
        connection = _connection_of(ctx)
        if connection is None:
            return
        uris: set[str] = connection.state.setdefault(_SUBSCRIBED, set())
        uris.add(uri)
        key = id(connection)
        if key not in self._connections:
            self._connections[key] = connection
            connection.exit_stack.callback(self._connections.pop, key, None)

    def remove(self, ctx: ServerRequestContext[Any], uri: str) -> None:
        """Unsubscribe the connection of ``ctx`` from ``uri``."""
        connection = _connection_of(ctx)
        if connection is not None:
            connection.state.get(_SUBSCRIBED, set()).discard(uri)

    def updated(self, uri: str) -> None:
        """Queue an update of ``uri`` for delivery (a registry resource listener)."""
        if self._updates is not None:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._updates.send_nowait(uri)

    @contextlib.asynccontextmanager
    async def delivering(self) -> AsyncIterator[None]:
        """Deliver queued updates while inside."""
        send, receive = anyio.create_memory_object_stream[str](math.inf)
        self._updates = send
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._deliver, receive)
                try:
                    yield
                finally:
                    tg.cancel_scope.cancel()
        finally:
            self._updates = None
            send.close()
            receive.close()

    async def _deliver(self, updates: MemoryObjectReceiveStream[str]) -> None:
        async with updates:
            async for uri in updates:
                await self._bus.publish(ResourceUpdated(uri=uri))
                for connection in list(self._connections.values()):
                    if uri in connection.state.get(_SUBSCRIBED, ()):
                        # Bounded: a client that stopped reading cannot hold up the others.
                        with anyio.move_on_after(_NOTIFY_TIMEOUT):
                            await connection.send_resource_updated(uri)


@contextlib.contextmanager
def _as_mcp_error() -> Any:
    try:
        yield
    except ContentError as exc:
        raise MCPError(INVALID_PARAMS if exc.not_found else INTERNAL_ERROR, str(exc)) from None


def _connection_of(ctx: ServerRequestContext[Any, Any]) -> Connection | None:
    # The per-client Connection behind the per-request session proxy (private in SDK 2.3).
    connection = getattr(ctx.session, "_connection", None)
    return connection if isinstance(connection, Connection) else None


def _resource_of(info: ResourceInfo) -> types.Resource:
    return types.Resource(
        uri=info.uri,
        name=info.name,
        title=info.title,
        description=info.description or info.name,
        mime_type=info.mime_type,
    )


def _template_of(info: ResourceInfo) -> types.ResourceTemplate:
    return types.ResourceTemplate(
        uri_template=info.uri,
        name=info.name,
        title=info.title,
        description=info.description or info.name,
        mime_type=info.mime_type,
    )


def _prompt_of(info: PromptInfo) -> types.Prompt:
    return types.Prompt(
        name=info.name,
        title=info.title,
        description=info.description or info.name,
        arguments=[
            types.PromptArgument(
                name=a.name, description=a.description or None, required=a.required
            )
            for a in info.arguments
        ],
    )


def _contents_of(
    content: ResourceContent,
) -> types.TextResourceContents | types.BlobResourceContents:
    if content.blob is not None:
        blob = base64.b64encode(content.blob).decode("ascii")
        return types.BlobResourceContents(uri=content.uri, blob=blob, mime_type=content.mime_type)
    return types.TextResourceContents(
        uri=content.uri, text=content.text or "", mime_type=content.mime_type
    )
