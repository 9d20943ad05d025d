"""A remote runner leaving on SIGTERM or SIGINT without failing the calls it took.

Kubernetes stops a pod (a rollout, a scale-down) with SIGTERM, and kills it
``terminationGracePeriodSeconds`` later (30 s by default); systemd and Docker
do the same with their own grace. A runner that died at the SIGTERM would fail
its calls in flight with ``plugin_crashed``. So on the first SIGTERM or SIGINT
a remote runner drains:

1. It answers any new call with ``shutting_down`` (the host's pool passes such
   a call to another member: nothing of it ran here) and tells the host it is
   leaving (``runner.draining``); from then on the host sends it no new call.
2. It waits for the calls in flight to finish and sends their results, for up
   to ``--drain-timeout`` seconds (25 by default: inside Kubernetes' 30 s, with
   time left to unload the plugins and exit before the SIGKILL).
3. Calls still running then are cancelled and answered with ``plugin_crashed``
   (the runner stopped during the call, which may have run in part), as when a
   runner disappears, but saying why.
4. It unloads its plugins (``on_unload``), sends ``runner.drained`` (the host
   takes it out of its pools at once, with no grace period), and exits 0.

A second SIGTERM or SIGINT cuts the drain short (step 3 at once). A signal
before the runner has joined (nothing can be in flight yet) ends it at once,
with code 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from typing import Any

from plughost_runner.link.bridge import HostError
from plughost_runner.plugins.loader import unload_plugin
from plughost_runner.service import RunnerService
from plughost_sdk import wire

__all__ = ["DEFAULT_DRAIN_TIMEOUT", "LeavingService"]

log = logging.getLogger("plughost_runner")

DEFAULT_DRAIN_TIMEOUT = 25.0
"""Seconds calls in flight may finish after a SIGTERM: Kubernetes' 30 s grace, less 5 s
to unload the plugins and exit before its SIGKILL."""

_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_ASK_TIMEOUT = 5.0
"""Seconds to wait for the host to acknowledge ``runner.draining``."""
_UNLOAD_TIMEOUT = 2.0


class LeavingService(RunnerService):
    """A runner service that drains its calls on SIGTERM or SIGINT, then exits 0."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.drain_timeout = DEFAULT_DRAIN_TIMEOUT
        self._group: asyncio.TaskGroup | None = None  # set once the plugins are loaded
        self._main: asyncio.Task[Any] | None = None
        self._leaving = False
        self._stopped_early = False
        self._cut_short = asyncio.Event()
        self._cut_off = False

    @property
    def leaving(self) -> bool:
        """Whether a signal has started this runner's drain."""
        return self._leaving

    async def run(self) -> int:
        """Serve until shutdown or until drained after a signal; return the exit code."""
        loop = asyncio.get_running_loop()
        self._main = asyncio.current_task()
        for signum in _SIGNALS:
            loop.add_signal_handler(signum, self._on_signal, signum)
        try:
            return await super().run()
        except asyncio.CancelledError:
            if self._stopped_early:
                return 0
            raise
        finally:
            for signum in _SIGNALS:
                loop.remove_signal_handler(signum)

    async def _serving(self, group: asyncio.TaskGroup) -> None:
        self._group = group

    def _on_signal(self, signum: int) -> None:
        name = signal.Signals(signum).name
        if self._group is None:
            print(f"plughost runner: {name} before joining: stopping", file=sys.__stderr__)
            self._stopped_early = True
            if self._main is not None:
                self._main.cancel()
        elif not self._leaving:
            self._leaving = True
            self._group.create_task(self._leave(name))
        else:
            print(f"plughost runner: {name} again: cutting the drain short", file=sys.__stderr__)
            self._cut_short.set()

    async def _leave(self, why: str) -> None:
        """Tell the host, finish the calls in flight (within the timeout), unload, stop."""
        self._shutting_down = True  # new calls: shutting_down, and the host passes them on
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.drain_timeout
        print(
            f"plughost runner: {why}: draining {len(self._tasks)} calls in flight "
            f"(up to {self.drain_timeout:g} s), then exiting",
            file=sys.__stderr__,
        )
        body = {"drain_timeout": self.drain_timeout, "inflight": len(self._tasks)}
        try:
            await self.request("runner.draining", body, timeout=_ASK_TIMEOUT)
        except (HostError, TimeoutError) as exc:
            # Calls it still sends are answered shutting_down; it finds the silence later.
            log.warning("the host did not acknowledge the drain: %s", exc or "no answer")
        cut = await self._finish_calls(deadline)
        for plugin in list(self._plugins.values()):
            problem = await unload_plugin(plugin, timeout=_UNLOAD_TIMEOUT)
            if problem:
                log.warning("plugin %s: %s", plugin.spec.plugin_id, problem)
        self._plugins.clear()
        await self._send_logs()
        drained = wire.event("runner.drained", {"cut_off": cut})
        await self._transport.send((wire.encode(drained),))
        print(f"plughost runner: drained ({cut} calls cut off); exiting", file=sys.__stderr__)
        self._stopped.set()

    async def _finish_calls(self, deadline: float) -> int:
        """Wait for the calls in flight until ``deadline``; cancel the rest; return how many."""
        loop = asyncio.get_running_loop()
        cut_short = asyncio.ensure_future(self._cut_short.wait())
        try:
            while self._tasks and not cut_short.done() and loop.time() < deadline:
                await asyncio.wait(
                    [*self._tasks.values(), cut_short],
                    timeout=deadline - loop.time(),
                    return_when=asyncio.FIRST_COMPLETED,
                )
        finally:
            cut_short.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await cut_short
        left = list(self._tasks.values())
        if left:
            self._cut_off = True  # their answer: _cut_off_error
            for task in left:
                task.cancel()
            await asyncio.wait(left, timeout=_UNLOAD_TIMEOUT)
        return len(left)

    def _cut_off_error(self) -> wire.WireError | None:
        if not self._cut_off:
            return None
        message = (
            f"runner {self._runner_id} stopped before this call finished: it was told to stop "
            f"and had {self.drain_timeout:g} s (--drain-timeout) to finish its calls; the call "
            "may have run in part"
        )
        return wire.error_body("plugin_crashed", message)
