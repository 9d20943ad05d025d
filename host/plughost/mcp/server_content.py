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
It also counts the holders of each URI, so that a resource of an upstream MCP
server is subscribed there while at least one client holds it, and only then.

What does not live here: tools (:mod:`plughost.mcp.server`), the catalog itself.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import math
from collections.abc import AsyncIterator
from typing import Any, Protocol, runtime_checkable

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp_types import SubscriptionsListenRequestParams, SubscriptionsListenResult
from mcp_types.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS

from plughost.mcp.content import content_to_mcp
from plughost.tools.resources import (
    ContentCatalog,
    ContentError,
    PromptInfo,
    ResourceContent,
    ResourceInfo,
)

__all__ = [
    "ContentHandlers",
    "ResourceSubscriber",
    "ResourceSubscriptions",
    "SourceListenHandler",
]

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
        with _as_mcp_error():
            await self._subscriptions.add(ctx, str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        """``resources/unsubscribe``: forget the URI for this connection."""
        with _as_mcp_error():
            await self._subscriptions.remove(ctx, str(params.uri))
        return types.EmptyResult()


@runtime_checkable
class ResourceSubscriber(Protocol):
    """A provider that subscribes to resources at their source (upstream MCP servers)."""

    async def subscribe_resource(self, uri: str) -> bool:
        """Subscribe at the source of ``uri``; False when the provider does not serve it."""
        ...

    async def unsubscribe_resource(self, uri: str) -> None:
        """Drop the subscription at the source of ``uri``."""
        ...


class ResourceSubscriptions:
    """Who subscribed to which URIs, the subscriptions at their sources, and update delivery.

    A holder is a handshake-era connection (``resources/subscribe``) or a 2026
    ``subscriptions/listen`` stream. The first holder of a URI subscribes at its
    source (a :class:`ResourceSubscriber` provider that serves it); when the last
    lets go (unsubscribes, disconnects, ends its stream), the source is told too.
    """

    def __init__(self, bus: InMemorySubscriptionBus, catalog: ContentCatalog) -> None:
        self._bus = bus
        self._catalog = catalog
        self._connections: dict[int, Connection] = {}
        self._holders: dict[str, set[int]] = {}
        self._updates: MemoryObjectSendStream[str] | None = None
        self._left: MemoryObjectSendStream[tuple[int, str]] | None = None

    async def add(self, ctx: ServerRequestContext[Any], uri: str) -> None:
        """Subscribe the connection of ``ctx`` to ``uri`` (raises ``ContentError``)."""
        connection = _connection_of(ctx)
        if connection is None:
            return
        key = id(connection)
        await self.hold(key, uri)
        uris: set[str] = connection.state.setdefault(_SUBSCRIBED, set())
        uris.add(uri)
        if key not in self._connections:
            self._connections[key] = connection
            connection.exit_stack.callback(self._connection_left, key)

    async def remove(self, ctx: ServerRequestContext[Any], uri: str) -> None:
        """Unsubscribe the connection of ``ctx`` from ``uri``."""
        connection = _connection_of(ctx)
        if connection is not None:
            connection.state.get(_SUBSCRIBED, set()).discard(uri)
            await self.release(id(connection), uri)

    async def hold(self, holder: int, uri: str) -> None:
        """Count ``holder`` in for ``uri``; the first one subscribes at the source."""
        if uri not in self._holders:
            await self._at_source(uri, subscribe=True)
        self._holders.setdefault(uri, set()).add(holder)

    async def release(self, holder: int, uri: str) -> None:
        """Count ``holder`` out of ``uri``; after the last one, unsubscribe at the source."""
        holders = self._holders.get(uri)
        if holders is None or holder not in holders:
            return
        holders.discard(holder)
        if not holders:
            del self._holders[uri]
            await self._at_source(uri, subscribe=False)

    async def _at_source(self, uri: str, *, subscribe: bool) -> None:
        for provider in self._catalog.providers():
            if not isinstance(provider, ResourceSubscriber):
                continue
            if not subscribe:
                await provider.unsubscribe_resource(uri)
            elif await provider.subscribe_resource(uri):
                return

    def _connection_left(self, key: int) -> None:
        """A connection closed (an exit-stack callback): let go of its URIs, in the background."""
        connection = self._connections.pop(key, None)
        if connection is None or self._left is None:
            return
        for uri in connection.state.get(_SUBSCRIBED, ()):
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._left.send_nowait((key, uri))

    def updated(self, uri: str) -> None:
        """Queue an update of ``uri`` for delivery (a registry resource listener)."""
        if self._updates is not None:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._updates.send_nowait(uri)

    @contextlib.asynccontextmanager
    async def delivering(self) -> AsyncIterator[None]:
        """Deliver queued updates, and release the URIs of departed connections, while inside."""
        send, receive = anyio.create_memory_object_stream[str](math.inf)
        left, leaving = anyio.create_memory_object_stream[tuple[int, str]](math.inf)
        self._updates, self._left = send, left
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._deliver, receive)
                tg.start_soon(self._release_departed, leaving)
                try:
                    yield
                finally:
                    tg.cancel_scope.cancel()
        finally:
            self._updates = self._left = None
            for stream in (send, receive, left, leaving):
                stream.close()

    async def _release_departed(self, leaving: MemoryObjectReceiveStream[tuple[int, str]]) -> None:
        async with leaving:
            async for key, uri in leaving:
                try:
                    await self.release(key, uri)
                except Exception as exc:  # the source is gone too: nothing left to undo
                    log.info("mcp resource not released at its source uri=%s reason=%s", uri, exc)

    async def _deliver(self, updates: MemoryObjectReceiveStream[str]) -> None:
        async with updates:
            async for uri in updates:
                await self._bus.publish(ResourceUpdated(uri=uri))
                for connection in list(self._connections.values()):
                    if uri in connection.state.get(_SUBSCRIBED, ()):
                        # Bounded: a client that stopped reading cannot hold up the others.
                        with anyio.move_on_after(_NOTIFY_TIMEOUT):
                            await connection.send_resource_updated(uri)


class SourceListenHandler:
    """``subscriptions/listen`` (2026-07-28) that holds its resource URIs at their sources.

    Wraps the SDK's :class:`ListenHandler`: while the stream is open, each URI it
    listens to counts as one holder in :class:`ResourceSubscriptions`.
    """

    def __init__(self, handler: ListenHandler, subscriptions: ResourceSubscriptions) -> None:
        self._handler = handler
        self._subscriptions = subscriptions

    async def __call__(
        self, ctx: ServerRequestContext[Any], params: SubscriptionsListenRequestParams
    ) -> SubscriptionsListenResult:
        key = id(params)  # one holder per listen stream
        held: list[str] = []
        try:
            for uri in params.notifications.resource_subscriptions or ():
                try:
                    await self._subscriptions.hold(key, uri)
                    held.append(uri)
                except ContentError as exc:
                    log.info("mcp resource not subscribed at its source uri=%s reason=%s", uri, exc)
            return await self._handler(ctx, params)
        finally:
            with anyio.CancelScope(shield=True):
                for uri in held:
                    with contextlib.suppress(Exception):
                        await self._subscriptions.release(key, uri)


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
