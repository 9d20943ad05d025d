"""The host's end of one runner's socket: handshake, request/reply pairing, events.

One ROUTER socket per runner, bound by the host. Only a peer that opened with a
``runner.hello`` carrying this spawn's token and our protocol version is
served; garbage frames, wrong tokens and strangers are logged and dropped, and
affect nothing else. zmq and msgpack errors are translated here, at the edge.

The socket is driven straight from the event loop by a
:class:`~plughost_sdk.socket_pump.SocketPump`, the same one the runner uses.
Replies are received without a copy, and media travel as blob frames after the
envelope (protocol 2), so a 10 MB image is copied once, into its ``bytes``.
A message is ``[identity, envelope, *blobs]``; anything else is rejected.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import hashlib
import hmac
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import zmq
import zmq.asyncio

from plughost.runners.curve import CurveAuthority
from plughost_sdk import wire
from plughost_sdk.errors import ProtocolError, RunnerCrashedError
from plughost_sdk.socket_pump import SocketPump

__all__ = ["RemoteError", "RunnerChannel"]

log = logging.getLogger(__name__)

RequestHandler = Callable[[wire.Envelope], Awaitable[Any]]
EventHandler = Callable[[wire.Envelope], None]

_MAX_PARTS = 2 + wire.MAX_BLOBS
"""Identity, envelope and blob frames: the most parts a runner's message may have."""


class RemoteError(Exception):
    """The runner answered a request with a wire error."""

    def __init__(self, error: wire.WireError) -> None:
        super().__init__(error["message"])
        self.code = error["code"]
        self.error = error


