"""Resource subscriptions held at upstream MCP servers for the clients of ``plughost serve``.

When a client of ``plughost serve`` subscribes to a resource that an upstream
server re-serves, plughost subscribes at that server (``resources/subscribe``):
once, however many of its clients subscribe, since the server (plughost's
:class:`~plughost.mcp.server_content.ResourceSubscriptions`) counts them and
asks here only for the first and after the last. The server's
``notifications/resources/updated`` go to ``on_updated`` (the registry's
``notify_resource_updated``), which tells the subscribed clients, under the URI
the server used: re-served resources keep their URIs.

Handshake-era servers get ``resources/subscribe`` and ``resources/unsubscribe``;
a server that does not declare ``resources.subscribe`` is refused with a
:class:`ContentError` saying so. A 2026-07-28 server has no such requests: its
updates come on the connection's ``subscriptions/listen`` stream, which is
reopened with the new set of URIs (:meth:`~plughost.mcp.client.MCPConnection.relisten`)
whenever a URI is added or dropped; a subscription returns once the server
acknowledged the stream that carries it.

A subscription outlives a lost connection: it is made again on every new one
(:meth:`UpstreamSubscriptions.restore`; a 2026-07-28 connection opens its
stream with every held URI).

What does not live here: which upstream server serves a URI
(:mod:`plughost.mcp.provider_content`), the counting of plughost's own clients
(:mod:`plughost.mcp.server_content`).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, MCPError
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from plughost.mcp.client import MCPConnection, ServerUnavailableError
from plughost.mcp.provider_content import content_request
from plughost.tools.resources import ContentError

__all__ = ["UpstreamSubscriptions"]

log = logging.getLogger(__name__)


class UpstreamSubscriptions:
    """The URIs subscribed at each upstream server, kept across reconnects (see the module doc).

    Args:
        on_updated: Called with a URI when its server says the resource changed.
    """

    def __init__(self, on_updated: Callable[[str], None]) -> None:
        self._on_updated = on_updated
        self._uris: dict[str, set[str]] = {}

    def subscribed(self, server: str) -> frozenset[str]:
        """The URIs held at ``server``."""
        return frozenset(self._uris.get(server, ()))

    async def subscribe(self, connection: MCPConnection, uri: str) -> None:
        """Subscribe at the server of ``connection``; remember it for later connections.

        Raises:
            ContentError: The server cannot subscribe (no capability, 2026-07-28
                protocol), is unavailable, or refused.
        """
        server = connection.name
        if await _modern(connection):
            self._uris.setdefault(server, set()).add(uri)
            await _relisten(connection, f"the subscription to {uri}")
            log.info("mcp resource listened to upstream server=%s uri=%s", server, uri)
            return

        async def subscribe(client: Client) -> None:
            _check_can_subscribe(server, client)
            await _send(client, "resources/subscribe", uri)

        await content_request(connection, subscribe, f"the subscription to {uri}", idempotent=True)
        self._uris.setdefault(server, set()).add(uri)
        log.info("mcp resource subscribed upstream server=%s uri=%s", server, uri)

    async def unsubscribe(self, connection: MCPConnection, uri: str) -> None:
        """Unsubscribe at the server; a server that is gone has nothing to forget."""
        server = connection.name
        held = self._uris.get(server, set())
        if uri not in held:
            return
        held.discard(uri)
        if connection.status().protocol_version in MODERN_PROTOCOL_VERSIONS:
            try:
                await _relisten(connection, f"the unsubscription from {uri}")
            except ContentError as exc:
                log.info(
                    "mcp resource unlisten failed server=%s uri=%s reason=%s", server, uri, exc
                )
            return

        async def unsubscribe(client: Client) -> None:
            await _send(client, "resources/unsubscribe", uri)

        try:
            await content_request(
                connection, unsubscribe, f"the unsubscription from {uri}", idempotent=True
            )
        except ContentError as exc:
            log.info("mcp resource unsubscribe failed server=%s uri=%s reason=%s", server, uri, exc)
            return
        log.info("mcp resource unsubscribed upstream server=%s uri=%s", server, uri)

    async def restore(self, server: str, client: Client, timeout: float) -> None:
        """Subscribe again, on a new connection, to every URI held at ``server``."""
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return  # the connection's listen stream opens with them
        for uri in sorted(self._uris.get(server, ())):
            try:
                with anyio.fail_after(timeout):
                    _check_can_subscribe(server, client)
                    await _send(client, "resources/subscribe", uri)
            except (ContentError, MCPError, TimeoutError) as exc:
                log.warning(
                    "mcp resource not subscribed again server=%s uri=%s reason=%s", server, uri, exc
                )

    def notification(self, server: str, message: Any) -> None:
        """A server's notification: pass on the update of a URI held there."""
        if isinstance(message, types.ResourceUpdatedNotification):
            uri = str(message.params.uri)
            if uri in self._uris.get(server, ()):
                self._on_updated(uri)


async def _modern(connection: MCPConnection) -> bool:
    try:
        client = await connection.connect()
    except ServerUnavailableError as exc:
        raise ContentError(f"MCP server {connection.name!r} is unavailable: {exc}") from None
    return client.protocol_version in MODERN_PROTOCOL_VERSIONS


async def _relisten(connection: MCPConnection, what: str) -> None:
    timeout = connection.config.tool_timeout
    try:
        await connection.relisten(timeout)
    except TimeoutError:
        raise ContentError(
            f"MCP server {connection.name!r} did not acknowledge {what} within {timeout:g} s"
        ) from None
    except ServerUnavailableError as exc:
        raise ContentError(f"MCP server {connection.name!r} is unavailable: {exc}") from None


def _check_can_subscribe(server: str, client: Client) -> None:
    resources = client.server_capabilities.resources
    if resources is None or not resources.subscribe:
        raise ContentError(f"MCP server {server!r} does not offer resource subscriptions")


async def _send(client: Client, method: str, uri: str) -> None:
    # resources/(un)subscribe are deprecated for 2026-07-28 only; these are handshake-era servers.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        if method == "resources/subscribe":
            await client.subscribe_resource(uri)
        else:
            await client.unsubscribe_resource(uri)
