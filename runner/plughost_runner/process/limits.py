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
import os
import resource
from typing import Any, TypeGuard

__all__ = ["apply_limits", "describe_limit_error", "note_sandbox"]

log = logging.getLogger("plughost_runner")
_refusals = logging.getLogger("plughost_runner.sandbox")

_active: dict[str, int] = {}
_sandbox: dict[str, Any] = {}  # what the runner's sandbox lets its plugins write


def note_sandbox(writable: list[str], file_size: int | None) -> None:
    """Remember the sandbox's writable paths and file size cap, to explain its refusals."""
    _sandbox["writable"] = writable
    _sandbox["file_size"] = file_size


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


_HIDDEN = ("/tmp/", "/var/tmp/", "/run/", "/var/run/", "/dev/shm/")  # private in a sandbox


def _refused_by_sandbox(exc: BaseException) -> TypeGuard[OSError]:
    """A path outside what the plugin may write, refused (or hidden) by the sandbox."""
    if not isinstance(exc, OSError) or not exc.filename or "writable" not in _sandbox:
        return False
    path = str(exc.filename)
    if any(path == w or path.startswith(w.rstrip("/") + "/") for w in _sandbox["writable"]):
        return False
    if isinstance(exc, PermissionError):
        return True
    return isinstance(exc, FileNotFoundError) and path.startswith(_HIDDEN)


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


def describe_limit_error(exc: BaseException, plugin_id: str = "") -> str | None:
    """A message naming the limit ``exc`` ran into, or None if it is not a limit error.

    A sandbox refusal of a path is one too: the message names the path, what
    the plugin may write, and the grant that would let it (an operator's
    ``write_grants``, never an edit of the plugin).
    """
    if isinstance(exc, OSError) and exc.errno == errno.EMFILE and "open_files" in _active:
        return (
            f"the plugin has too many open files: its runner is limited to "
            f"{_active['open_files']} (limits.open_files)"
        )
    if isinstance(exc, OSError) and exc.errno == errno.EFBIG and _sandbox.get("file_size"):
        return (
            f"the plugin wrote a file larger than its disk quota of "
            f"{_sandbox['file_size'] // 2**20} MiB ({exc.filename or 'a file'}; limits.disk_mb)"
        )
    if _refused_by_sandbox(exc):
        who = plugin_id or "<plugin id>"
        place = os.path.dirname(str(exc.filename)) or str(exc.filename)
        message = (
            f"the sandbox refused {exc.filename!s}: {type(exc).__name__}: {exc.strerror}. A "
            f"plugin writes only its own folder, data and temp directories "
            f"({', '.join(_sandbox['writable'])}); to let {who} write there, add {place!r} "
            f'to write_grants."{who}" in plughost.toml'
        )
        if plugin_id:  # the host turns it into a sandbox.denied event (see LogCollector)
            _refusals.warning(
                message, extra={"plughost_plugin": plugin_id, "plughost_refused": place}
            )
        return message
    return None
