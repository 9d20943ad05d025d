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

import contextlib
import logging
import os
from pathlib import Path
from typing import Protocol

from plughost.runners.cgroups import own_cgroup

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
    the waiter of a runner in a pid namespace of its own.
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
            pids = self._nested_tree()
        else:
            pids = _tree(self._pid, _all_stats())
            if self._pid not in pids:
                return None
        if not pids:
            return None
        return sum(_status_bytes(pid, ("RssAnon:", "RssShmem:")) for pid in pids)

    def _nested_tree(self) -> set[int] | None:
        """The processes below the waiter and the namespace's init, which run no plugin code.

        Every process of the namespace descends from its init (orphans are
        reparented to it), so the walk follows ``children`` files down from the
        waiter instead of reading every process on the machine, as the session
        search must otherwise (a few milliseconds of the host's loop per beat).
        """
        inits = [pid for pid in _children(self._pid) if _is_init(pid)]
        if not inits:
            return None  # gone, or not started yet
        found: set[int] = set()
        todo = inits
        while todo:
            for child in _children(todo.pop()):
                if child not in found:
                    found.add(child)
                    todo.append(child)
        return found

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
        parent = _own_memory_cgroup()
        if parent is None:
            return None
        path = parent / f"plughost-{os.getpid()}-{name}"
        try:
            path.mkdir(exist_ok=True)
        except OSError as exc:
            log.debug("no memory cgroup for runner %s: %s", name, exc)
            return None
        return cls(path)

    def adopt(self, pid: int) -> None:
        """Move process ``pid`` and its session in (those already inside stay)."""
        for member in sorted(_session(pid) | {pid}):
            with contextlib.suppress(OSError):
                Path(self.procs).write_text(str(member))

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
        with contextlib.suppress(OSError):
            self.path.rmdir()


def _own_memory_cgroup() -> Path | None:
    """This process's cgroup v1 memory directory, when it exists and is writable."""
    return own_cgroup("memory")


def _stat(pid: int) -> tuple[int, int] | None:
    """``(ppid, session id)`` of ``pid``, or None when it is gone."""
    try:
        data = (_PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()
    return int(fields[1]), int(fields[3])


def _session(sid: int) -> set[int]:
    return {pid for pid, (_, session) in _all_stats().items() if session == sid}


def _all_stats() -> dict[int, tuple[int, int]]:
    stats = {}
    for entry in os.listdir(_PROC):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            stats[int(entry)] = stat
    return stats


def _tree(root: int, stats: dict[int, tuple[int, int]]) -> set[int]:
    """``root``, the processes of its session, and all their descendants."""
    if root not in stats:
        return set()
    found = {root} | {pid for pid, (_, sid) in stats.items() if sid == root}
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    todo = list(found)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _children(pid: int) -> list[int]:
    """The children of ``pid``, from its threads' ``children`` files (none if it is gone)."""
    try:
        threads = os.listdir(_PROC / str(pid) / "task")
    except OSError:
        return []
    children = []
    for thread in threads:
        with contextlib.suppress(OSError):
            children += [
                int(c)
                for c in (_PROC / str(pid) / "task" / thread / "children").read_text().split()
            ]
    return children


def _is_init(pid: int) -> bool:
    """Whether ``pid`` is the first process of a pid namespace (its innermost pid is 1)."""
    try:
        lines = (_PROC / str(pid) / "status").read_text().splitlines()
    except OSError:
        return False
    return any(line.startswith("NSpid:") and line.split()[-1] == "1" for line in lines)


def _status_bytes(pid: int, keys: tuple[str, ...]) -> int:
    try:
        lines = (_PROC / str(pid) / "status").read_text().splitlines()
    except OSError:
        return 0
    return sum(int(line.split()[1]) * 1024 for line in lines if line.startswith(keys))
