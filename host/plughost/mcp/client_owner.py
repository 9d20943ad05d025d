"""ConnectionOwner: the state of one upstream MCP connection, and the work of its owner task.

:class:`~plughost.mcp.client.MCPConnection` is built on this class. What lives
here runs in the one owner task that enters and exits every anyio context of the
connection (see :mod:`plughost.mcp.client` for why): connecting under
``connect_timeout``, serving the commands other tasks send (``refresh``,
``stop``, ``lost``, ``relisten``), following the server's change notifications
on either protocol era, retrying after a backoff, and the state changes that go
with each step. A server may say its lists changed as often as it likes; one that
says so after every listing would have plughost relist it, and tell every client,
as fast as it answers. So the refreshes of one connection start at least
:data:`REFRESH_PAUSE` seconds apart: the first after a quiet spell at once, and
what changes meanwhile is picked up by the one after the pause (a stop or a lost
connection does not wait for it). The only ways in from other tasks are :meth:`_send` and
:meth:`_mark_lost`, which put a command on the owner's stream.

Kept apart from :mod:`plughost.mcp.client`, which holds what any task may call
(connecting on demand, sending requests and deciding whether one may be sent
again, closing), so that each half reads on its own.

What does not live here: starting and stopping the owner task
(:mod:`plughost.mcp.client`), the session itself (:mod:`plughost.mcp.session`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

import anyio
import anyio.abc
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import Client
from mcp.shared.subscriptions import ResourceUpdated
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from plughost.mcp.config import MCPServerConfig
from plughost.mcp.output_checks import check_outputs_safely
from plughost.mcp.sandbox import SandboxState
from plughost.mcp.session import (
    Catalog,
    describe_error,
    fetch_catalog,
    is_connection_lost,
    open_client,
)
from plughost.mcp.status import ServerState
from plughost.mcp.upstream_tap import LogHandler, UpstreamTap

__all__ = ["REFRESH_PAUSE", "Command", "ConnectionOwner"]

log = logging.getLogger(__name__)

_MAX_RETRY_DELAY = 60.0
REFRESH_PAUSE = 1.0
"""Seconds at least between the starts of two refreshes of one server's lists."""
Command = Literal["refresh", "stop", "lost", "relisten"]
"""What other tasks ask of the owner task, on its command stream."""


