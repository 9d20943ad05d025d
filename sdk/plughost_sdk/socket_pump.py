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

Under load, most of a call's cost is the socket send itself, so :meth:`SocketPump.post`
coalesces: the first message posted in an event-loop iteration goes out at
once (an isolated call waits for nothing), and the messages posted after it in
the same iteration leave together at the end of it, their last parts joined
into one frame. The window for them opens only when a second message is
posted, so a lone message schedules nothing and costs no extra loop
iteration. asyncio does not say which iteration is running, so "the same
iteration" is approximated from the socket's side: a message posted after a
lone one and before anything was received or a window closed opens a window.
At worst (two posts in different iterations with nothing received between)
the second one leaves one iteration later, which is what every first message
cost before. The protocol allows this because an envelope is a complete
msgpack map, so a frame may hold several back to back
(:func:`plughost_sdk.wire.decode_many`).

Messages are received without a copy (``copy=False``): a part's bytes are read
through ``Frame.buffer``, so a 10 MB media part is copied at most once, by
whoever turns it into ``bytes``. Parts of 64 KiB and more are sent with
``copy=False`` as well; smaller ones are copied into the message (pyzmq would
copy them anyway), straight through pyzmq's compiled ``send``.

What a call costs here is mostly libzmq's: asking a socket for ``EVENTS`` makes
it look at its command mailbox, two system calls. So the reader callback,
woken because the descriptor fired, receives one message without asking
(a message is almost always what woke it), hands it on, and leaves looking for
more to a callback queued before the handover: it runs after what that message
made ready (the task waiting for a reply resumes first), and a send made
meanwhile knows a look is coming and skips its own.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import cast

import zmq
from zmq.backend import Socket as _CompiledSocket

__all__ = ["MessageHandler", "SendErrorHandler", "SocketPump"]

log = logging.getLogger(__name__)

MessageHandler = Callable[[list[zmq.Frame]], None]
"""Receives every part of one message, or is not called for a message over ``max_parts``."""

SendErrorHandler = Callable[[zmq.ZMQError], None]
"""Told when a posted message could not be sent (its sender has already moved on)."""

_BATCH = 256
"""Messages handled per wakeup before other callbacks (heartbeats, replies) get a turn."""

_Route = tuple[bytes | memoryview, ...]
_Posted = tuple[_Route, bytes | memoryview]

_COALESCE_MAX = 256
"""Posted messages joined into one frame at most (``wire.MAX_BATCH``)."""
_EARLY_FLUSH = 32
"""Posted messages that leave before the iteration ends, so the peer can start on them."""
_COALESCE_BYTES = 1024 * 1024
"""A joined frame stops growing past this many bytes: big messages gain nothing from it."""

# Plain ints: pyzmq's enum flags cost a Python-level operation at every use.
_EVENTS = int(zmq.EVENTS)
_POLLIN, _POLLOUT = int(zmq.POLLIN), int(zmq.POLLOUT)
_NOBLOCK, _SNDMORE = int(zmq.NOBLOCK), int(zmq.SNDMORE)
_send_copy = _CompiledSocket.send
"""pyzmq's compiled send, without the Python wrapper in front of it (copies the part)."""
_get = cast("Callable[[zmq.Socket[bytes], int], int]", _CompiledSocket.get)
"""pyzmq's compiled getsockopt: a plain int, where the wrapper makes EVENTS an enum."""
_COPY_BELOW = 64 * 1024
"""Parts shorter than this are copied into the message (pyzmq's own copy threshold)."""


