"""Make sure a runner never outlives its host.

On Linux the kernel delivers SIGKILL to the runner the moment its parent dies
(``PR_SET_PDEATHSIG``), which also covers a SIGKILLed host; the parent's pid,
checked once after ``prctl``, closes the race where the parent died before it
ran. Every link of the chain does the same: the fork server with the host, a
runner with the fork server (or with its pid namespace's init, which ends the
namespace when the fork server, or the waiter outside, is gone). So nothing polls: an idle
runner has no thread that wakes to look. Elsewhere, or if ``prctl`` fails, a
watcher thread polls the parent's pid instead.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading

__all__ = ["bind_to_parent"]

_PR_SET_PDEATHSIG = 1
# The interpreter's own symbols include libc's: no ctypes.util.find_library, which costs an
# import chain and an ``ldconfig`` subprocess. Made once: a forked runner only calls it.
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def bind_to_parent(parent_pid: int, poll_interval: float = 0.25) -> bool:
    """Exit this process as soon as ``parent_pid`` is no longer our parent.

    Returns:
        Whether a watcher thread polls for it (where the kernel cannot be asked to).
    """
    signalled = False
    if _libc is not None:
        signalled = _libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    if os.getppid() != parent_pid:
        os._exit(70)
    if signalled:
        return False
    watcher = threading.Thread(
        target=_watch, args=(parent_pid, poll_interval), name="plughost-lifeline", daemon=True
    )
    watcher.start()
    return True


def _watch(parent_pid: int, poll_interval: float) -> None:
    stop = threading.Event()
    while not stop.wait(poll_interval):
        if os.getppid() != parent_pid:
            os._exit(70)
