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

What lives here is what any task may call: connecting on demand, sending a
request and deciding whether it may be sent again, starting and stopping the
owner task. What does not: the owner task's own work and the state it keeps
(:mod:`plughost.mcp.client_owner`), the session itself
(:mod:`plughost.mcp.session`), naming and result conversion
(:mod:`plughost.mcp.provider`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
import mcp_types as types
from mcp import Client, MCPError

from plughost.mcp import delivery
from plughost.mcp.client_owner import Command, ConnectionOwner
from plughost.mcp.delivery import OutcomeUnknownError
from plughost.mcp.session import describe_error, is_connection_lost, tracks_delivery
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

_CONNECT_SLACK = 0.5  # past connect_timeout, for the owner to record its own verdict
_STOP_GRACE = 5.0
_ABANDONED: set[asyncio.Task[None]] = set()  # owners that would not stop, kept until they do


class MCPConnection(ConnectionOwner):
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
        on_log: Called with each record a stdio server logs, in the order it wrote
            them, by the task that read them (else the session's ``logging_callback``
            gets them, a hop later).
    """

    # --- public API -----------------------------------------------------------------------

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
            sandbox=tuple(self.sandbox.active),
            network=tuple(self.config.network),
            denied=self.sandbox.denied,
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

    def lost_during(self, client: Client, error: MCPError | None = None) -> OutcomeUnknownError:
        """A request written beside ``client`` met the connection's end: may have run.

        As :meth:`request` has it: the connection is marked lost, and the request
        is not sent again. ``error`` is the server's answer that says so, if any.
        """
        closed = error or MCPError(code=types.CONNECTION_CLOSED, message="Connection closed")
        reason = self._exit_reason or describe_error(closed)
        self._mark_lost(client, reason)
        return _outcome_unknown(reason)

    async def _send_once(
        self, client: Client, operation: Callable[[Client], Awaitable[T]], timeout: float
    ) -> T:
        """Send ``operation`` once; a lost connection becomes a :class:`_LostError`."""
        with delivery.tracking(tracked=tracks_delivery(self.config)) as sent:
            try:
                # asyncio's deadline, not anyio's: the same TimeoutError, without an anyio
                # cancel scope's bookkeeping on every call.
                async with asyncio.timeout(timeout):
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
        send, receive = anyio.create_memory_object_stream[Command](math.inf)
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

    def _cancel_owner_scope(self) -> None:
        if self._owner_scope is not None:
            self._owner_scope.cancel()


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
