"""How much memory a runner's processes use, as the kernel sees it (``limits.memory_mb``).

Never the runner's word: a runner runs plugin code, which can name any pid in
a report or hide its memory where a per-process reading does not look. Two
meters, the best the machine offers:

- :class:`CgroupMeter` (root, cgroup v1 ``memory`` controller): each runner
  process gets its own cgroup under the host's, and every process it starts is
  born inside it. Usage is the cgroup's ``total_rss + total_shmem``: anonymous
  memory of every process in it plus the shared memory they wrote, which
  includes files written to ``/dev/shm`` (tmpfs) and stays charged after the
  writer closed them.
- :class:`ProcMeter` (anywhere else): the host reads ``/proc`` itself. The
  runner's processes are its session (the runner leads one) and their
  descendants; each counts ``RssAnon + RssShmem`` from ``/proc/<pid>/status``
  (readable even for a non-dumpable runner). Shared memory counts only while
  a process maps it: a file written to ``/dev/shm`` with ``write()`` and closed
  is invisible here, so operators who need that bound run the host as root or
  give runners a private ``/dev/shm``. A runner in a pid namespace of its
  own sits under two helpers that run no plugin code (the process the host
  started, which waits outside, and the namespace's init, pid 1 inside): both
  are forks of the same interpreter, so counting them would count its pages
  twice more; they are left out.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Protocol

from plughost.runners.cgroups import adopt, make_runner_cgroup, own_cgroup, remove
from plughost.runners.proc_tree import descendants, namespace_inits, session_tree

__all__ = ["CgroupMeter", "MemoryMeter", "ProcMeter", "open_meter"]

log = logging.getLogger(__name__)

_PROC = Path("/proc")


class MemoryMeter(Protocol):
    """Reads one runner's memory use."""

    source: str
    """How the number is measured, for messages: ``cgroup`` or ``/proc``."""

    def used(self) -> int | None:
        """Bytes in use now, or None when it cannot be read."""
        ...

    def close(self) -> None:
        """Release what the meter holds (the runner has exited)."""
        ...


def open_meter(
    pid: int,
    cgroup: CgroupMeter | None = None,
    *,
    joined: bool = False,
    pid_namespace: bool = False,
) -> MemoryMeter:
    """The best meter for runner process ``pid`` (and what it starts).

    ``cgroup``: the one :meth:`CgroupMeter.create` made for this runner before
    it started; ``joined`` says the runner joined it itself, before it forked
    anything (a sandboxed runner does), else its session is moved in now.
    Without one the host reads ``/proc``; ``pid_namespace`` says ``pid`` is
    a runner in a pid namespace of its own (its init, or the waiter above it).
    """
    if cgroup is not None:
        if not joined:  # a search of every process on the machine: only when needed
            cgroup.adopt(pid)
        return cgroup
    return ProcMeter(pid, pid_namespace=pid_namespace)


class ProcMeter:
    """The runner's session and descendants, read from ``/proc`` by the host."""

    source = "/proc"

    def __init__(self, pid: int, *, pid_namespace: bool = False) -> None:
        self._pid = pid
        self._nested = pid_namespace

    def used(self) -> int | None:
        """Anonymous plus mapped shared memory of the runner's processes, in bytes."""
        if self._nested:
            # Below the namespace's init (and any waiter), which run no plugin code. Every
            # process of the namespace descends from its init (orphans are reparented to
            # it), so a walk of children files finds them all, without reading every
            # process on the machine as the session search must (milliseconds per beat).
            inits = namespace_inits(self._pid)
            pids = descendants(inits) if inits else set()  # no init: gone, or not started
        else:
            pids = session_tree(self._pid)
        if not pids:
            return None
        return sum(_status_bytes(pid, ("RssAnon:", "RssShmem:")) for pid in pids)

    def close(self) -> None:
        """Nothing to release."""


class CgroupMeter:
    """A cgroup v1 memory cgroup holding one runner process and everything it starts."""

    source = "cgroup"

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def procs(self) -> str:
        """The file a process writes ``0`` to in order to join."""
        return str(self.path / "cgroup.procs")

    @classmethod
    def create(cls, name: str) -> CgroupMeter | None:
        """A fresh, empty memory cgroup for one runner; None where unavailable."""
        path = make_runner_cgroup("memory", name)
        return None if path is None else cls(path)

    def adopt(self, pid: int) -> None:
        """Move process ``pid`` and its session in (those already inside stay)."""
        adopt(self.path, pid)

    def used(self) -> int | None:
        """The cgroup's anonymous and shared memory (``/dev/shm`` included), in bytes."""
        try:
            stat = (self.path / "memory.stat").read_text()
        except OSError:
            return None
        fields = dict(line.split() for line in stat.splitlines() if line.count(" ") == 1)
        return int(fields.get("total_rss", 0)) + int(fields.get("total_shmem", 0))

    def close(self) -> None:
        """Remove the cgroup (its processes have exited; charges move to the parent)."""
        remove(self.path)


def _own_memory_cgroup() -> Path | None:
    """This process's cgroup v1 memory directory, when it exists and is writable."""
    return own_cgroup("memory")


def _status_bytes(pid: int, keys: tuple[str, ...]) -> int:
    try:
        lines = (_PROC / str(pid) / "status").read_text().splitlines()
    except OSError:
        return 0
    return sum(int(line.split()[1]) * 1024 for line in lines if line.startswith(keys))
