"""Why a runner must be killed: no ready in time, no heartbeat, a stuck call, memory, CPU, disk.

The supervisor feeds the :class:`Watchdog` the runner's heartbeats and asks it,
once per heartbeat interval, whether the runner is still fit to serve. The
watchdog measures its own lateness: a host whose loop was stalled never blames
its runners for beats it could not read. Memory, CPU time and disk are
measured by the host (:mod:`plughost.runners.memory`,
:mod:`plughost.runners.cpu`, :mod:`plughost.runners.disk`), never taken from
the runner's word; memory and CPU at every tick, while the runner loads and
while it serves, over the runner and every process it started.

A beat may say that an async handler is blocking the runner's event loop
(:mod:`plughost.runners.blocking`): the watchdog then lets the call run to its
deadline and kills the runner once the loop is still blocked ``stuck_grace``
after it. That word of the runner can only bring a kill forward, never put
one off: silence is judged as before, however the beats that came read.

At rest a runner beats every ``IDLE_BEATS`` intervals instead (so fifty idle
runners do not wake a machine a hundred times a second), and the watchdog
ticks as rarely. The host asks when it needs to know: the moment it sends a
request to a resting runner (:meth:`Watchdog.asked`), the runner owes a beat
within ``heartbeat_interval * heartbeat_misses`` again, counted from then, and
the watchdog ticks every interval. So a runner that hangs while serving is
caught as fast as ever, and one that hangs at rest (a plugin's own task
blocking the loop) within ``IDLE_BEATS`` intervals more, or as soon as it is
sent a call. A runner measured for memory or CPU limits keeps the fast tick;
the disk its plugins use is added up every ``CHECK_SECONDS``, at rest too (a
plugin's own task may write while no call runs), on a grid all watchdogs share,
so the host wakes once for all of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from plughost.runners.blocking import BlockedLoop
from plughost.runners.cpu import CpuCgroup, CpuMeter, open_cpu_meter
from plughost.runners.disk import CHECK_SECONDS, DiskMeter
from plughost.runners.memory import CgroupMeter, MemoryMeter, open_meter
from plughost.settings import ResourceLimits, RunnerSettings

__all__ = ["IDLE_BEATS", "Watchdog"]

log = logging.getLogger(__name__)

IDLE_BEATS = 60
"""A resting runner's heartbeat comes every this many ``heartbeat_interval``."""