class SocketPump:
    """Moves whole messages in and out of one socket from the event loop.

    Args:
        sock: A plain (not asyncio) pyzmq socket, already bound or connected.
        max_parts: A message with more parts is read to its end and dropped;
            :attr:`oversized` counts them. A peer cannot make one message cost
            more than this many frame objects.
        on_send_error: Told when a posted message could not be sent.
    """

    def __init__(
        self,
        sock: zmq.Socket[bytes],
        *,
        max_parts: int,
        on_send_error: SendErrorHandler | None = None,
    ) -> None:
        self._sock = sock
        self._max_parts = max_parts
        self._on_send_error = on_send_error
        # Messages posted in this loop iteration, as (routing parts, body); None when no
        # iteration window is open. The backlog holds what a full queue held back.
        self._window: list[_Posted] | None = None
        # A message went out alone since the last receive or window: the next post
        # opens a window instead of sending at once.
        self._sent_alone = False
        self._backlog: list[_Posted] = []
        self._draining: asyncio.Task[None] | None = None
        self._drained: asyncio.Future[None] | None = None
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
        loop.add_reader(self._fd, self._on_events, True)
        loop.call_soon(self._on_events)  # messages may have arrived before the reader existed
        try:
            await self._failed
        finally:
            loop.remove_reader(self._fd)
            self._on_message = None

    def _on_events(self, readable: bool = False) -> None:
        """Drain waiting messages and wake blocked senders.

        Args:
            readable: Called because the descriptor fired (the socket's reader
                callback): a message most likely waits, so one is received without
                asking ``EVENTS`` first, and the rest are left to a queued call.
        """
        self._check_scheduled = False
        self._sent_alone = False
        sock, on_message, failed = self._sock, self._on_message, self._failed
        if sock.closed or on_message is None or failed is None or failed.done():
            return
        try:
            if readable and self._take_one(sock, on_message):
                return
            # Asking EVENTS costs less than a failed NOBLOCK recv (pyzmq builds an
            # exception for zmq.Again), so the drain stops on it, not on the exception.
            events = _get(sock, _EVENTS)
            handled = 0
            while events & _POLLIN:
                if handled == _BATCH:
                    self._schedule_events()  # more may wait: let other callbacks run first
                    break
                parts = self._rest_of(sock.recv(_NOBLOCK, copy=False))
                if parts is not None:
                    on_message(parts)
                handled += 1
                events = _get(sock, _EVENTS)
            if self._writers and events & _POLLOUT:
                writers, self._writers = self._writers, []
                for writer in writers:
                    if not writer.done():
                        writer.set_result(None)
        except Exception as exc:  # ends run(); its owner reports the socket as failed
            failed.set_exception(exc)

    def _take_one(self, sock: zmq.Socket[bytes], on_message: MessageHandler) -> bool:
        """Receive and hand on one message, the rest to a queued look; False if none waited."""
        try:
            first = sock.recv(_NOBLOCK, copy=False)
        except zmq.Again:  # woken for something else (room to send): the full look
            return False
        self._schedule_events()  # queued before the handover, so that it runs after
        parts = self._rest_of(first) if first.more else [first]
        if parts is not None:
            on_message(parts)
        return True

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

    def wake(self) -> None:
        """Look for waiting messages on the next loop iteration.

        For a send made outside the pump (by another thread, under the owner's
        lock), which may have swallowed the descriptor's wakeup; call it on the
        loop's thread (``loop.call_soon_threadsafe(pump.wake)``).
        """
        self._schedule_events()

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
        if not self._check_scheduled and _get(sock, _EVENTS) & _POLLIN:
            self._schedule_events()

    def post(self, parts: Sequence[bytes | memoryview]) -> None:
        """Send one message now, or with the others posted in this loop iteration.

        ``parts`` are the routing parts (a ROUTER's peer identity, or none) and one
        body frame holding complete envelopes. Messages to the same peer posted in
        one iteration are joined into one frame; order is kept. A failure is
        reported to ``on_send_error``, since the caller has moved on.
        """
        route, body = tuple(parts[:-1]), parts[-1]
        window = self._window
        if window is None:
            if self._backlog:
                self._backlog.append((route, body))
                return
            if not self._sent_alone:
                try:
                    self._send_now(route, body)
                    self._sent_alone = True
                    return
                except zmq.Again:
                    pass  # the peer's queue is full: wait in a window like the rest
                except zmq.ZMQError as exc:
                    self._report(exc)
                    return
            # A second message in this iteration: the rest leave together at its end.
            window = self._window = []
            (self._loop or asyncio.get_running_loop()).call_soon(self._close_window)
        window.append((route, body))
        if len(window) >= _EARLY_FLUSH:
            # Let the peer start on these while the rest of this iteration runs: two
            # processes on two cores overlap instead of taking turns.
            self._window = []
            self._backlog.extend(_joined(window))
            self._kick()

    @property
    def backlogged(self) -> bool:
        """Whether posted messages are waiting for the peer's queue to have room."""
        return bool(self._backlog)

    async def drained(self) -> None:
        """Wait until no posted message waits for the peer's queue (at once if none does)."""
        while self._backlog:
            if self._drained is None or self._drained.done():
                self._drained = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._drained)

    def _close_window(self) -> None:
        """End of the iteration: send what was posted in it, joined per peer."""
        window, self._window = self._window or [], None
        self._sent_alone = False
        self._backlog.extend(_joined(window))
        self._kick()

    def _kick(self) -> None:
        """Send the backlog now, or have it sent once the peer's queue has room."""
        if self._draining is not None and not self._draining.done():
            return  # already waiting for room; sending now would overtake nothing but fail
        if not self._drain_backlog():
            loop = self._loop or asyncio.get_running_loop()
            self._draining = loop.create_task(self._drain_when_writable())

    def _drain_backlog(self) -> bool:
        """Send the backlog until the peer's queue is full; True when all of it went."""
        while self._backlog:
            route, body = self._backlog[0]
            try:
                self._send_now(route, body)
            except zmq.Again:
                return False
            except zmq.ZMQError as exc:
                self._report(exc)
            del self._backlog[0]
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        return True

    async def _drain_when_writable(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            writer = loop.create_future()
            self._writers.append(writer)
            loop.call_soon(self._on_events)  # writable again already? then go on at once
            await writer
            if self._drain_backlog():
                return

    def _send_now(self, route: _Route, body: bytes | memoryview) -> None:
        sock = self._sock
        if route:
            # All parts of a message are queued once the first one is accepted.
            _send_copy(sock, route[0], _NOBLOCK | _SNDMORE)
            for part in route[1:]:
                _send_copy(sock, part, _NOBLOCK | _SNDMORE)
        if len(body) < _COPY_BELOW:
            _send_copy(sock, body, _NOBLOCK)
        else:
            sock.send(body, _NOBLOCK, copy=False)
        if not self._check_scheduled and _get(sock, _EVENTS) & _POLLIN:
            self._schedule_events()

    def _report(self, exc: zmq.ZMQError) -> None:
        if self._on_send_error is not None:
            self._on_send_error(exc)
        else:
            log.debug("a posted message was not sent: %s", exc)

    def detach(self) -> None:
        """Stop watching the socket's descriptor (a no-op unless run() never cleaned up)."""
        if self._draining is not None:
            self._draining.cancel()
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._fd)


def _joined(
    window: list[_Posted],
) -> list[_Posted]:
    """Join consecutive messages to the same peer, keeping order and the batch bounds."""
    out: list[_Posted] = []
    group: list[bytes | memoryview] = []
    route: _Route | None = None
    size = 0
    for next_route, body in window:
        if group and (
            next_route != route or len(group) == _COALESCE_MAX or size + len(body) > _COALESCE_BYTES
        ):
            out.append((route or (), b"".join(group)))
            group, size = [], 0
        route = next_route
        group.append(body)
        size += len(body)
    if group:
        out.append((route or (), b"".join(group)))
    return out
