"""Heartbeats from a thread while a plugin's async handler blocks the event loop.

The runner's heartbeat normally comes from a task on its event loop, so it
proves the loop is free. An async handler that blocks (``time.sleep``, a
synchronous HTTP client) stops that task, and the host used to kill the runner
as hung after a few missed beats, although the call was well within its
deadline. The :class:`Pulse` thread fills the gap: while one step of an async
handler has run for longer than a heartbeat interval, it sends the heartbeat
instead, saying which handler blocks the loop, for how long, and how long its
call has left (``"blocked": {"plugin", "handler", "seconds", "deadline_in"}``).
The host then lets the call run to its deadline and recycles the runner only
if the loop is still blocked past it (see the supervisor's watchdog).

It proves less than the loop's own beat, on purpose: a thread cannot run while
code holds the GIL without releasing it (a C extension's long loop), so such a
runner falls silent and is recycled as before; a pure-Python spin lets the
thread run, and is recycled once its call's deadline has passed. Blocking
outside an async handler step (an ``on_load``, a plugin's own background task)
gets no pulse and is judged by the loop's beat alone.

While the runner rests (no request for a whole heartbeat interval), the thread
sleeps without a timeout (:meth:`Pulse.rest`): a handler step can only start
from a request, and the request wakes it first (:meth:`Pulse.resume`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from plughost_runner.link.transport import Transport
from plughost_runner.plugins.invoker import Invoker
from plughost_sdk import wire

__all__ = ["Pulse"]


class Pulse:
    """Sends heartbeats from a daemon thread while a handler step blocks the loop.

    Args:
        transport: The socket to the host; its lock is the invoker's.
        invoker: Whose current step is watched.
        interval: Seconds between heartbeats.
        counters: The heartbeat's usual fields (``seq``, ``inflight``,
            ``stuck``); called on the pulse thread, so it must only read.
    """

    def __init__(
        self,
        transport: Transport,
        invoker: Invoker,
        interval: float,
        counters: Callable[[], dict[str, Any]],
    ) -> None:
        self._transport = transport
        self._invoker = invoker
        self.interval = interval  # a rejoined host may set another (read each turn)
        self._counters = counters
        self._stopping = threading.Event()
        self._awake = threading.Event()
        self._awake.set()
        self._thread = threading.Thread(target=self._run, name="plughost-pulse", daemon=True)

    def start(self) -> None:
        """Start watching."""
        self._thread.start()

    def rest(self) -> None:
        """Sleep, not waking until :meth:`resume`: the runner has nothing to do."""
        self._awake.clear()

    def resume(self) -> None:
        """Watch every interval again (a request came)."""
        self._awake.set()

    def stop(self) -> None:
        """Stop watching and wait for the thread (at most one interval)."""
        self._stopping.set()
        self._awake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.interval + 1.0)

    def _run(self) -> None:
        invoker = self._invoker
        while self._awake.wait() and not self._stopping.wait(self.interval):
            with self._transport.lock:
                invoker.pulsing = (
                    True  # before reading the step: see plughost_runner.plugins.invoker
                )
                try:
                    frame = self._frame()
                    if frame is not None:
                        self._transport.send_locked(frame)
                finally:
                    invoker.pulsing = False

    def _frame(self) -> bytes | None:
        """The heartbeat to send now, or None while the loop is free."""
        step = self._invoker.step
        if step is None:
            return None
        now = time.monotonic()
        seconds = now - step.started
        if seconds < self.interval:
            return None  # the loop's own beat is due soon enough
        blocked = {
            "plugin": step.plugin_id,
            "handler": step.handler,
            "seconds": round(seconds, 3),
            "deadline_in": round(step.deadline - now, 3),
        }
        body = {**self._counters(), "blocked": blocked}
        return wire.encode(wire.event("runner.heartbeat", body))