class ConnectionOwner:
    """The connection's state and its owner task's work; see the module docstring.

    Constructed through :class:`~plughost.mcp.client.MCPConnection`, which
    documents the arguments.
    """

    def __init__(
        self,
        name: str,
        config: MCPServerConfig,
        *,
        on_change: Callable[[str], None] | None = None,
        callbacks: Mapping[str, Any] | None = None,
        on_notification: Callable[[str, Any], None] | None = None,
        on_connected: Callable[[str, Client], Awaitable[None]] | None = None,
        listen_uris: Callable[[str], frozenset[str]] | None = None,
        on_log: LogHandler | None = None,
    ) -> None:
        self.name = name
        self._on_log = on_log
        self.config = config
        self.sandbox = SandboxState()  # a stdio server's protections, grants and refusals
        self._on_change = on_change
        self._on_notification = on_notification
        self._on_connected = on_connected
        self._listen_uris = listen_uris
        self._listening = anyio.Event()
        self._callbacks = dict(callbacks or {})  # sampling, elicitation, roots (mcp.Client)
        self._lock = anyio.Lock()
        self._state = ServerState.IDLE
        self._reason = ""
        self._failures = 0
        self._retry_at = 0.0
        self._client: Client | None = None
        self._tap: UpstreamTap | None = None
        self._protocol_version: str | None = None
        self._catalog: Catalog | None = None
        self._published: Catalog | None = None
        self._closed = False
        self._owner: asyncio.Task[None] | None = None
        self._owner_scope: anyio.CancelScope | None = None
        self._owner_done = anyio.Event()
        self._attempt = anyio.Event()
        self._commands: MemoryObjectSendStream[Command] | None = None
        self._refresh_pending = False
        self._refreshed_at = -math.inf
        self._urgent = anyio.Event()  # a stop or a lost connection: no pause waits longer
        self._lost_reason = ""
        self._exit_reason = ""

    @property
    def catalog(self) -> Catalog | None:
        """The last catalog, unless the server failed or was closed."""
        if self._state in (ServerState.FAILED, ServerState.CLOSED):
            return None
        return self._catalog

    def tap_of(self, client: Client) -> UpstreamTap | None:
        """The channel for forwarded calls beside ``client``, while it is live and handshake-era.

        Only a stdio server's connection has one (:mod:`plughost.mcp.upstream_tap`).
        """
        tap = self._tap
        if tap is None or client is not self._client or not tap.live:
            return None
        return None if client.protocol_version in MODERN_PROTOCOL_VERSIONS else tap

    def live_tap(self) -> tuple[Client, UpstreamTap] | None:
        """The live client and its tap, when a call may be written beside it now."""
        client = self._client
        tap = None if client is None else self.tap_of(client)
        return None if tap is None or client is None else (client, tap)

    # --- ways in from other tasks ---------------------------------------------------------

    def _send(self, command: Command) -> None:
        if command in ("stop", "lost"):
            self._urgent.set()
        if self._commands is not None:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._commands.send_nowait(command)

    def _mark_lost(self, client: Client, reason: str) -> None:
        """Have the owner end a connection found lost, so the status says so at once."""
        if self._client is client:
            self._lost_reason = reason
            self._send("lost")

    # --- the owner task -------------------------------------------------------------------

    async def _own(
        self,
        requests: MemoryObjectSendStream[Command],
        commands: MemoryObjectReceiveStream[Command],
    ) -> None:
        """Connect, serve, and after a failed connect retry after a backoff: all in this task."""
        try:
            with anyio.CancelScope() as scope:
                self._owner_scope = scope
                while True:
                    connected, failure = await self._connection(commands)
                    if connected:
                        self._set_disconnected(failure)
                        break
                    self._set_failed(failure)
                    await anyio.sleep(max(0.0, self._retry_at - time.monotonic()))
                    self._begin_attempt()
        finally:
            self._owner_scope = None
            self._client = None
            requests.close()
            commands.close()
            if self._closed:
                self._state = ServerState.CLOSED
            elif self._state not in (ServerState.FAILED, ServerState.DISCONNECTED):
                self._state = ServerState.IDLE
            self._attempt.set()
            self._owner_done.set()

    async def _connection(self, commands: MemoryObjectReceiveStream[Command]) -> tuple[bool, str]:
        """One connection: connect under connect_timeout, then serve until stopped or lost.

        Returns:
            Whether it got connected, and why it ended ("" for a requested stop).
        """
        timeout = self.config.connect_timeout
        connected, failure = False, ""
        tap = UpstreamTap(self._on_log)
        with anyio.CancelScope(deadline=anyio.current_time() + timeout) as scope:
            try:
                async with open_client(
                    self.config,
                    self._on_message,
                    self._on_exit,
                    callbacks=self._callbacks,
                    name=self.name,
                    sandbox=self.sandbox,
                    tap=tap,
                ) as client:
                    try:
                        check_outputs_safely(client.session)
                        catalog = await fetch_catalog(client, self.config)
                        scope.deadline = math.inf
                        connected = True
                        self._tap = tap
                        self._set_connected(client, catalog)
                        if self._on_connected is not None:
                            await self._on_connected(self.name, client)
                        failure = await self._serve(client, commands)
                    finally:
                        # Before anything closes, so no caller picks up a half-closed client.
                        self._client = None
                        self._tap = None
            except Exception as exc:
                failure = describe_error(exc)
                if self._exit_reason and is_connection_lost(exc):
                    failure = self._exit_reason  # "command exited with code 1", not "closed"
        if scope.cancel_called and not connected and not self._exit_reason:
            failure = f"no answer within {timeout:g} s (connect_timeout)"
        return connected, failure

    async def _serve(self, client: Client, commands: MemoryObjectReceiveStream[Command]) -> str:
        """Serve commands until ``stop`` (returns "") or ``lost`` (returns the reason)."""
        lost = ""
        self._urgent = anyio.Event()
        self._refresh_pending = False  # a refresh the last connection skipped: this one listed
        async with anyio.create_task_group() as tg:
            listening = self._start_listen(tg, client)
            async for command in commands:
                if command == "stop":
                    break
                if command == "lost":
                    lost = self._lost_reason or "the server closed the connection"
                    break
                if command == "relisten":
                    listening.cancel()
                    listening = self._start_listen(tg, client)
                    continue
                if await self._paused():
                    self._refresh_pending = False  # what changed during the pause is in this one
                    await self._refresh(client)
            tg.cancel_scope.cancel()
        return lost

    async def _paused(self) -> bool:
        """Wait out the pause since the last refresh; False if a stop or loss came first."""
        delay = self._refreshed_at + REFRESH_PAUSE - anyio.current_time()
        if delay > 0:
            with anyio.move_on_after(delay):
                await self._urgent.wait()
        if self._urgent.is_set():
            return False  # the command behind is served next
        self._refreshed_at = anyio.current_time()
        return True

    def _start_listen(self, tg: anyio.abc.TaskGroup, client: Client) -> anyio.CancelScope:
        scope = anyio.CancelScope()
        uris = self._listen_uris(self.name) if self._listen_uris is not None else frozenset()
        acknowledged = self._listening  # this stream's, even once a newer one is asked for
        if _wants_listen(client, uris):
            tg.start_soon(self._listen, client, scope, uris, acknowledged)
        else:
            acknowledged.set()
        return scope

    async def _refresh(self, client: Client) -> None:
        try:
            with anyio.fail_after(self.config.connect_timeout):
                catalog = await fetch_catalog(client, self.config)
        except Exception as exc:
            reason = describe_error(exc)
            log.warning("mcp catalog refresh failed server=%s reason=%s", self.name, reason)
            return
        log.info("mcp catalog refreshed server=%s entries=%d", self.name, catalog.size)
        self._catalog = catalog
        self._publish()

    async def _listen(
        self,
        client: Client,
        scope: anyio.CancelScope,
        uris: frozenset[str],
        acknowledged: anyio.Event,
    ) -> None:
        """Follow change events on a 2026-era connection (they come only on a listen stream)."""
        with scope:
            try:
                await self._follow(client, uris, acknowledged)
            except Exception as exc:
                self._listen_ended(exc)

    async def _follow(
        self, client: Client, uris: frozenset[str], acknowledged: anyio.Event
    ) -> None:
        everything = self.config.exposes_everything
        async with client.listen(
            tools_list_changed=True,
            prompts_list_changed=everything,
            resources_list_changed=everything,
            resource_subscriptions=sorted(uris),
        ) as subscription:
            acknowledged.set()
            async for event in subscription:
                # A resource update also reaches _on_message as a notification (the
                # SDK passes the stream's notifications to the message handler too).
                if not isinstance(event, ResourceUpdated):
                    self._request_refresh()

    def _listen_ended(self, exc: Exception) -> None:
        log.debug("mcp change stream ended server=%s reason=%s", self.name, describe_error(exc))
        cause = exc.__cause__ if exc.__cause__ is not None else exc
        if is_connection_lost(cause):
            # The stream died with the connection: let the owner close it now, so
            # the status says so and the next call reconnects without a failed try.
            self._lost_reason = describe_error(cause)
            self._send("lost")

    async def _on_message(self, message: Any) -> None:
        """Session callback: change notifications on handshake-era connections."""
        if isinstance(
            message,
            types.ToolListChangedNotification
            | types.PromptListChangedNotification
            | types.ResourceListChangedNotification,
        ):
            self._request_refresh()
        elif isinstance(message, Exception):
            reason = describe_error(message)
            log.debug("mcp transport error server=%s reason=%s", self.name, reason)
            client = self._client
            if client is not None and is_connection_lost(message):
                self._mark_lost(client, reason)
        elif self._on_notification is not None:
            self._on_notification(self.name, message)

    def _on_exit(self, reason: str) -> None:
        """A stdio server's process ended by itself: remember why, end the connection now."""
        log.info("mcp server process ended server=%s reason=%s", self.name, reason)
        self._exit_reason = reason
        client = self._client
        if client is not None:
            self._mark_lost(client, reason)

    def _request_refresh(self) -> None:
        if not self._refresh_pending:
            self._refresh_pending = True
            self._send("refresh")

    # --- state ----------------------------------------------------------------------------

    def _begin_attempt(self) -> None:
        self._attempt = anyio.Event()
        self._exit_reason = ""
        self._state = ServerState.CONNECTING
        transport = self.config.resolved_transport
        log.info("mcp server connecting server=%s transport=%s", self.name, transport)

    def _set_connected(self, client: Client, catalog: Catalog) -> None:
        self._client = client
        self._protocol_version = client.protocol_version
        self._catalog = catalog
        self._state = ServerState.CONNECTED
        self._reason = ""
        self._failures = 0
        log.info(
            "mcp server connected server=%s protocol=%s entries=%d",
            self.name,
            client.protocol_version,
            catalog.size,
        )
        self._attempt.set()
        self._publish()

    def _set_disconnected(self, failure: str) -> None:
        # A lost connection is not a failed server: its tools stay, the next call reconnects.
        self._state = ServerState.DISCONNECTED if failure else ServerState.IDLE
        if failure:
            self._reason = f"connection lost: {failure}"
            log.warning("mcp server connection lost server=%s reason=%s", self.name, failure)

    def _set_failed(self, failure: str) -> None:
        self._failures += 1
        delay = min(self.config.retry_delay * 2 ** (self._failures - 1), _MAX_RETRY_DELAY)
        self._retry_at = time.monotonic() + delay
        self._state = ServerState.FAILED
        self._reason = failure
        log.warning(
            "mcp server failed server=%s reason=%s failures=%d retry_in=%.1f",
            self.name,
            failure,
            self._failures,
            delay,
        )
        self._attempt.set()
        self._publish()  # its tools are withdrawn

    def _publish(self) -> None:
        """Tell ``on_change`` when :attr:`catalog` is not what it last reported."""
        catalog = self.catalog
        if catalog == self._published:
            return
        self._published = catalog
        if self._on_change is not None:
            self._on_change(self.name)


def _wants_listen(client: Client, uris: frozenset[str]) -> bool:
    tools = client.server_capabilities.tools
    modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
    return modern and (bool(uris) or (tools is not None and bool(tools.list_changed)))
