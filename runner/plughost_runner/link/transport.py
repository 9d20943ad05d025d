"""The runner's DEALER socket to the host. No protocol here.

The socket is driven from the event loop by the SDK's
:class:`~plughost_sdk.socket_pump.SocketPump`, the same pump the host's channel
uses: one reader callback drains every waiting message, and a send waits only
while the host's queue is full. A message is ``[envelope, *blobs]``.

One other thread may send: the pulse thread, while a plugin blocks the event
loop (:meth:`Transport.send_locked`). A ZeroMQ socket may be used by several
threads only one at a time and behind a memory barrier. The pulse thread sends
only while a plugin step runs on the loop (see
:mod:`plughost_runner.plugins.invoker`), so a send made from the loop holds
:attr:`Transport.lock` only when :attr:`Transport.guarded` says a step is
running (plugin code sending, a capability call); the pump's own callbacks
(the reader, the end-of-iteration flush) run only between steps and need no
lock.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence

import zmq

from plughost_sdk import wire
from plughost_sdk.socket_pump import SocketPump

__all__ = ["Transport"]


class Transport:
    """One DEALER socket connected to the host."""

    def __init__(
        self,
        endpoint: str,
        *,
        linger_ms: int = 2000,
        curve: tuple[str, str, str] | None = None,
        routing_id: bytes | None = None,
    ) -> None:
        self._context = zmq.Context()
        self._sock: zmq.Socket[bytes] = self._context.socket(zmq.DEALER)
        self._sock.setsockopt(zmq.LINGER, linger_ms)
        if routing_id is not None:  # the same identity after a reconnect: the host resumes it
            self._sock.setsockopt(zmq.ROUTING_ID, routing_id)
        if curve is not None:  # (server public, own public, own secret), Z85
            server, public, secret = (key.encode() for key in curve)
            self._sock.setsockopt(zmq.CURVE_SERVERKEY, server)
            self._sock.setsockopt(zmq.CURVE_PUBLICKEY, public)
            self._sock.setsockopt(zmq.CURVE_SECRETKEY, secret)
        self._sock.connect(endpoint)
        self._pump = SocketPump(self._sock, max_parts=1 + wire.MAX_BLOBS)
        self._loop: asyncio.AbstractEventLoop | None = None
        self.lock = threading.RLock()
        """Held by the pulse thread's sends, and by the loop's while :attr:`guarded`."""
        self.guarded: Callable[[], bool] = _never
        """Whether a send from the loop must take :attr:`lock` (a plugin step is running)."""

    async def serve(self, on_message: Callable[[list[zmq.Frame]], None]) -> None:
        """Hand every message from the host (envelope frame, blob frames) to ``on_message``.

        Raises:
            zmq.ZMQError: the socket failed.
            Exception: whatever ``on_message`` raised.
        """
        self._loop = asyncio.get_running_loop()
        await self._pump.run(on_message)

    def try_post(self, parts: Sequence[bytes | memoryview]) -> bool:
        """Post a one-frame message from the loop with no wait; False when that cannot be.

        The common reply: no blob frames and no plugin step running (so no lock);
        it then does what :meth:`send` would, without a coroutine. Anything else
        goes through :meth:`send`.
        """
        if len(parts) != 1 or self.guarded():
            return False
        self._pump.post(parts)
        return True

    async def send(self, parts: Sequence[bytes | memoryview]) -> None:
        """Send one message (envelope frame, blob frames).

        A message of one frame is posted: it goes out at once or with the others
        sent in this loop iteration. One with blob frames is sent alone, waiting
        only while the host's queue is full.

        Raises:
            zmq.ZMQError: the socket failed.
        """
        if self.guarded():
            with self.lock:
                await self._send(parts)
        else:
            await self._send(parts)

    async def _send(self, parts: Sequence[bytes | memoryview]) -> None:
        if len(parts) == 1:
            self._pump.post(parts)
            return
        await self._pump.send(parts)

    def send_locked(self, frame: bytes) -> bool:
        """Send one frame from the pulse thread, which holds :attr:`lock`.

        The frame goes out at once or not at all (the host's queue is full, the
        socket is closed): for heartbeats, which the next one replaces.

        Returns:
            Whether the frame was sent.
        """
        if self._sock.closed:
            return False
        try:
            self._sock.send(frame, zmq.NOBLOCK)
        except zmq.ZMQError:
            return False
        loop = self._loop
        if loop is not None and not loop.is_closed():
            # The send may have swallowed the descriptor's wakeup for a message from the host.
            loop.call_soon_threadsafe(self._pump.wake)
        return True

    def post(self, frame: bytes) -> bool:
        """Send a best-effort event (progress) without waiting; return False to drop it.

        It goes out in order with everything else sent from the loop; when the
        host's queue is full it is dropped rather than queued behind.
        """
        if self._pump.backlogged:
            return False
        self._pump.post((frame,))
        return True

    def close(self) -> None:
        """Close the socket (pending messages get the linger time) and the context."""
        with self.lock:
            self._sock.close()
        self._context.term()


def _never() -> bool:
    return False
