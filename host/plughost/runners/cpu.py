"""How much CPU time a runner and every process it started used (``limits.cpu_seconds``).

``RLIMIT_CPU`` counts one process: a plugin that starts three busy children
gets three times its limit, and more if each child starts its own. So the
host adds up the runner's whole tree itself, from the kernel's accounting,
never the runner's word, and the watchdog stops the runner past the limit;
``RLIMIT_CPU`` stays set in every process as a backstop. Two meters, the best
the machine offers:

- :class:`CpuCgroup` (root, cgroup v1 ``cpuacct`` controller): each runner
  process gets its own cgroup, joined before it forks anything (or its session
  moved in), and ``cpuacct.usage`` counts every process ever in it, exited ones
  included.
- :class:`ProcCpuMeter` (anywhere else): ``utime + stime`` of each live
  process of the runner's tree (:mod:`plughost.runners.proc_tree`), plus
  ``cutime + cstime``, what each has collected from children it waited for
  (and theirs, recursively): a child that exited and was reaped inside the
  tree is still counted. In a pid namespace of its own every orphan is reaped
  by the namespace's init, which is counted too, so nothing escapes. Without
  one, an orphan is reaped by a process outside the tree: what it used up to
  the last reading before it exited is kept, so the sum never goes down; an
  orphan that also left the runner's session (``setsid``) is out of sight
  there, as it is for the memory meter and the shutdown, which is what the pid
  namespace (or a root host's cgroup) is for.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Protocol

from plughost.runners.cgroups import adopt, make_runner_cgroup, remove
from plughost.runners.proc_tree import descendants, namespace_inits, session_tree, stat_fields

__all__ = ["CpuCgroup", "CpuMeter", "ProcCpuMeter", "open_cpu_meter"]

log = logging.getLogger(__name__)

_TICKS = os.sysconf("SC_CLK_TCK")


class CpuMeter(Protocol):
    """Reads the CPU time one runner's processes used."""

    source: str
    """How the number is measured, for messages: ``cgroup`` or ``/proc``."""

    def used(self) -> float | None:
        """Seconds of CPU used so far, or None when it cannot be read."""
        ...

    def close(self) -> None:
        """Release what the meter holds (the runner has exited)."""
        ...


def open_cpu_meter(
    pid: int, cgroup: CpuCgroup | None = None, *, joined: bool = False, pid_namespace: bool = False
) -> CpuMeter:
    """The best meter for runner process ``pid`` (and what it starts).

    ``cgroup``: the one :meth:`CpuCgroup.create` made for this runner before it
    started; ``joined`` says the runner joined it itself (a sandboxed runner
    does), else its session is moved in now. ``pid_namespace`` says ``pid`` is
    a runner in a pid namespace of its own (its init, or the waiter above it).
    """
    if cgroup is not None:
        if not joined:
            adopt(cgroup.path, pid)
        return cgroup
    return ProcCpuMeter(pid, pid_namespace=pid_namespace)


class CpuCgroup:
    """A cgroup v1 ``cpuacct`` cgroup holding one runner process and everything it starts."""

    source = "cgroup"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._start = 0.0
        self._start = self.used() or 0.0  # a name used before, not yet removed: from now

    @property
    def procs(self) -> str:
        """The file a process writes ``0`` to in order to join."""
        return str(self.path / "cgroup.procs")

    @classmethod
    def create(cls, name: str) -> CpuCgroup | None:
        """A fresh, empty ``cpuacct`` cgroup for one runner; None where unavailable."""
        path = make_runner_cgroup("cpuacct", name)
        return None if path is None else cls(path)

    def used(self) -> float | None:
        """Seconds of CPU every process that was ever in the cgroup used."""
        try:
            return int((self.path / "cpuacct.usage").read_text()) / 1e9 - self._start
        except (OSError, ValueError):
            return None

    def close(self) -> None:
        """Remove the cgroup (its processes have exited, or are about to)."""
        remove(self.path)


class ProcCpuMeter:
    """The runner's tree, read from ``/proc`` by the host; exited orphans kept."""

    source = "/proc"

    def __init__(self, pid: int, *, pid_namespace: bool = False) -> None:
        self._pid = pid
        self._nested = pid_namespace
        self._seen: dict[int, tuple[float, bool]] = {}  # pid -> (its total, an orphan)
        self._gone = 0.0  # what orphans reaped outside the tree had used
        self._high = 0.0

    def used(self) -> float | None:
        """Seconds of CPU of the tree's live processes, the children they reaped, and orphans."""
        if self._nested:  # the init (it reaps every orphan) and all below it
            inits = namespace_inits(self._pid)
            order = inits + descendants(inits)
        else:
            order = session_tree(self._pid)
        if not order:
            return None
        pids = set(order)
        now: dict[int, tuple[float, bool]] = {}
        for pid in order:  # parents first: a child reaped meanwhile is counted once
            fields = stat_fields(pid)
            if fields is not None:
                ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))
                now[pid] = (ticks / _TICKS, int(fields[1]) not in pids)
        for pid, (total, orphan) in self._seen.items():
            if pid not in now and orphan:  # reaped by a process outside the tree
                self._gone += total
        self._seen = now
        # A reaping in progress can hide a child for one reading: never report less.
        self._high = max(self._high, self._gone + sum(total for total, _ in now.values()))
        return self._high

    def close(self) -> None:
        """Nothing to release."""
