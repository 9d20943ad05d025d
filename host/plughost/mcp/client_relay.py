"""ClientRelay: what a call answered beside the server session asks of its stdio client.

A ``tools/call`` that :mod:`plughost.mcp.forwarding` takes off the stream still
has a client behind it: the plugin it reaches may log, or ask the client's model
(``ctx.llm.generate``) or user (``ctx.elicit``), and an upstream server may do the
same (:mod:`plughost.mcp.upstream_requests`). The relay is the server's side of
those exchanges for one stdio client, beside the SDK's session:

- It keeps an SDK :class:`~mcp.server.connection.Connection` of its own for the
  client, filled from what passes by: the capabilities of an ``initialize``
  request once the server answered it (with the protocol version of that
  answer; one the server refused changes nothing, as in the server's own
  connection), each ``logging/setLevel`` the server accepted, and
  ``notifications/initialized``.
- :meth:`ClientRelay.link` gives a taken call the
  :class:`~plughost.mcp.client_link.MCPClientLink` the server's handler gives its
  own calls, over a :class:`~mcp.server.session.ServerSession` whose channel is
  this relay. So the checks are the same (a capability the client did not
  declare, a method its protocol lacks, a call that has finished: refused
  before anything is sent), the messages, the user's view of who asks, the log
  levels and the validation of the client's answer too.
- A request goes to the client under an id of the relay's own
  (``plughost-<random>-<n>``, a string the SDK's session never issues), and
  not before the client sent ``notifications/initialized``: a server sends no
  request but pings and logging before it, so a request made earlier is held
  until then, for at most ``_HOLD_TIMEOUT`` seconds; after that it is refused
  with a :class:`~plughost.tools.client_link.ClientRequestError` that says the
  client never sent it. Log records go at once.
- A call waits on at most :data:`MAX_OPEN_REQUESTS` requests to its client at a
  time (held ones included); one more is refused at once, so an upstream server
  that asks in a loop of its own cannot pile requests up on a client that does
  not answer. When the call ends, a request of it still open is abandoned: the
  client is sent ``notifications/cancelled`` for it, the asker is told the call
  has finished, and the relay keeps nothing of it.
- :meth:`ClientRelay.claim` takes a response off the client's stream only for a
  request the relay sent and is waiting for, and delivers it to that request
  alone. A response under an id of the relay's prefix that it is not waiting
  for (never issued, or already answered) is dropped; any other id passes to
  the session, which drops the ids it did not issue itself.
- A request whose call is cancelled while it waits tells the client with
  ``notifications/cancelled``; when the client's stream ends, every waiting
  request fails with ``CONNECTION_CLOSED``, as the session's own do.

What does not live here: which calls are taken and how they are answered
(:mod:`plughost.mcp.forwarding`), what is asked and how the answer is checked
(:mod:`plughost.mcp.client_link`).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import secrets
from collections.abc import Mapping
from typing import Any

import anyio
import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import MCPError
from mcp.shared.message import MessageMetadata, SessionMessage
from pydantic import ValidationError

from plughost.mcp.client_link import (
    LOG_LEVELS,
    MAX_OPEN_REQUESTS,
    MCPClientLink,
    asks_for_logs,
    keep_log_level,
    too_many_requests,
)
from plughost.tools.client_link import ClientRequestError

__all__ = ["MAX_OPEN_REQUESTS", "ClientRelay"]

log = logging.getLogger(__name__)

_CANCEL_WRITE_TIMEOUT = 2.0
_HOLD_TIMEOUT = 10.0  # how long a request waits for notifications/initialized


class ClientRelay:
    """The server's requests and notifications to one stdio client, beside the session.

    Args:
        write: The client's write stream (``SessionMessage`` items).
        client: Who the client is, as the links of the session's own calls name it
            (:attr:`~plughost.mcp.client_link.MCPClientLink.client`).
    """

    def __init__(self, write: Any, client: object | None = None) -> None:
        self._write = write
        self.client: object = self if client is None else client
        self._prefix = f"plughost-{secrets.token_hex(4)}-"
        self._ids = itertools.count(1)
        self._waiting: dict[str, _Answer] = {}  # sent, awaiting the client's response
        self._held: set[_Answer] = set()  # awaiting notifications/initialized
        self._hello: types.InitializeRequestParams | None = None
        self._levels: dict[types.RequestId, types.LoggingLevel] = {}
        self._closed = False
        self._ready = False
        self.connection = Connection.for_loop(self)
        """The client as the relay knows it: capabilities, version, level, initialized."""

    # --- what passes by -------------------------------------------------------------------

    def introduced(self, params: Mapping[str, Any] | None) -> None:
        """Note the client's ``initialize`` params; they count once the server answers it."""
        try:
            self._hello = types.InitializeRequestParams.model_validate(params or {}, by_name=False)
        except ValidationError:
            self._hello = None  # the server refuses it too, and answers it with an error

    def settled(self, version: str) -> None:
        """Note the server's answer to ``initialize``: its version, and the client's params."""
        self.connection.protocol_version = version
        if self._hello is not None:
            self.connection.client_params = self._hello

    def asked_level(self, request: types.JSONRPCRequest) -> None:
        """Note a ``logging/setLevel``; its level counts once the server accepts it."""
        level = (request.params or {}).get("level")
        if level in LOG_LEVELS:
            self._levels[request.id] = level

    @property
    def wants_logs(self) -> bool:
        """Whether the client set a log level: a call then runs a sender of its records."""
        return asks_for_logs(self.connection)

    @property
    def setting_level(self) -> bool:
        """Whether a ``logging/setLevel`` awaits the server's answer.

        A call taken meanwhile would miss the level the session's handler is about
        to keep, which a call of the session's own sees: such a call is left to it.
        """
        return bool(self._levels)

    def answered(self, message: types.JSONRPCMessage) -> None:
        """See the server's answers: an accepted ``logging/setLevel`` sets the level."""
        if (
            isinstance(message, types.JSONRPCResponse | types.JSONRPCError)
            and message.id is not None
        ):
            level = self._levels.pop(message.id, None)
            if level is not None and isinstance(message, types.JSONRPCResponse):
                keep_log_level(self.connection, level)

    def initialized(self) -> None:
        """Note ``notifications/initialized``: from now on the client may be asked."""
        self.connection.initialized.set()
        self._ready = True
        for held in self._held:
            held.settle(_GO)
        self._held.clear()

    def claim(self, message: types.JSONRPCMessage) -> bool:
        """Deliver ``message`` if it answers a request of the relay; False passes it on."""
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            return False
        request_id = message.id
        if not isinstance(request_id, str) or not request_id.startswith(self._prefix):
            return False
        answer = self._waiting.pop(request_id, None)
        if answer is None:
            log.debug("mcp client response for no request in progress dropped id=%s", request_id)
            return True
        answer.settle(message.result if isinstance(message, types.JSONRPCResponse) else message)
        return True

    def close(self) -> None:
        """Fail every waiting request with ``CONNECTION_CLOSED``; none is sent from now on."""
        self._closed = True
        for answer in (*self._waiting.values(), *self._held):
            answer.settle(_closed())
        self._waiting.clear()
        self._held.clear()

    @property
    def pending(self) -> int:
        """How many requests wait for the client: held, or sent and unanswered."""
        return len(self._waiting) + len(self._held)

    # --- one call's link ------------------------------------------------------------------

    def link(self, request_id: types.RequestId, tool: str) -> MCPClientLink:
        """The client link of the taken call ``request_id`` to ``tool``."""
        version = self.connection.protocol_version
        channel = _CallChannel(self, request_id)
        session = ServerSession(channel, self.connection)
        ctx: ServerRequestContext[Any] = ServerRequestContext(
            session=session,
            lifespan_context=None,
            protocol_version=version,
            method="tools/call",
            request_id=request_id,
        )
        return _RelayedLink(ctx, channel, tool, self.client)

    # --- the channel (mcp.shared.dispatcher.Outbound) -------------------------------------

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        """Send ``method`` to the client once it is initialized; its raw result.

        Raises:
            MCPError: The client answered with an error, or its stream closed.
            ClientRequestError: The client never sent ``notifications/initialized``.
        """
        return await self.request(method, params, None)

    async def request(
        self, method: str, params: Mapping[str, Any] | None, call: _CallChannel | None
    ) -> dict[str, Any]:
        """Send ``method`` for ``call`` (None: for no call); see :meth:`send_raw_request`.

        Raises:
            ClientRequestError: ``call`` has ended, or waits on too many requests.
        """
        if self._closed:
            raise _closed()
        answers = call.admit(method) if call is not None else set()
        try:
            if not self._ready:
                await self._hold(method, answers)
            return await self._exchange(method, params, answers)
        finally:
            if call is not None:
                call.open -= 1

    async def _hold(self, method: str, answers: set[_Answer]) -> None:
        log.debug("mcp client request held until notifications/initialized method=%s", method)
        held = _Answer()
        self._held.add(held)
        answers.add(held)
        try:
            with anyio.move_on_after(_HOLD_TIMEOUT):
                await held.wait()
        finally:
            self._held.discard(held)
            answers.discard(held)
        if not held.settled:
            raise ClientRequestError(
                f"the MCP client has not sent notifications/initialized {_HOLD_TIMEOUT:g} s "
                f"after its initialize handshake, so it cannot be asked {method} (the "
                "lifecycle lets a server ask nothing of a client before that notification)"
            )
        _settled(held.outcome, method)

    async def _exchange(
        self, method: str, params: Mapping[str, Any] | None, answers: set[_Answer]
    ) -> dict[str, Any]:
        request_id = f"{self._prefix}{next(self._ids)}"
        answer = _Answer()
        self._waiting[request_id] = answer
        answers.add(answer)
        request = types.JSONRPCRequest(
            jsonrpc="2.0", id=request_id, method=method, params=dict(params or {}) or None
        )
        try:
            await self._send(request)
            outcome = await answer.wait()
            if outcome is _ENDED:
                self._waiting.pop(request_id, None)
                await self._cancel(request_id)
        except anyio.get_cancelled_exc_class():
            if self._waiting.pop(request_id, None) is not None:
                await self._cancel(request_id)
            raise
        finally:
            answers.discard(answer)
            self._waiting.pop(request_id, None)
        return _settled(outcome, method)

    async def notify(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> None:
        """Send a notification to the client; dropped if its stream is closed."""
        notification = types.JSONRPCNotification(
            jsonrpc="2.0", method=method, params=dict(params or {}) or None
        )
        with contextlib.suppress(MCPError):  # _send's word for a closed stream
            await self._send(notification)

    async def _send(self, message: types.JSONRPCMessage) -> None:
        try:
            await self._write.send(SessionMessage(message))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.close()
            raise _closed() from None

    async def _cancel(self, request_id: str) -> None:
        """Tell the client a request it received is abandoned: shielded, and bounded."""
        params = {"requestId": request_id, "reason": "the call that asked has ended"}
        with anyio.move_on_after(_CANCEL_WRITE_TIMEOUT, shield=True):
            await self.notify("notifications/cancelled", params)

    @property
    def live(self) -> bool:
        """Whether the client's stream is open, so a request can be sent."""
        return not self._closed


_Outcome = dict[str, Any] | types.JSONRPCError | MCPError
_GO: _Outcome = {}  # a held request may go: the client is initialized
_ENDED: _Outcome = {}  # the call that asked has ended


class _Answer:
    """The one outcome a request of the relay waits for; the first settle wins."""

    __slots__ = ("_event", "outcome")

    def __init__(self) -> None:
        self._event = anyio.Event()
        self.outcome: _Outcome = {}

    @property
    def settled(self) -> bool:
        return self._event.is_set()

    def settle(self, outcome: _Outcome) -> None:
        if not self._event.is_set():
            self.outcome = outcome
            self._event.set()

    async def wait(self) -> _Outcome:
        await self._event.wait()
        return self.outcome


def _settled(outcome: _Outcome, method: str) -> dict[str, Any]:
    """The raw result of ``outcome``, or what it says went wrong, raised."""
    if outcome is _ENDED:
        name = method.split("/", 1)[0]
        raise ClientRequestError(f"the MCP call this {name} request belongs to has finished")
    if isinstance(outcome, MCPError):
        raise outcome
    if isinstance(outcome, types.JSONRPCError):
        error = outcome.error
        raise MCPError(code=error.code, message=error.message, data=error.data)
    return outcome


def _closed() -> MCPError:
    return MCPError(code=types.CONNECTION_CLOSED, message="Connection closed")


class _RelayedLink(MCPClientLink):
    """A taken call's client link: when the call ends, so do its open requests."""

    def __init__(
        self, ctx: ServerRequestContext[Any], channel: _CallChannel, tool: str, client: object
    ) -> None:
        super().__init__(ctx, tool=tool, client=client)
        self._channel = channel

    def _served(self) -> None:
        """The call is over: abandon what it still waits for of its client."""
        try:
            super()._served()
        finally:
            self._channel.end()


class _CallChannel:
    """One taken call's back-channel to its client (an SDK ``DispatchContext``)."""

    def __init__(self, relay: ClientRelay, request_id: types.RequestId) -> None:
        self._relay = relay
        self._request_id = request_id
        self._cancelled = anyio.Event()  # the forwarder cancels the call's scope instead
        self._answers: set[_Answer] = set()  # what the call's requests wait for
        self._ended = False
        self.open = 0
        """Requests of the call under way: held, sent or being sent."""

    def admit(self, method: str) -> set[_Answer]:
        """Count one more request of the call, or refuse it; the set its answers join."""
        if self._ended:
            _settled(_ENDED, method)
        if self.open >= MAX_OPEN_REQUESTS:
            raise too_many_requests()
        self.open += 1
        return self._answers

    def end(self) -> None:
        """The call has ended: what its requests still wait for ends too."""
        self._ended = True
        for answer in self._answers:
            answer.settle(_ENDED)

    @property
    def transport(self) -> Any:
        return None

    @property
    def can_send_request(self) -> bool:
        return self._relay.live

    @property
    def request_id(self) -> types.RequestId | None:
        return self._request_id

    @property
    def message_metadata(self) -> MessageMetadata:
        return None

    @property
    def cancel_requested(self) -> anyio.Event:
        return self._cancelled

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        return None  # the forwarder sends a taken call's progress under the client's token

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        return await self._relay.request(method, params, self)

    async def notify(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> None:
        await self._relay.notify(method, params, opts)
