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
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from plughost.runners.blocking import BlockedLoop
from plughost.runners.cpu import CpuCgroup, CpuMeter, open_cpu_meter
from plughost.runners.disk import DiskMeter
from plughost.runners.memory import CgroupMeter, MemoryMeter, open_meter
from plughost.settings import ResourceLimits, RunnerSettings

__all__ = ["Watchdog"]

log = logging.getLogger(__name__)


class Watchdog:
    """Heartbeat bookkeeping for one runner process, and the reasons to kill it."""

    def __init__(
        self,
        settings: RunnerSettings,
        limits: ResourceLimits,
        ready: Callable[[], bool],
        memory: MemoryMeter | None = None,
    ) -> None:
        self._settings = settings
        self._limits = limits
        self._ready = ready
        self.memory = memory
        self.cpu: CpuMeter | None = None  # limits.cpu_seconds, over the runner's whole tree
        self.disk: DiskMeter | None = None  # limits.disk_mb, for a sandboxed runner
        self._last_beat = 0.0
        self._beating = False  # a heartbeat arrived since this process was spawned
        self._stuck_since: float | None = None
        self._blocked: BlockedLoop | None = None  # an async handler blocking the loop, if any
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
        if not body.get("stuck", 0):
            self._stuck_since = None
        elif self._stuck_since is None:
            self._stuck_since = self._last_beat
        self._note_blocked(BlockedLoop.from_beat(body.get("blocked"), self._last_beat))

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
        self._blocked = None
        expected = spawned + interval
        while True:
            await asyncio.sleep(interval)  # a periodic tick, not synchronization
            now = loop.time()
            if now - expected > interval:  # this loop was stalled: do not blame the runner
                self._last_beat = now
            expected = now + interval
            reason = self._loading(now, spawned) if not self._ready() else self._serving(now)
            reason = reason or self._memory_over_limit() or self._cpu_over_limit()
            disk = self.disk
            if not reason and disk is not None and disk.due(now):  # a scan: not on the loop
                reason = await asyncio.to_thread(disk.over_limit, now)
            if reason:
                return reason

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
        silent = now - self._last_beat
        if silent > self._settings.heartbeat_interval * self._settings.heartbeat_misses:
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
