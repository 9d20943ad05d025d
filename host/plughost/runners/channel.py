"""The host's end of one runner's socket: handshake, request/reply pairing, events.

One ROUTER socket per runner, bound by the host. Only a peer that opened with a
``runner.hello`` carrying this spawn's token and our protocol version is
served; garbage frames, wrong tokens and strangers are logged and dropped, and
affect nothing else. zmq and msgpack errors are translated here, at the edge.

The socket is driven straight from the event loop rather than through pyzmq's
asyncio sockets, which resolve one future per message and query the socket
several times per message. One reader callback drains every waiting message;
a send goes out at once (``NOBLOCK``) and waits only while the runner's queue
is full. ZeroMQ's notification descriptor is edge-triggered (it fires once for
a batch, and a send can swallow its wakeup), so the reader drains until the
socket reports nothing left, and a send that finds a message waiting has it
drained on the next loop iteration. Replies are received without a copy
(``copy=False``), so a 10 MB result is copied once, by the decoder.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import zmq
import zmq.asyncio

from plughost.runners.curve import CurveAuthority
from plughost_sdk import wire
from plughost_sdk.errors import ProtocolError, RunnerCrashedError

__all__ = ["RemoteError", "RunnerChannel"]

log = logging.getLogger(__name__)

RequestHandler = Callable[[wire.Envelope], Awaitable[Any]]
EventHandler = Callable[[wire.Envelope], None]

_BATCH = 256
"""Messages handled per wakeup before other callbacks get a turn."""

# Plain ints: pyzmq's enum flags cost a Python-level operation at every use.
_EVENTS = int(zmq.EVENTS)
_POLLIN, _POLLOUT = int(zmq.POLLIN), int(zmq.POLLOUT)
_NOBLOCK, _SNDMORE = int(zmq.NOBLOCK), int(zmq.SNDMORE)


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
    ) -> None:
        self._token = token
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
        self._fd = int(self._sock.getsockopt(zmq.FD))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._group: asyncio.TaskGroup | None = None
        self._failed: asyncio.Future[None] | None = None
        self._writers: list[asyncio.Future[None]] = []
        self._check_scheduled = False
        self._peer: bytes | None = None
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._next_id = 0
        self.rejected_frames = 0
        self.hello: dict[str, Any] = {}
        self.connected = asyncio.Event()

    async def run(self) -> None:
        """Receive until cancelled; dispatch every frame.

        Raises:
            zmq.ZMQError: the socket failed.
        """
        loop = asyncio.get_running_loop()
        async with asyncio.TaskGroup() as group:
            self._loop, self._group = loop, group
            self._failed = loop.create_future()
            loop.add_reader(self._fd, self._on_events)
            loop.call_soon(self._on_events)  # messages may have arrived before the reader
            try:
                await self._failed
            finally:
                loop.remove_reader(self._fd)
                self._group = None

    def _on_events(self) -> None:
        """Drain waiting messages and wake blocked senders (the socket's reader callback)."""
        self._check_scheduled = False
        sock, group, failed = self._sock, self._group, self._failed
        if sock.closed or group is None or failed is None or failed.done():
            return
        try:
            events = int(sock.getsockopt(_EVENTS))  # cheap "nothing new" for most checks
            if events & _POLLIN:
                for _ in range(_BATCH):
                    try:
                        identity = sock.recv(_NOBLOCK, copy=False)
                    except zmq.Again:  # drained: the descriptor signals the next message
                        break
                    self._receive_rest(group, identity)
                else:
                    self._schedule_events()  # more may wait: let other callbacks run first
                if self._writers:
                    events = int(sock.getsockopt(_EVENTS))
            if self._writers and events & _POLLOUT:
                writers, self._writers = self._writers, []
                for writer in writers:
                    if not writer.done():
                        writer.set_result(None)
        except Exception as exc:  # ends run(), which the supervisor reports as a socket failure
            failed.set_exception(exc)

    def _receive_rest(self, group: asyncio.TaskGroup, identity: zmq.Frame) -> None:
        """Receive the rest of a message whose first part is ``identity``, and dispatch it."""
        # Frame.more rather than the RCVMORE option: a socket option lookup costs more.
        if not identity.more:
            self._reject(None, "expected 2 frame parts, got 1")
            return
        sock = self._sock
        frame = sock.recv(_NOBLOCK, copy=False)
        parts, more = 2, frame.more
        while more:
            more = sock.recv(_NOBLOCK, copy=False).more
            parts += 1
        if parts != 2:
            self._reject(None, f"expected 2 frame parts, got {parts}")
            return
        self._dispatch(group, identity.bytes, frame.buffer)

    def _schedule_events(self) -> None:
        """Run the reader callback on the next loop iteration (once, however often asked)."""
        if not self._check_scheduled and self._loop is not None and self._group is not None:
            self._check_scheduled = True
            self._loop.call_soon(self._on_events)

    def _dispatch(self, group: asyncio.TaskGroup, identity: bytes, frame: memoryview) -> None:
        try:
            envelope = wire.decode(frame)
        except ProtocolError as exc:
            self._reject(identity, str(exc))
            return
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
        if not hmac.compare_digest(str(body.get("token", "")), self._token):
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
            self._reject(identity, "a second runner tried to connect")
            message = "another runner is already connected to this endpoint"
            self._send_soon(group, identity, _refusal(envelope, "unauthorized", message))
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
            await self._send_parts(identity, frame)
        except zmq.ZMQError as exc:
            log.debug("could not send to runner peer: %s", exc)

    async def _send_parts(self, identity: bytes, frame: bytes) -> None:
        """Send one message; wait only while the runner's queue is full."""
        sock = self._sock
        while True:
            try:
                # All parts of a message are queued once the first one is accepted.
                sock.send(identity, _NOBLOCK | _SNDMORE)
                sock.send(frame, _NOBLOCK, copy=False)
                break
            except zmq.Again:
                loop = asyncio.get_running_loop()
                writer = loop.create_future()
                self._writers.append(writer)
                loop.call_soon(self._on_events)  # writable again already? then retry at once
                await writer
        # The send may have swallowed the descriptor's wakeup for a reply: look once more.
        if not self._check_scheduled and int(sock.getsockopt(_EVENTS)) & _POLLIN:
            self._schedule_events()

    def _reject(self, identity: bytes | None, reason: str) -> None:
        self.rejected_frames += 1
        who = identity.hex() if identity else "unknown peer"
        log.warning("rejected a frame on %s from %s: %s", self.endpoint, who, reason)

    def _resolve(self, envelope: wire.Envelope) -> None:
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
        if self._peer is None:
            raise RunnerCrashedError("the runner is not connected")
        try:
            await self._send_parts(self._peer, wire.encode(envelope))
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
            TimeoutError: no reply within ``timeout`` (the runner is told to cancel).
            RunnerCrashedError: the runner went away before answering.
        """
        self._next_id += 1
        request_id = self._next_id
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._pending[request_id] = future
        deadline_ms = max(1, int(timeout * 1000))
        expiry: asyncio.TimerHandle | None = None
        try:
            await self.send(
                wire.request(request_id, method, body, plugin=plugin, deadline_ms=deadline_ms)
            )
            # A timer that fails the future: the same TimeoutError as asyncio.timeout(),
            # at a fraction of its cost on every call.
            expiry = loop.call_at(loop.time() + timeout, _expire, future)
            return await future
        except TimeoutError:
            await self._cancel_remote(request_id)
            raise
        finally:
            if expiry is not None:
                expiry.cancel()
            self._pending.pop(request_id, None)

    async def _cancel_remote(self, request_id: int) -> None:
        with contextlib.suppress(RunnerCrashedError):
            await self.send(wire.event("call.cancel", {"id": request_id}))

    def fail_all(self, reason: str) -> None:
        """Fail every request still waiting: the runner is gone."""
        for future in self._pending.values():
            if not future.done():
                future.set_exception(RunnerCrashedError(reason))
        self._pending.clear()

    @property
    def inflight(self) -> int:
        """Requests sent and not yet answered."""
        return len(self._pending)

    def close(self) -> None:
        """Close the socket."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._fd)  # a no-op unless run() never got to clean up
        self._sock.close(linger=0)


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