class RunnerChannel:
    """Talks to one runner over a ROUTER socket the host binds."""

    def __init__(
        self,
        context: zmq.asyncio.Context,
        endpoint: str,
        token: str,
        *,
        hello_reply: Callable[[dict[str, Any]], dict[str, Any]],
        on_request: RequestHandler,
        on_event: EventHandler,
        max_message_bytes: int,
        curve: CurveAuthority | None = None,
        on_violation: Callable[[str], None] | None = None,
        on_ask: Callable[[], None] | None = None,
    ) -> None:
        # Only a digest of the token is kept: the token itself is spent by the first hello.
        self._token_digest = _digest(token)
        self._on_violation = on_violation
        self._on_ask = on_ask  # every request sent: a resting runner owes a beat again
        self._hello_reply = hello_reply
        self._on_request = on_request
        self._on_event = on_event
        # A plain socket on the host's context (with its default options): the event loop
        # drives it, see the module doc. pyzmq's stubs tie socket_class to the context type.
        sock: Any = context.socket(zmq.ROUTER, socket_class=zmq.Socket)  # type: ignore[arg-type]
        self._sock: zmq.Socket[bytes] = sock
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.setsockopt(zmq.MAXMSGSIZE, max_message_bytes + 64 * 1024)
        self._sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        if curve is not None:
            curve.secure_server(self._sock)
        self._sock.bind(endpoint)
        self.endpoint: str = self._sock.getsockopt_string(zmq.LAST_ENDPOINT)
        self._pump = SocketPump(self._sock, max_parts=_MAX_PARTS, on_send_error=self._send_failed)
        self._max_message_bytes = max_message_bytes
        self._peer: bytes | None = None
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._contexts: dict[int, contextvars.Context] = {}
        self._serving: dict[int, str] = {}  # call request id -> plugin, while in flight
        self._next_id = 0
        self._rejected = 0
        self.hello: dict[str, Any] = {}
        self.connected = asyncio.Event()

    async def run(self) -> None:
        """Receive until cancelled; dispatch every message.

        Raises:
            zmq.ZMQError: the socket failed.
        """
        async with asyncio.TaskGroup() as group:
            # A partial, not a lambda: one Python frame less on every message.
            await self._pump.run(functools.partial(self._on_message, group))

    @property
    def rejected_frames(self) -> int:
        """Messages dropped: malformed, from strangers, or with too many parts."""
        return self._rejected + self._pump.oversized

    def _on_message(self, group: asyncio.TaskGroup, parts: list[zmq.Frame]) -> None:
        # One function for what every reply goes through: each call costs a wakeup's
        # worth of cold caches, so the common path is kept short.
        identity = parts[0].bytes
        if len(parts) < 2:
            self._reject(identity, "expected an envelope after the identity, got nothing")
            return
        blobs = [part.buffer for part in parts[2:]] if len(parts) > 2 else []
        if blobs:
            size = sum(len(blob) for blob in blobs)
            if size > self._max_message_bytes:
                self._reject(identity, f"{size} bytes of blob frames, over the message limit")
                return
        try:
            envelopes = wire.decode_many(parts[1].buffer, blobs)
        except ProtocolError as exc:
            self._reject(identity, str(exc))
            return
        if identity == self._peer:
            for envelope in envelopes:
                if envelope["kind"] == "response":
                    self._resolve(envelope)
                else:
                    self._dispatch_one(group, identity, envelope)
            return
        for envelope in envelopes:
            if identity != self._peer and envelope is not envelopes[0]:
                # A stranger gets one hello per frame, not one per envelope it packed in:
                # otherwise a single frame buys up to MAX_BATCH refusals and log lines.
                self._reject(identity, f"{len(envelopes) - 1} more envelopes after a refused hello")
                return
            self._dispatch_one(group, identity, envelope)

    def _dispatch_one(
        self, group: asyncio.TaskGroup, identity: bytes, envelope: wire.Envelope
    ) -> None:
        if identity != self._peer:
            self._handshake(group, identity, envelope)
            return
        kind = envelope["kind"]
        if kind == "response":
            self._resolve(envelope)
        elif kind == "request":
            group.create_task(self._answer(envelope))
        else:
            try:
                self._on_event(envelope)
            except Exception as exc:  # a malformed event costs that event, not the channel
                self._reject(identity, f"bad {envelope['method']} event: {exc!r}")

    def _handshake(
        self, group: asyncio.TaskGroup, identity: bytes, envelope: wire.Envelope
    ) -> None:
        body = envelope["body"] if isinstance(envelope["body"], dict) else {}
        if envelope["method"] != "runner.hello" or envelope["kind"] != "request":
            self._reject(identity, f"{envelope['method']} before a hello")
            return
        if not hmac.compare_digest(_digest(str(body.get("token", ""))), self._token_digest):
            self._reject(identity, "hello with a wrong token")
            self._send_soon(group, identity, _refusal(envelope, "unauthorized", "wrong token"))
            return
        if body.get("protocol") != wire.PROTOCOL_VERSION:
            message = (
                f"runner speaks protocol {body.get('protocol')!r}, host speaks "
                f"{wire.PROTOCOL_VERSION}; install matching plughost and plughost-runner"
            )
            self._reject(identity, message)
            self._send_soon(group, identity, _refusal(envelope, "protocol_mismatch", message))
            return
        if self._peer is not None:
            # The right token a second time: it was stolen, by whoever sent either hello.
            # Not a race to win: the runner is recycled with a new token.
            self._reject(identity, "a second hello with this runner's token")
            message = "this runner's token was already used"
            self._send_soon(group, identity, _refusal(envelope, "unauthorized", message))
            if self._on_violation is not None:
                self._on_violation("a second hello with the runner's token")
            return
        self._peer = identity
        self.hello = body
        self._send_soon(
            group, identity, wire.encode(wire.response(envelope, self._hello_reply(body)))
        )
        self.connected.set()

    def _send_soon(self, group: asyncio.TaskGroup, identity: bytes, frame: bytes) -> None:
        group.create_task(self._send_to(identity, frame))

    async def _send_to(self, identity: bytes, frame: bytes) -> None:
        try:
            await self._pump.send((identity, frame))
        except zmq.ZMQError as exc:
            log.debug("could not send to runner peer: %s", exc)

    def _reject(self, identity: bytes | None, reason: str) -> None:
        self._rejected += 1
        who = identity.hex() if identity else "unknown peer"
        log.warning("rejected a frame on %s from %s: %s", self.endpoint, who, reason)

    def _resolve(self, envelope: wire.Envelope) -> None:
        self._serving.pop(envelope["id"], None)  # answered: no longer a live call
        future = self._pending.get(envelope["id"])
        if future is None or future.done():
            log.debug("response to unknown request id=%d dropped", envelope["id"])
            return
        error = envelope["error"]
        if error is None:
            future.set_result(envelope["body"])
        elif _is_error(error):
            future.set_exception(RemoteError(error))
        else:  # the caller gets a bad_payload result; the channel and its other calls go on
            future.set_exception(
                ProtocolError(f"the runner's reply holds a malformed error: {error!r:.200}")
            )

    async def _answer(self, envelope: wire.Envelope) -> None:
        try:
            reply = wire.response(envelope, await self._on_request(envelope))
        except RemoteError as exc:
            reply = wire.response(envelope, error=exc.error)
        except Exception as exc:
            log.exception("failed to answer %s from the runner", envelope["method"])
            reply = wire.response(envelope, error=wire.error_body("internal", str(exc)))
        await self.send(reply)

    async def send(self, envelope: wire.Envelope) -> None:
        """Send one envelope to the connected runner.

        Raises:
            RunnerCrashedError: there is no connected runner, or the socket failed.
        """
        parts = self._posted_or_parts(envelope)
        if parts:
            await self._send_parts(parts)

    def _posted_or_parts(self, envelope: wire.Envelope) -> list[bytes | memoryview]:
        """Post a one-frame envelope at once when nothing waits; else return its parts.

        Most messages: coalesced with the others sent in this iteration, without a
        coroutine. An empty list means it was posted.

        Raises:
            RunnerCrashedError: there is no connected runner.
        """
        if self._peer is None:
            raise RunnerCrashedError("the runner is not connected")
        parts = wire.encode_parts(envelope)
        if len(parts) == 1 and not self._pump.backlogged:
            self._pump.post((self._peer, parts[0]))
            return []
        return parts

    async def _send_parts(self, parts: list[bytes | memoryview]) -> None:
        """Send what :meth:`_posted_or_parts` could not post: wait for room, or send blobs."""
        if len(parts) == 1:  # the runner's queue is full: wait for room first
            await self._pump.drained()
            if self._peer is None:
                raise RunnerCrashedError("the runner is not connected")
            self._pump.post((self._peer, parts[0]))
            return
        if self._peer is None:
            raise RunnerCrashedError("the runner is not connected")
        try:
            await self._pump.send((self._peer, *parts))
        except zmq.ZMQError as exc:
            raise RunnerCrashedError(f"cannot reach the runner: {exc}") from exc

    async def request(
        self,
        method: wire.Method,
        body: Any = None,
        *,
        plugin: str | None = None,
        timeout: float,
    ) -> Any:
        """Send a request and wait for the reply body.

        Raises:
            RemoteError: the runner answered with an error.
            TimeoutError: no reply within ``timeout`` (the runner is told to cancel the call,
                as it is when the caller is cancelled).
            RunnerCrashedError: the runner went away before answering.
        """
        self._next_id += 1
        request_id = self._next_id
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._pending[request_id] = future
        # Events of this request (progress) are handled in the caller's context, so
        # what the caller set up for them (a progress sink) is visible to their handler.
        self._contexts[request_id] = contextvars.copy_context()
        deadline_ms = max(1, int(timeout * 1000))
        expiry: asyncio.TimerHandle | None = None
        sent = False
        if method in _SERVING_METHODS and plugin is not None:
            self._serving[request_id] = plugin
        if self._on_ask is not None:
            self._on_ask()
        try:
            parts = self._posted_or_parts(
                wire.request(request_id, method, body, plugin=plugin, deadline_ms=deadline_ms)
            )
            if parts:
                await self._send_parts(parts)
            sent = True
            # A timer that fails the future: the same TimeoutError as asyncio.timeout(),
            # at a fraction of its cost on every call.
            expiry = loop.call_at(loop.time() + timeout, _expire, future)
            return await future
        except (TimeoutError, asyncio.CancelledError):
            # The caller gave up (its deadline, or it was cancelled): the runner stops the call.
            if sent:
                self._cancel_remote(request_id)
            raise
        finally:
            if expiry is not None:
                expiry.cancel()
            self._pending.pop(request_id, None)
            self._contexts.pop(request_id, None)
            self._serving.pop(request_id, None)

    def context_of(self, request_id: int) -> contextvars.Context | None:
        """The context of the task that sent request ``request_id``, while it waits for it."""
        return self._contexts.get(request_id)

    def _cancel_remote(self, request_id: int) -> None:
        """Tell the runner to cancel a call, without waiting (the caller may be cancelled)."""
        peer = self._peer
        if peer is None or self._sock.closed:
            return
        frame = wire.encode(wire.event("call.cancel", {"id": request_id}))
        self._pump.post((peer, frame))  # never waits; a failure reaches _send_failed

    def _send_failed(self, exc: zmq.ZMQError) -> None:
        """A posted message did not go out: the runner's end is gone (ROUTER_MANDATORY)."""
        log.warning("cannot reach the runner on %s: %s", self.endpoint, exc)
        self.fail_all(f"cannot reach the runner: {exc}")

    def fail_all(self, reason: str, *, shutting_down: bool = False) -> None:
        """Fail every request still waiting: the runner is gone (or was stopped on purpose)."""
        for future in self._pending.values():
            if not future.done():
                error: Exception = RunnerCrashedError(reason)
                if shutting_down:
                    error = RemoteError(wire.error_body("shutting_down", reason))
                future.set_exception(error)
        self._pending.clear()

    def serving(self, request_id: int, plugin_id: str) -> bool:
        """Whether ``request_id`` is a call to ``plugin_id`` still awaiting its reply."""
        return self._serving.get(request_id) == plugin_id

    @property
    def inflight(self) -> int:
        """Requests sent and not yet answered."""
        return len(self._pending)

    def close(self) -> None:
        """Close the socket."""
        self._pump.detach()
        self._sock.close(linger=0)


_SERVING_METHODS = frozenset({"tool.invoke", "component.invoke"})
"""Requests during which a plugin is serving a call (and may use ``ctx.call_tool``)."""


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


def _expire(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_exception(TimeoutError())


def _is_error(error: Any) -> bool:
    """Whether ``error`` has the protocol's error shape (a code and a message)."""
    return (
        isinstance(error, dict)
        and isinstance(error.get("code"), str)
        and isinstance(error.get("message"), str)
    )


def _refusal(envelope: wire.Envelope, code: wire.ErrorCode, message: str) -> bytes:
    return wire.encode(wire.response(envelope, error=wire.error_body(code, message)))
