"""The host's end of one runner's socket: handshake, request/reply pairing, events.

One ROUTER socket per runner, bound by the host. Only a peer that opened with a
``runner.hello`` carrying this spawn's token and our protocol version is
served; garbage frames, wrong tokens and strangers are logged and dropped, and
affect nothing else. zmq and msgpack errors are translated here, at the edge.
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

from plughost_sdk import wire
from plughost_sdk.errors import ProtocolError, RunnerCrashedError

__all__ = ["RemoteError", "RunnerChannel"]

log = logging.getLogger(__name__)

RequestHandler = Callable[[wire.Envelope], Awaitable[Any]]
EventHandler = Callable[[wire.Envelope], None]


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
    ) -> None:
        self._token = token
        self._hello_reply = hello_reply
        self._on_request = on_request
        self._on_event = on_event
        self._sock = context.socket(zmq.ROUTER)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.setsockopt(zmq.MAXMSGSIZE, max_message_bytes + 64 * 1024)
        self._sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        self._sock.bind(endpoint)
        self.endpoint: str = self._sock.getsockopt_string(zmq.LAST_ENDPOINT)
        self._peer: bytes | None = None
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._next_id = 0
        self.rejected_frames = 0
        self.hello: dict[str, Any] = {}
        self.connected = asyncio.Event()

    async def run(self) -> None:
        """Receive until cancelled; dispatch every frame."""
        async with asyncio.TaskGroup() as group:
            while True:
                try:
                    identity, frame = await self._recv()
                except ProtocolError as exc:
                    self._reject(None, str(exc))
                    continue
                self._dispatch(group, identity, frame)

    async def _recv(self) -> tuple[bytes, bytes]:
        parts = await self._sock.recv_multipart()
        if len(parts) != 2:
            raise ProtocolError(f"expected 2 frame parts, got {len(parts)}")
        return parts[0], parts[1]

    def _dispatch(self, group: asyncio.TaskGroup, identity: bytes, frame: bytes) -> None:
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
            self._on_event(envelope)

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
            await self._sock.send_multipart([identity, frame])
        except zmq.ZMQError as exc:
            log.debug("could not send to runner peer: %s", exc)

    def _reject(self, identity: bytes | None, reason: str) -> None:
        self.rejected_frames += 1
        who = identity.hex() if identity else "unknown peer"
        log.warning("rejected a frame on %s from %s: %s", self.endpoint, who, reason)

    def _resolve(self, envelope: wire.Envelope) -> None:
        future = self._pending.get(envelope["id"])
        if future is None or future.done():
            log.debug("response to unknown request id=%d dropped", envelope["id"])
            return
        if envelope["error"] is not None:
            future.set_exception(RemoteError(envelope["error"]))
        else:
            future.set_result(envelope["body"])

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
            await self._sock.send_multipart([self._peer, wire.encode(envelope)])
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
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        deadline_ms = max(1, int(timeout * 1000))
        try:
            await self.send(
                wire.request(request_id, method, body, plugin=plugin, deadline_ms=deadline_ms)
            )
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            await self._cancel_remote(request_id)
            raise
        finally:
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
        self._sock.close(linger=0)


def _refusal(envelope: wire.Envelope, code: wire.ErrorCode, message: str) -> bytes:
    return wire.encode(wire.response(envelope, error=wire.error_body(code, message)))
