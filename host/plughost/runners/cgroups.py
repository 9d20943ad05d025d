"""Where this host may make cgroup v1 children: one directory per controller.

Used for a runner's memory (``plughost.runners.memory``) and process count
(``plughost.runners.processes``). Only root may create cgroups here, and only
under the host's own cgroup of each controller.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CGROUP_ROOT", "own_cgroup"]

CGROUP_ROOT = Path("/sys/fs/cgroup")
_PROC = Path("/proc")


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
