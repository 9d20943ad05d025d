"""Operating-system resource limits a runner applies to itself before loading plugins.

The host sends the limits in its hello reply. ``cpu_seconds`` and
``open_files`` are set with ``setrlimit`` so the kernel enforces them: CPU time
past the limit ends the process with SIGXCPU, and opening a file past the
limit raises ``OSError(EMFILE)``, which :func:`describe_limit_error` turns into
a message naming the limit. ``memory_mb`` is enforced by the host on the
runner's resident memory instead: an address-space limit would refuse the
virtual memory that every new thread's malloc arena reserves, long before a
plugin uses much real memory.
"""

from __future__ import annotations

import errno
import logging
import resource
from typing import Any

__all__ = ["apply_limits", "describe_limit_error"]

log = logging.getLogger("plughost_runner")

_active: dict[str, int] = {}


def apply_limits(limits: dict[str, Any]) -> None:
    """Apply the host's limits to this process; unknown or empty entries are ignored."""
    cpu = limits.get("cpu_seconds")
    if isinstance(cpu, int) and cpu > 0:
        # The soft limit sends SIGXCPU; the hard one, a second later, SIGKILL.
        _set(resource.RLIMIT_CPU, cpu, hard=cpu + 1)
        _active["cpu_seconds"] = cpu
    files = limits.get("open_files")
    if isinstance(files, int) and files > 0:
        _set(resource.RLIMIT_NOFILE, files)
        _active["open_files"] = files


def _set(kind: int, soft: int, hard: int | None = None) -> None:
    _, current_hard = resource.getrlimit(kind)
    wanted_hard = soft if hard is None else hard
    if current_hard != resource.RLIM_INFINITY:
        wanted_hard = min(wanted_hard, current_hard)
        soft = min(soft, wanted_hard)
    try:
        resource.setrlimit(kind, (soft, wanted_hard))
    except (ValueError, OSError) as exc:
        log.warning("could not apply resource limit %s=%s: %s", kind, soft, exc)


def describe_limit_error(exc: BaseException) -> str | None:
    """A message naming the limit ``exc`` ran into, or None if it is not a limit error."""
    if isinstance(exc, OSError) and exc.errno == errno.EMFILE and "open_files" in _active:
        return (
            f"the plugin has too many open files: its runner is limited to "
            f"{_active['open_files']} (limits.open_files)"
        )
    return None
