"""Where this host may make cgroup v1 children: one directory per controller.

Used for a runner's memory (``plughost.runners.memory``), CPU time
(``plughost.runners.cpu``) and process count (``plughost.runners.processes``).
Only root may create cgroups here, and only under the host's own cgroup of
each controller.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from plughost.runners.proc_tree import session

__all__ = ["CGROUP_ROOT", "adopt", "make_runner_cgroup", "own_cgroup", "remove"]

log = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
_PROC = Path("/proc")
_stale: set[Path] = set()  # runners' cgroups whose last processes were still exiting


def own_cgroup(controller: str) -> Path | None:
    """This process's cgroup v1 directory for ``controller``, when root may write it."""
    root = CGROUP_ROOT / controller
    if os.geteuid() != 0 or not root.is_dir():
        return None
    try:
        lines = (_PROC / "self" / "cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            own = root / path.lstrip("/")
            return own if os.access(own, os.W_OK) else None
    return None


def make_runner_cgroup(controller: str, name: str) -> Path | None:
    """A child of this host's ``controller`` cgroup for runner ``name``; None where unavailable."""
    parent = own_cgroup(controller)
    if parent is None:
        return None
    path = parent / f"plughost-{os.getpid()}-{name}"
    try:
        path.mkdir(exist_ok=True)
    except OSError as exc:
        log.debug("no %s cgroup for runner %s: %s", controller, name, exc)
        return None
    return path


def adopt(cgroup: Path, pid: int) -> None:
    """Move process ``pid`` and its session into ``cgroup`` (those already inside stay).

    For a runner that did not join the cgroup itself before it forked anything
    (an unsandboxed one): a search of every process on the machine.
    """
    for member in sorted(session(pid) | {pid}):
        with contextlib.suppress(OSError):
            (cgroup / "cgroup.procs").write_text(str(member))


def remove(cgroup: Path) -> None:
    """Remove a runner's cgroup, now or, while its last processes still exit, at a later call.

    The kernel refuses to remove a cgroup that still holds a task, and the
    processes of a runner's pid namespace die a moment after the process the
    host waits for: each call retries the cgroups earlier calls could not remove.
    """
    _stale.add(cgroup)
    for path in list(_stale):
        try:
            path.rmdir()
        except FileNotFoundError:
            _stale.discard(path)
        except OSError:
            continue
        else:
            _stale.discard(path)