class Watchdog:
    """Heartbeat bookkeeping for one runner process, and the reasons to kill it."""

    def __init__(
        self,
        settings: RunnerSettings,
        limits: ResourceLimits,
        ready: Callable[[], bool],
        memory: MemoryMeter | None = None,
        waiting: Callable[[], int] = lambda: 0,
    ) -> None:
        self._settings = settings
        self._limits = limits
        self._ready = ready
        self._waiting = waiting  # requests sent to the runner and not yet answered
        self.memory = memory
        self.cpu: CpuMeter | None = None  # limits.cpu_seconds, over the runner's whole tree
        self.disk: DiskMeter | None = None  # limits.disk_mb, for a sandboxed runner
        self._last_beat = 0.0
        self._beating = False  # a heartbeat arrived since this process was spawned
        self._stuck_since: float | None = None
        self._blocked: BlockedLoop | None = None  # an async handler blocking the loop, if any
        self._busy = True  # the last beat counted calls in flight (or none came yet)
        self._asked_at: float | None = None  # when the host began waiting on the runner
        self._dozing = False  # the watchdog sleeps for an idle tick
        self._wake = asyncio.Event()
        self.label = "runner"
        """How logs name the runner."""

    def make_cgroups(self, name: str) -> list[str]:
        """Make the cgroups that measure the next runner process; their ``cgroup.procs`` files.

        Only where the machine has them (root, cgroup v1) and a limit needs them;
        they are closed with the runner (:meth:`close_meters`), even if it never starts.
        """
        self.close_meters()
        memory = CgroupMeter.create(name) if self._limits.memory_mb is not None else None
        cpu = CpuCgroup.create(name) if self._limits.cpu_seconds is not None else None
        self.memory, self.cpu = memory, cpu
        return [c.procs for c in (memory, cpu) if c is not None]

    def attach(self, pid: int, *, joined: bool, pid_namespace: bool) -> None:
        """Measure runner process ``pid``: through its cgroups, else through ``/proc``.

        ``joined``: the runner joined its cgroups itself, before it forked anything
        (a sandboxed one does); ``pid_namespace``: ``pid`` waits outside the runner's
        own pid namespace.
        """
        memory, cpu = self.memory, self.cpu
        if self._limits.memory_mb is not None:
            cgroup = memory if isinstance(memory, CgroupMeter) else None
            self.memory = open_meter(pid, cgroup, joined=joined, pid_namespace=pid_namespace)
        if self._limits.cpu_seconds is not None:
            group = cpu if isinstance(cpu, CpuCgroup) else None
            self.cpu = open_cpu_meter(pid, group, joined=joined, pid_namespace=pid_namespace)

    def close_meters(self) -> None:
        """Release the meters of the runner process that ended (its cgroups are removed)."""
        for meter in (self.memory, self.cpu):
            if meter is not None:
                meter.close()
        self.memory = self.cpu = None

    def heartbeat(self, body: dict[str, Any]) -> None:
        """Record a ``runner.heartbeat`` event."""
        self._last_beat = asyncio.get_running_loop().time()
        self._beating = True
        self._busy = bool(body.get("inflight", 0))
        if not body.get("stuck", 0):
            self._stuck_since = None
        elif self._stuck_since is None:
            self._stuck_since = self._last_beat
        self._note_blocked(BlockedLoop.from_beat(body.get("blocked"), self._last_beat))

    @property
    def resting(self) -> bool:
        """Whether the runner rests: idle at its last beat, asked nothing since, and silent
        for two intervals since (so at its idle cadence)."""
        now = asyncio.get_running_loop().time()
        silent = now - self._last_beat
        return self._idle() and silent > 2 * self._settings.heartbeat_interval

    def asked(self) -> None:
        """The host sent the runner a request: a resting runner owes a beat from now on."""
        if self._asked_at is None:
            self._asked_at = asyncio.get_running_loop().time()
            if self._dozing:
                self._wake.set()

    def restart_clock(self) -> None:
        """The runner just became ready: its silence counts from now, nothing is stuck."""
        self._last_beat = asyncio.get_running_loop().time()
        self._stuck_since = None
        self._blocked = None

    def _note_blocked(self, blocked: BlockedLoop | None) -> None:
        if blocked is not None and not blocked.same_step(self._blocked):
            log.warning(
                "%s: %s; its call may run until its deadline in %.1f s",
                self.label,
                blocked.describe(self._last_beat),
                max(0.0, blocked.deadline - self._last_beat),
            )
        self._blocked = blocked

    async def run(self) -> str:
        """Tick until the runner must be killed; return why."""
        loop = asyncio.get_running_loop()
        interval = self._settings.heartbeat_interval
        spawned = loop.time()
        self._last_beat, self._beating, self._stuck_since = spawned, False, None
        self._blocked, self._busy, self._asked_at = None, True, None
        while True:
            tick = self._tick(loop.time())
            expected = loop.time() + tick
            await self._sleep(tick)
            now = loop.time()
            if now - expected > interval:  # this loop was stalled: do not blame the runner
                self._last_beat = now
            if not self._waiting():
                self._asked_at = None  # answered: the runner's beats tell how busy it is
            reason = self._loading(now, spawned) if not self._ready() else self._serving(now)
            reason = reason or self._memory_over_limit() or self._cpu_over_limit()
            disk = self.disk
            if not reason and disk is not None and disk.due(now):
                here = disk.over_limit_here(now)  # many entries (None): a thread scans them
                reason = here if here is not None else await asyncio.to_thread(disk.over_limit, now)
            if reason:
                return reason

    async def _sleep(self, tick: float) -> None:
        """Wait ``tick`` seconds, or less if the host sends a resting runner a request."""
        self._wake.clear()
        self._dozing = tick > self._settings.heartbeat_interval
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(tick):  # a periodic tick, not synchronization
                    await self._wake.wait()
        finally:
            self._dozing = False

    def _tick(self, now: float) -> float:
        """How long to sleep: an interval, or at rest until the runner's silence could matter."""
        interval = self._settings.heartbeat_interval
        if not self._idle() or self.memory is not None or self.cpu is not None:
            return interval  # a busy runner, or limits measured every interval
        due = self._last_beat + self._silence_allowed() - now + interval
        rest = interval * IDLE_BEATS
        if due < rest:
            return max(interval, due)
        # Resting runners beat on a common grid (multiples of ``rest`` on the monotonic
        # clock); every watchdog ticks just after its points, so the host wakes once for all.
        tick = rest - (now - interval / 2) % rest
        tick = tick + rest if tick < interval else tick
        if self.disk is None:
            return tick
        # The disk is counted on a finer grid, shared too (a resting plugin may still write).
        look = CHECK_SECONDS - (now - interval / 2) % CHECK_SECONDS
        return min(tick, look + CHECK_SECONDS if look < interval else look)

    def _idle(self) -> bool:
        """Whether the runner may rest: ready, and at its last beat nothing in flight,
        stuck or blocked, and the host has asked it nothing since."""
        return (
            self._ready()
            and not self._busy
            and self._asked_at is None
            and self._stuck_since is None
            and self._blocked is None
        )

    def _silence_allowed(self) -> float:
        """Seconds without a beat before the runner counts as hung."""
        settings = self._settings
        allowed = settings.heartbeat_interval * settings.heartbeat_misses
        if not self._idle():
            return allowed
        return allowed + settings.heartbeat_interval * IDLE_BEATS

    def _loading(self, now: float, spawned: float) -> str:
        silent = now - self._last_beat
        hung = silent > self._settings.heartbeat_interval * self._settings.heartbeat_misses
        if hung and self._beating:  # it said hello, then its loop stopped: import or on_load
            return (
                f"unresponsive while loading: no heartbeat for {silent:.1f} s (a "
                "plugin's import or on_load is probably blocking the runner's event "
                "loop; use asyncio or a thread for slow work)"
            )
        if now - spawned > self._settings.ready_timeout:
            return f"not ready within {self._settings.ready_timeout:g} s"
        return ""

    def _serving(self, now: float) -> str:
        asked = self._asked_at
        silent = now - (self._last_beat if asked is None else max(self._last_beat, asked))
        if silent > self._silence_allowed():
            return (
                f"unresponsive: no heartbeat for {silent:.1f} s (a plugin is probably "
                "blocking the runner's event loop)"
            )
        blocked = self._blocked
        overdue = blocked.overdue(now, self._settings.stuck_grace) if blocked else None
        if overdue is not None:
            return overdue
        if self._stuck_since is not None and now - self._stuck_since > self._settings.stuck_grace:
            return "a synchronous tool call ran past its deadline and cannot be interrupted"
        return ""

    def _memory_over_limit(self) -> str:
        limit = self._limits.memory_mb
        if limit is None or self.memory is None:
            return ""
        used = self.memory.used()
        if used is None or used <= limit * 2**20:
            return ""
        return (
            f"memory limit exceeded: the runner used {used / 2**20:.0f} MiB "
            f"({self.memory.source}), over its {limit} MiB (limits.memory_mb)"
        )

    def _cpu_over_limit(self) -> str:
        """``limits.cpu_seconds`` over the runner and all it started (``RLIMIT_CPU`` counts one)."""
        limit = self._limits.cpu_seconds
        if limit is None or self.cpu is None:
            return ""
        used = self.cpu.used()
        if used is None or used <= limit:
            return ""
        return (
            f"CPU time limit of {limit} s exceeded (limits.cpu_seconds): the runner and the "
            f"processes it started used {used:.2f} s of CPU ({self.cpu.source})"
        )
