"""A ZeroMQ socket driven straight from the asyncio event loop: both ends of the wire use it.

The host's ROUTER (one per runner) and the runner's DEALER move messages the same
way; only what a message means differs, and that lives in the host's channel and
the runner's service. This module needs pyzmq, which the runner and the host
install; ``import plughost_sdk`` never imports it.

Why not pyzmq's asyncio sockets: they resolve one future per message and query
the socket's state several times per message, which on the call path costs more
than the message itself. Here one reader callback drains every waiting message
and hands it to ``on_message``; a send goes out at once (``NOBLOCK``) and waits
only while the peer's queue is full. ZeroMQ's notification descriptor is
edge-triggered (it fires once for a batch, and a send can swallow its wakeup), so
the reader drains until the socket reports nothing left, and a send that finds a
message waiting has it drained on the next loop iteration.

Messages are received without a copy (``copy=False``): a part's bytes are read
through ``Frame.buffer``, so a 10 MB media part is copied at most once, by
whoever turns it into ``bytes``. Parts are sent with ``copy=False`` as well;
pyzmq still copies parts under its copy threshold (64 KiB), where a copy is
cheaper than tracking the buffer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import zmq

__all__ = ["MessageHandler", "SocketPump"]

MessageHandler = Callable[[list[zmq.Frame]], None]
"""Receives every part of one message, or is not called for a message over ``max_parts``."""

_BATCH = 256
"""Messages handled per wakeup before other callbacks (heartbeats, replies) get a turn."""

# Plain ints: pyzmq's enum flags cost a Python-level operation at every use.
_EVENTS = int(zmq.EVENTS)
_POLLIN, _POLLOUT = int(zmq.POLLIN), int(zmq.POLLOUT)
_NOBLOCK, _SNDMORE = int(zmq.NOBLOCK), int(zmq.SNDMORE)


class SocketPump:
    """Moves whole messages in and out of one socket from the event loop.

    Args:
        sock: A plain (not asyncio) pyzmq socket, already bound or connected.
        max_parts: A message with more parts is read to its end and dropped;
            :attr:`oversized` counts them. A peer cannot make one message cost
            more than this many frame objects.
    """

    def __init__(self, sock: zmq.Socket[bytes], *, max_parts: int) -> None:
        self._sock = sock
        self._max_parts = max_parts
        self._fd = int(sock.getsockopt(zmq.FD))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_message: MessageHandler | None = None
        self._failed: asyncio.Future[None] | None = None
        self._writers: list[asyncio.Future[None]] = []
        self._check_scheduled = False
        self.oversized = 0

    async def run(self, on_message: MessageHandler) -> None:
        """Hand every message to ``on_message`` until cancelled.

        Raises:
            zmq.ZMQError: the socket failed.
            Exception: whatever ``on_message`` raised; it ends the pump.
        """
        loop = asyncio.get_running_loop()
        self._loop, self._on_message = loop, on_message
        self._failed = loop.create_future()
        loop.add_reader(self._fd, self._on_events)
        loop.call_soon(self._on_events)  # messages may have arrived before the reader existed
        try:
            await self._failed
        finally:
            loop.remove_reader(self._fd)
            self._on_message = None

    def _on_events(self) -> None:
        """Drain waiting messages and wake blocked senders (the socket's reader callback)."""
        self._check_scheduled = False
        sock, on_message, failed = self._sock, self._on_message, self._failed
        if sock.closed or on_message is None or failed is None or failed.done():
            return
        try:
            # Asking EVENTS costs a third of a failed NOBLOCK recv (pyzmq builds an
            # exception for zmq.Again), so the drain stops on it, not on the exception.
            events = int(sock.getsockopt(_EVENTS))
            handled = 0
            while events & _POLLIN:
                if handled == _BATCH:
                    self._schedule_events()  # more may wait: let other callbacks run first
                    break
                parts = self._rest_of(sock.recv(_NOBLOCK, copy=False))
                if parts is not None:
                    on_message(parts)
                handled += 1
                events = int(sock.getsockopt(_EVENTS))
            if self._writers and events & _POLLOUT:
                writers, self._writers = self._writers, []
                for writer in writers:
                    if not writer.done():
                        writer.set_result(None)
        except Exception as exc:  # ends run(); its owner reports the socket as failed
            failed.set_exception(exc)

    def _rest_of(self, first: zmq.Frame) -> list[zmq.Frame] | None:
        """Receive the remaining parts of a message (all queued once the first arrived)."""
        parts = [first]
        frame = first
        # Frame.more rather than the RCVMORE option: a socket option lookup costs more.
        while frame.more:
            frame = self._sock.recv(_NOBLOCK, copy=False)
            if len(parts) < self._max_parts:
                parts.append(frame)
            else:
                parts = []  # keep reading to the end of the message, keep nothing
        if not parts:
            self.oversized += 1
            return None
        return parts

    def _schedule_events(self) -> None:
        """Run the reader callback on the next loop iteration (once, however often asked)."""
        if not self._check_scheduled and self._loop is not None and self._on_message is not None:
            self._check_scheduled = True
            self._loop.call_soon(self._on_events)

    async def send(self, parts: Sequence[bytes | memoryview | zmq.Frame]) -> None:
        """Send one message; wait only while the peer's queue is full.

        Raises:
            zmq.ZMQError: the socket failed, or (ROUTER) the peer is gone.
        """
        sock = self._sock
        last = len(parts) - 1
        while True:
            try:
                # All parts of a message are queued once the first one is accepted.
                sock.send(parts[0], _NOBLOCK | (_SNDMORE if last else 0), copy=False)
                break
            except zmq.Again:
                loop = asyncio.get_running_loop()
                writer = loop.create_future()
                self._writers.append(writer)
                loop.call_soon(self._on_events)  # writable again already? then retry at once
                await writer
        for index in range(1, last + 1):
            sock.send(parts[index], _NOBLOCK | (_SNDMORE if index < last else 0), copy=False)
        # The send may have swallowed the descriptor's wakeup for a new message: look again.
        if not self._check_scheduled and int(sock.getsockopt(_EVENTS)) & _POLLIN:
            self._schedule_events()

    def detach(self) -> None:
        """Stop watching the socket's descriptor (a no-op unless run() never cleaned up)."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._fd)
