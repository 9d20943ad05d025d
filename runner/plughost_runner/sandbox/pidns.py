"""A runner in a pid namespace of its own: a waiter outside, a minimal init, then the runner.

The kernel treats a pid namespace's first process as its init: a signal sent
from inside the namespace (a plugin's ``os.kill(os.getpid(), SIGKILL)``) or a
default-action signal from outside (SIGTERM, ``limits.cpu_seconds``' SIGXCPU)
is ignored unless it has a handler, and every other process of the namespace
dies when it exits. So the runner must not be that process. After
``unshare(CLONE_NEWPID)`` (:func:`plughost_runner.sandbox.namespaces.enter`),
:func:`split` makes this chain::

    waiter   outside: the pid the host started, leads the runner's session and
      │      process group; ends exactly as the runner did (same code, same signal)
      └─ init     pid 1 inside: reaps orphans, forwards SIGTERM/SIGINT/SIGHUP to the
           │      runner, and exits as soon as the runner does (taking every leftover
           │      process of the namespace with it)
           └─ runner   pid 2 inside: an ordinary process, the one :func:`split` returns in

The host keeps using the waiter's pid: it signals the runner's process group
(all three share it), it measures memory over the waiter's descendants
(leaving out the two helpers, which run no plugin code: the waiter and the
process whose pid inside is 1), and cgroups joined before the split hold all
three. The runner's wait status reaches the
waiter over a pipe the runner never holds, so a plugin cannot forge its end.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import struct
from collections.abc import Callable
from typing import NoReturn

__all__ = ["RUNNER_NSPID", "split"]

RUNNER_NSPID = 2  # init's first child: the runner's pid inside its namespace
_PR_SET_PDEATHSIG, _PR_SET_NAME = 1, 15
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_STATUS = struct.Struct("=i")

_libc = ctypes.CDLL(None, use_errno=True)


def split(in_init: Callable[[], object] | None = None) -> None:
    """Fork the waiter/init/runner chain; return only in the runner (pid 2 inside).

    Call right after entering the new pid namespace, while single-threaded.
    The waiter and init never return: they ``_exit`` when the runner has ended.
    ``in_init`` runs in init once the runner is forked (a sandboxed MCP
    server's egress proxy lives there, beside the server it serves).
    """
    status_read, status_write = os.pipe()
    init = os.fork()
    if init:
        os.close(status_write)
        _end_with(_wait_outside, init, status_read)
    os.close(status_read)
    runner = os.fork()
    if runner == 0:
        os.close(status_write)  # the runner cannot speak for itself
        return
    if in_init is not None:
        in_init()
    _end_with(_serve_as_init, runner, status_write)


def _end_with(role: Callable[[int, int], int], child: int, pipe: int) -> NoReturn:
    """Play a helper's ``role`` and exit: a helper never returns into the runner's code."""
    code = 1
    try:
        code = role(child, pipe)
    finally:
        os._exit(code)


def _serve_as_init(runner: int, status_write: int) -> int:
    """Pid 1: reap every child, forward stop signals; report the runner's end and exit."""
    _libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)  # the waiter died: all die
    _libc.prctl(_PR_SET_NAME, b"plughost-init", 0, 0, 0)
    _forward_to(runner)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:  # cannot happen while the runner lives; be safe
            return 1
        if pid == runner:
            with contextlib.suppress(OSError):
                os.write(status_write, _STATUS.pack(status))
            return 0


def _wait_outside(init: int, status_read: int) -> int:
    """The waiter: wait for init, then end as the runner ended (its code, or its signal)."""
    _libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    _forward_to(init)
    while True:
        try:
            _, status = os.waitpid(init, 0)
            break
        except ChildProcessError:
            return 1
    with contextlib.suppress(OSError):
        report = os.read(status_read, _STATUS.size)
        if len(report) == _STATUS.size:
            (status,) = _STATUS.unpack(report)
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        with contextlib.suppress(OSError, ValueError):  # SIGKILL's cannot be set, nor needs to
            signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)  # non-dumpable: a core signal writes no core here
        return 128 + number
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1


def _forward_to(child: int) -> None:
    def forward(number: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, number)

    for number in _FORWARDED:
        signal.signal(number, forward)
