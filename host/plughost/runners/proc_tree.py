"""A runner's processes as the host finds them in ``/proc``, never from the runner's word.

Two shapes, as :mod:`plughost.runners.memory` and :mod:`plughost.runners.cpu`
read them:

- a runner in a pid namespace of its own is the namespace's init (pid 1
  inside, which every orphan of the namespace is reparented to: the pid the
  host knows for a forked runner, or the child of the waiter the host
  started) and everything below it (:func:`namespace_inits`,
  :func:`descendants`): a walk of a few ``children`` files;
- any other runner is its session (it leads one) and the descendants of its
  members (:func:`session_tree`), which needs a look at every process on the
  machine (a few milliseconds).

The host sees the real pids from outside any namespace.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["children", "descendants", "namespace_inits", "session", "session_tree", "stat_fields"]

_PROC = Path("/proc")


def stat_fields(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` from its state on (field 3), or None when it is gone.

    Field ``n`` of proc(5) is at index ``n - 3``: ppid 1, session 3, utime 11,
    stime 12, cutime 13, cstime 14.
    """
    try:
        data = (_PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    return data[data.rfind(b")") + 2 :].split()


def session(sid: int) -> set[int]:
    """Every process of session ``sid``."""
    return {pid for pid, (_, member_of) in _all_stats().items() if member_of == sid}


def session_tree(root: int) -> list[int]:
    """``root``, the processes of its session, and all their descendants (empty if it is gone).

    Parents come before their children (see :func:`descendants`).
    """
    stats = _all_stats()
    if root not in stats:
        return []
    members = {pid for pid, (_, sid) in stats.items() if sid == root} | {root}
    below: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        below.setdefault(ppid, []).append(pid)
    tops = [root] + [p for p in sorted(members) if p != root and stats[p][0] not in members]
    found: list[int] = []
    seen: set[int] = set()
    for top in tops:
        if top in seen:
            continue
        seen.add(top)
        found.append(top)
        found += _walk([top], lambda pid: below.get(pid, ()), seen)
    return found


def namespace_inits(pid: int) -> list[int]:
    """``pid`` if it is the first process of a pid namespace, else its children that are.

    None when it is gone (or not started yet).
    """
    if _is_init(pid):
        return [pid]
    return [child for child in children(pid) if _is_init(child)]


def descendants(roots: Iterable[int]) -> list[int]:
    """Every process below ``roots`` (not the roots themselves), following ``children`` files.

    Each comes after its parent: a reader that adds up what each process and
    the children it reaped used then never counts a child twice (read before
    its parent reaps it, its time is not in the parent's yet).
    """
    return _walk(list(roots), children, set(roots))


def _walk(
    roots: list[int], children_of: Callable[[int], Iterable[int]], seen: set[int]
) -> list[int]:
    """Breadth first below ``roots``, skipping (and then adding to) ``seen``."""
    found: list[int] = []
    queue = deque(roots)
    while queue:
        for child in children_of(queue.popleft()):
            if child not in seen:
                seen.add(child)
                found.append(child)
                queue.append(child)
    return found


def children(pid: int) -> list[int]:
    """The children of ``pid``, from its threads' ``children`` files (none if it is gone)."""
    try:
        threads = os.listdir(_PROC / str(pid) / "task")
    except OSError:
        return []
    found = []
    for thread in threads:
        with contextlib.suppress(OSError):
            found += [
                int(c)
                for c in (_PROC / str(pid) / "task" / thread / "children").read_text().split()
            ]
    return found


def _all_stats() -> dict[int, tuple[int, int]]:
    """``(ppid, session id)`` of every process on the machine."""
    stats = {}
    for entry in os.listdir(_PROC):
        if entry.isdigit() and (fields := stat_fields(int(entry))) is not None:
            stats[int(entry)] = (int(fields[1]), int(fields[3]))
    return stats


def _is_init(pid: int) -> bool:
    """Whether ``pid`` is the first process of a pid namespace (its innermost pid is 1)."""
    try:
        lines = (_PROC / str(pid) / "status").read_text().splitlines()
    except OSError:
        return False
    return any(line.startswith("NSpid:") and line.split()[-1] == "1" for line in lines)
