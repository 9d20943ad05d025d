"""Make sure a runner never outlives its host.

On Linux the kernel delivers SIGKILL to the runner the moment its parent dies
(``PR_SET_PDEATHSIG``), which also covers a SIGKILLed host. A watcher thread
polling the parent pid is the portable fallback and closes the race where the
parent died before ``prctl`` ran.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading

__all__ = ["bind_to_parent"]

_PR_SET_PDEATHSIG = 1


def bind_to_parent(parent_pid: int, poll_interval: float = 0.25) -> None:
    """Exit this process as soon as ``parent_pid`` is no longer our parent."""
    if sys.platform.startswith("linux"):
        # The interpreter's own symbols include libc's: no ctypes.util.find_library, which
        # costs an import chain and an ``ldconfig`` subprocess on every runner start.
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent_pid:
        os._exit(70)
    watcher = threading.Thread(
        target=_watch, args=(parent_pid, poll_interval), name="plughost-lifeline", daemon=True
    )
    watcher.start()


def _watch(parent_pid: int, poll_interval: float) -> None:
    stop = threading.Event()
    while not stop.wait(poll_interval):
        if os.getppid() != parent_pid:
            os._exit(70)
