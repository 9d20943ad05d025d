"""The runner's DEALER socket, driven straight from the event loop. No protocol here.

pyzmq's asyncio sockets resolve one future per message and query the socket's
state several times per message; on the call path that costs more than the
message itself. Here one reader callback drains every waiting frame and hands
each to ``on_frame``; a send goes out at once (``NOBLOCK``) and waits only
while the host's queue is full. ZeroMQ's notification descriptor is
edge-triggered (it fires once for a batch, and a send can swallow its
wakeup), so the reader drains until the socket reports nothing left, and a
send that finds a frame waiting has it drained on the next loop iteration
instead of waiting for a wakeup that will not come.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import zmq

__all__ = ["Transport"]

_BATCH = 256
"""Frames handled per wakeup before other callbacks (heartbeats, replies) get a turn."""

# Plain ints: pyzmq's enum flags cost a Python-level operation at every use.
_EVENTS, _POLLIN, _POLLOUT, _NOBLOCK = (
    int(zmq.EVENTS),
    int(zmq.POLLIN),
    int(zmq.POLLOUT),
    int(zmq.NOBLOCK),
)


class Transport:
    """One DEALER socket connected to the host."""

    def __init__(
        self, endpoint: str, *, linger_ms: int = 2000, curve: tuple[str, str, str] | None = None
    ) -> None:
        self._context = zmq.Context()
        self._sock: zmq.Socket[bytes] = self._context.socket(zmq.DEALER)
        self._sock.setsockopt(zmq.LINGER, linger_ms)
        if curve is not None:  # (server public, own public, own secret), Z85
            server, public, secret = (key.encode() for key in curve)
            self._sock.setsockopt(zmq.CURVE_SERVERKEY, server)
            self._sock.setsockopt(zmq.CURVE_PUBLICKEY, public)
            self._sock.setsockopt(zmq.CURVE_SECRETKEY, secret)
        self._sock.connect(endpoint)
        self._fd = int(self._sock.getsockopt(zmq.FD))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_frame: Callable[[bytes], None] | None = None
        self._failed: asyncio.Future[None] | None = None
        self._writers: list[asyncio.Future[None]] = []
        self._check_scheduled = False

    async def serve(self, on_frame: Callable[[bytes], None]) -> None:
        """Hand every frame from the host to ``on_frame`` until cancelled.

        Raises:
            zmq.ZMQError: the socket failed.
            Exception: whatever ``on_frame`` raised.
        """
        loop = asyncio.get_running_loop()
        self._loop, self._on_frame = loop, on_frame
        self._failed = loop.create_future()
        loop.add_reader(self._fd, self._on_events)
        loop.call_soon(self._on_events)  # frames may have arrived before the reader existed
        try:
            await self._failed
        finally:
            loop.remove_reader(self._fd)
            self._on_frame = None

    def _on_events(self) -> None:
        self._check_scheduled = False
        sock, on_frame, failed = self._sock, self._on_frame, self._failed
        if sock.closed or on_frame is None or failed is None or failed.done():
            return
        try:
            events = int(sock.getsockopt(_EVENTS))  # cheap "nothing new" for most checks
            if events & _POLLIN:
                for _ in range(_BATCH):
                    try:
                        frame = sock.recv(_NOBLOCK)
                    except zmq.Again:  # drained: the descriptor signals the next frame
                        break
                    on_frame(frame)
                else:
                    self._schedule_events()  # more may wait: let other callbacks run first
                if self._writers:
                    events = int(sock.getsockopt(_EVENTS))
            if self._writers and events & _POLLOUT:
                writers, self._writers = self._writers, []
                for writer in writers:
                    if not writer.done():
                        writer.set_result(None)
        except Exception as exc:  # the receive loop's failure ends the runner
            failed.set_exception(exc)

    def _schedule_events(self) -> None:
        """Run the reader callback on the next loop iteration (once, however often asked)."""
        if not self._check_scheduled and self._loop is not None and self._on_frame is not None:
            self._check_scheduled = True
            self._loop.call_soon(self._on_events)

    async def send(self, frame: bytes) -> None:
        """Send one frame; wait only while the host's queue is full.

        Raises:
            zmq.ZMQError: the socket failed.
        """
        while True:
            try:
                self._sock.send(frame, _NOBLOCK, copy=False)
                break
            except zmq.Again:
                loop = asyncio.get_running_loop()
                writer = loop.create_future()
                self._writers.append(writer)
                loop.call_soon(self._on_events)  # writable again already? then retry at once
                await writer
        # The send may have swallowed the descriptor's wakeup for a new frame: look once more.
        if not self._check_scheduled and int(self._sock.getsockopt(_EVENTS)) & _POLLIN:
            self._schedule_events()

    def close(self) -> None:
        """Close the socket (pending frames get the linger time) and the context."""
        self._sock.close()
        self._context.term()
