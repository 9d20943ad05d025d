"""One connection to one upstream MCP server, held by one owner task.

Every anyio context of a connection (the subprocess or HTTP client, the
transport's task group, the session) is entered and exited by a single owner
task. Other tasks send requests through the live :class:`mcp.Client`, but they
never close anything: to stop, they ask the owner (a ``stop`` command when
connected, else a cancel of the owner's own scope) and wait for it. Closing an
anyio context from a task that did not enter it corrupts its cancel scopes and
has been seen to spin a CPU at 100 %.

The lifecycle, as :class:`ServerState`::

    IDLE --connect()--> CONNECTING --> CONNECTED --lost--> DISCONNECTED (the next call reconnects)
                          ^    |
                 backoff  |    +--failed--> FAILED
                          +-----------------+
    any --close()--> CLOSED

Connecting is lazy (the first :meth:`MCPConnection.connect` or
:meth:`MCPConnection.request`) and bounded by ``connect_timeout``: a caller
waits no longer than that, even while a hung server's process is still being
stopped. After a failed connect the owner stays and tries again after a backoff
(``retry_delay``, doubled per failure, at most 60 s), so a server that comes
back is found without anyone asking; meanwhile calls fail at once with the
reason. The connection is marked lost as soon as it is known: a stdio server's
process ended (with its exit code), the change stream or a transport reported
the end, a request found it gone.

A request is never run twice. One that finds the connection lost is sent again
on a new connection only when it provably did not run: it never left this
process (:mod:`plughost.mcp.delivery` tracks that on stdio and streamable
HTTP), or the server said it does not know the session (HTTP 404, or 400 with
"No valid session ID provided" as server-everything says). Any other request
that met a lost connection fails with :class:`OutcomeUnknownError`: it may or
may not have run. Change notifications from the server, on either protocol
era, make the owner list the server again.

What does not live here: the session itself (:mod:`plughost.mcp.session`),
naming and result conversion (:mod:`plughost.mcp.provider`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, TypeVar

import anyio
import anyio.abc
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import Client, MCPError
from mcp.shared.subscriptions import ResourceUpdated
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from plughost.mcp import delivery
from plughost.mcp.config import MCPServerConfig
from plughost.mcp.delivery import OutcomeUnknownError
from plughost.mcp.session import (
    Catalog,
    describe_error,
    fetch_catalog,
    is_connection_lost,
    open_client,
    tracks_delivery,
)
from plughost.mcp.status import ServerState, ServerStatus, ServerUnavailableError

__all__ = [
    "MCPConnection",
    "OutcomeUnknownError",
    "ServerState",
    "ServerStatus",
    "ServerUnavailableError",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

_MAX_RETRY_DELAY = 60.0
_CONNECT_SLACK = 0.5  # past connect_timeout, for the owner to record its own verdict
_STOP_GRACE = 5.0
_Command = Literal["refresh", "stop", "lost", "relisten"]
_ABANDONED: set[asyncio.Task[None]] = set()  # owners that would not stop, kept until they do


class MCPConnection:
    """The connection to one MCP server; safe to use from many tasks.

    Args:
        name: The server's configured name.
        config: How to reach it.
        on_change: Called with ``name`` whenever :attr:`catalog` changes: a
            connect, a list_changed refresh, the server failing or recovering.
        on_notification: Called with ``name`` and each server notification that
            is not a list change (resource updates, for one).
        on_connected: Awaited with ``name`` and the client after each connect, in
            the owner task, before the connection serves commands (to restore
            subscriptions); its failures are its own to handle.
        listen_uris: The resource URIs a 2026-07-28 connection's listen stream asks
            updates for (they reach ``on_notification`` like any notification);
            read at each (re)opening of the stream, see :meth:`relisten`.
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
    ) -> None:
        self.name = name
        self.config = config
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
        self._protocol_version: str | None = None
        self._catalog: Catalog | None = None
        self._published: Catalog | None = None
        self._closed = False
        self._owner: asyncio.Task[None] | None = None
        self._owner_scope: anyio.CancelScope | None = None
        self._owner_done = anyio.Event()
        self._attempt = anyio.Event()
        self._commands: MemoryObjectSendStream[_Command] | None = None
        self._refresh_pending = False
        self._lost_reason = ""
        self._exit_reason = ""

    # --- public API -----------------------------------------------------------------------

    @property
    def catalog(self) -> Catalog | None:
        """The last catalog, unless the server failed or was closed."""
        if self._state in (ServerState.FAILED, ServerState.CLOSED):
            return None
        return self._catalog

    def status(self) -> ServerStatus:
        """A snapshot of the connection's state."""
        retry_in = None
        if self._state is ServerState.FAILED:
            retry_in = max(0.0, self._retry_at - time.monotonic())
        return ServerStatus(
            state=self._state,
            transport=self.config.resolved_transport,
            reason=self._reason,
            tools=self._catalog.size if self._catalog is not None else 0,
            failures=self._failures,
            retry_in=retry_in,
            protocol_version=self._protocol_version,
        )

    def wants_connect(self) -> bool:
        """Whether :meth:`connect` would try (or wait for) a connection now."""
        if self._closed or self._client is not None:
            return False
        return self._state is not ServerState.FAILED or time.monotonic() >= self._retry_at

    async def connect(self) -> Client:
        """Return the live client, connecting first if needed.

        Raises:
            ServerUnavailableError: The connect failed or timed out, or the
                server is in backoff after a failure; the message says which.
        """
        client = self._client
        if client is not None:
            return client
        async with self._lock:
            return await self._connect_locked(ignore_backoff=False)

    async def request(
        self,
        operation: Callable[[Client], Awaitable[T]],
        *,
        timeout: float,
        idempotent: bool = False,
    ) -> T:
        """Run ``operation`` on the live client under ``timeout`` seconds.

        If the connection turns out to be lost, reconnect; send ``operation`` again
        only if it provably did not run, or if it is ``idempotent`` (a read).

        Raises:
            ServerUnavailableError: No connection could be had.
            OutcomeUnknownError: The connection was lost after ``operation`` may have
                reached the server; it was not sent again.
            TimeoutError: ``operation`` took longer than ``timeout``.
            MCPError: The server answered with a JSON-RPC error.
        """
        client = await self.connect()
        try:
            return await self._send_once(client, operation, timeout)
        except _LostError as lost:
            if lost.may_have_run and not idempotent:
                raise _outcome_unknown(lost.reason) from lost.__cause__
            reason = lost.reason
        log.info("mcp connection lost, reconnecting server=%s reason=%s", self.name, reason)
        client = await self._reconnect(client, reason)
        try:
            return await self._send_once(client, operation, timeout)
        except _LostError as lost:
            if lost.may_have_run and not idempotent:
                raise _outcome_unknown(lost.reason) from lost.__cause__
            message = f"connection lost again after reconnecting: {lost.reason}"
            raise ServerUnavailableError(message) from lost.__cause__

    async def _send_once(
        self, client: Client, operation: Callable[[Client], Awaitable[T]], timeout: float
    ) -> T:
        """Send ``operation`` once; a lost connection becomes a :class:`_LostError`."""
        with delivery.tracking(tracked=tracks_delivery(self.config)) as sent:
            try:
                with anyio.fail_after(timeout):
                    return await operation(client)
            except Exception as exc:
                refusal = sent.refusal
                session_lost = refusal is not None and refusal.lost_session
                if not session_lost and not is_connection_lost(exc):
                    if refusal is not None and isinstance(exc, MCPError):
                        # The SDK's stand-in for a body it could not read: the server's own words.
                        message = f"{refusal.message} (HTTP {refusal.status})"
                        raise MCPError(code=exc.code, message=message) from exc
                    raise
                if refusal is not None:
                    reason = f"{refusal.message} (HTTP {refusal.status})"
                else:
                    reason = self._exit_reason or describe_error(exc)
                self._mark_lost(client, reason)
                may_have_run = sent.may_have_run and not session_lost
                raise _LostError(reason, may_have_run=may_have_run) from exc

    def _mark_lost(self, client: Client, reason: str) -> None:
        """Have the owner end a connection found lost, so the status says so at once."""
        if self._client is client:
            self._lost_reason = reason
            self._send("lost")

    async def relisten(self, timeout: float) -> None:
        """Reopen a 2026-07-28 connection's listen stream with the current ``listen_uris``.

        Returns once the server acknowledged the new stream.

        Raises:
            ServerUnavailableError: No connection could be had.
            TimeoutError: No acknowledgement within ``timeout`` seconds.
        """
        await self.connect()
        self._listening = anyio.Event()
        listening = self._listening
        self._send("relisten")
        with anyio.fail_after(timeout):
            await listening.wait()

    async def close(self) -> None:
        """Close the connection from any task; the owner task does the closing."""
        self._closed = True
        await self._stop_owner()
        self._state = ServerState.CLOSED
        self._reason = ""

    # --- connecting -----------------------------------------------------------------------

    async def _connect_locked(self, *, ignore_backoff: bool) -> Client:
        if self._client is not None:
            return self._client
        if self._closed:
            raise ServerUnavailableError("the connection is closed")
        wait = self._retry_at - time.monotonic()
        if self._state is ServerState.FAILED and wait > 0 and not ignore_backoff:
            raise ServerUnavailableError(f"{self._reason} (next attempt in {wait:.1f} s)")
        owner = self._owner
        if self._state is not ServerState.CONNECTING or owner is None or owner.done():
            await self._stop_owner()  # one that lost its connection, or waits out a backoff
            self._start_owner()
        timeout = self.config.connect_timeout
        # The owner gives up at connect_timeout, but stopping a hung server's process
        # takes a few seconds more: the caller does not wait for that.
        with anyio.move_on_after(timeout + _CONNECT_SLACK):
            await self._attempt.wait()
        client = self._live_client()
        if client is None:
            if not self._attempt.is_set():
                raise ServerUnavailableError(f"no answer within {timeout:g} s (connect_timeout)")
            raise ServerUnavailableError(self._reason or "the connection was closed")
        return client

    def _live_client(self) -> Client | None:
        """Read the client anew (type checkers keep a narrowing across awaits)."""
        return self._client

    async def _reconnect(self, broken: Client, reason: str) -> Client:
        async with self._lock:
            if self._client is not None and self._client is not broken:
                return self._client  # another caller reconnected already
            self._reason = f"connection lost: {reason}"
            await self._stop_owner()
            return await self._connect_locked(ignore_backoff=True)

    def _start_owner(self) -> None:
        send, receive = anyio.create_memory_object_stream[_Command](math.inf)
        self._commands = send
        self._refresh_pending = False
        self._lost_reason = ""
        self._owner_done = anyio.Event()
        self._begin_attempt()
        self._owner = asyncio.get_running_loop().create_task(
            self._own(send, receive), name=f"mcp-server:{self.name}"
        )

    async def _stop_owner(self) -> None:
        """Ask the owner task to finish and wait for it: shielded, each step bounded.

        The ladder: a ``stop`` command when connected (a graceful exit, so an HTTP
        session ends with a DELETE), else a cancel of the owner's scope; then that
        cancel; then cancelling the task. The owner always does the closing.
        """
        owner = self._owner
        if owner is None:
            return
        self._owner = None
        done = self._owner_done
        first = self._send_stop if self._client is not None else self._cancel_owner_scope
        steps: list[Callable[[], object]] = [first, self._cancel_owner_scope, owner.cancel]
        with anyio.CancelScope(shield=True):
            for step in steps:
                if done.is_set() or owner.done():
                    break
                step()
                with anyio.move_on_after(_STOP_GRACE):
                    await done.wait()
                if not done.is_set():
                    log.warning("mcp server owner slow to stop server=%s", self.name)
        if owner.done():
            if not owner.cancelled():
                owner.exception()  # always None: the owner records its own failures
        else:
            log.error("mcp server owner would not stop, abandoning it server=%s", self.name)
            _ABANDONED.add(owner)
            owner.add_done_callback(_ABANDONED.discard)

    def _send_stop(self) -> None:
        self._send("stop")

    def _send(self, command: _Command) -> None:
        if self._commands is not None:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._commands.send_nowait(command)

    def _cancel_owner_scope(self) -> None:
        if self._owner_scope is not None:
            self._owner_scope.cancel()

    # --- the owner task -------------------------------------------------------------------

    async def _own(
        self,
        requests: MemoryObjectSendStream[_Command],
        commands: MemoryObjectReceiveStream[_Command],
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

    async def _connection(self, commands: MemoryObjectReceiveStream[_Command]) -> tuple[bool, str]:
        """One connection: connect under connect_timeout, then serve until stopped or lost.

        Returns:
            Whether it got connected, and why it ended ("" for a requested stop).
        """
        timeout = self.config.connect_timeout
        connected, failure = False, ""
        with anyio.CancelScope(deadline=anyio.current_time() + timeout) as scope:
            try:
                async with open_client(
                    self.config, self._on_message, self._on_exit, callbacks=self._callbacks
                ) as client:
                    try:
                        catalog = await fetch_catalog(client, self.config)
                        scope.deadline = math.inf
                        connected = True
                        self._set_connected(client, catalog)
                        if self._on_connected is not None:
                            await self._on_connected(self.name, client)
                        failure = await self._serve(client, commands)
                    finally:
                        # Before anything closes, so no caller picks up a half-closed client.
                        self._client = None
            except Exception as exc:
                failure = describe_error(exc)
                if self._exit_reason and is_connection_lost(exc):
                    failure = self._exit_reason  # "command exited with code 1", not "closed"
        if scope.cancel_called and not connected and not self._exit_reason:
            failure = f"no answer within {timeout:g} s (connect_timeout)"
        return connected, failure

    async def _serve(self, client: Client, commands: MemoryObjectReceiveStream[_Command]) -> str:
        """Serve commands until ``stop`` (returns "") or ``lost`` (returns the reason)."""
        lost = ""
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
                self._refresh_pending = False
                await self._refresh(client)
            tg.cancel_scope.cancel()
        return lost

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


class _LostError(Exception):
    """A request met a lost connection; whether it may have run decides a retry."""

    def __init__(self, reason: str, *, may_have_run: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.may_have_run = may_have_run


def _outcome_unknown(reason: str) -> OutcomeUnknownError:
    return OutcomeUnknownError(
        f"the connection was lost while the request was with the server ({reason}); "
        "it may or may not have run, so it was not sent again"
    )
