"""``limits.processes``: how many processes and threads a runner and all it starts may have.

A fork bomb in a plugin must hit its own runner's ceiling, not the machine's.
Two ways, the best the machine offers:

- on a root host with the cgroup v1 ``pids`` controller, each runner process
  gets a cgroup of its own with ``pids.max``; the runner joins it first thing
  (the path travels in its sandbox policy), so every process it starts is born
  inside;
- elsewhere, with the sandbox's user namespace, ``RLIMIT_NPROC`` set inside
  that namespace, where the kernel counts this runner's processes only (a
  root-owned process ignores that limit, hence the cgroup for root).

What does not live here: memory (:mod:`plughost.runners.memory`).
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

from plughost.runners.cgroups import make_runner_cgroup, remove

__all__ = ["ProcessCgroup"]

log = logging.getLogger(__name__)


class ProcessCgroup:
    """A cgroup v1 ``pids`` cgroup for one runner process, removed after it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def procs(self) -> str:
        """The file a process writes ``0`` to in order to join."""
        return str(self.path / "cgroup.procs")

    @classmethod
    def create(cls, name: str, maximum: int) -> ProcessCgroup | None:
        """A fresh cgroup allowing ``maximum`` tasks; None where the machine has none to give."""
        path = make_runner_cgroup("pids", name)
        if path is None:
            return None
        try:
            (path / "pids.max").write_text(str(maximum))
        except OSError as exc:
            log.debug("no pids cgroup for runner %s: %s", name, exc)
            with contextlib.suppress(OSError):
                path.rmdir()
            return None
        return cls(path)

    def close(self) -> None:
        """Remove the cgroup (every process in it has exited, or is about to)."""
        remove(self.path)
