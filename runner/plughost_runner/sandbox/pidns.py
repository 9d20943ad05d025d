"""A runner in a pid namespace of its own: a minimal init, then the runner below it.

The kernel treats a pid namespace's first process as its init: a signal sent
from inside the namespace (a plugin's ``os.kill(os.getpid(), SIGKILL)``) or a
default-action signal from outside (SIGTERM, ``limits.cpu_seconds``' SIGXCPU)
is ignored unless it has a handler, and every other process of the namespace
dies when it exits. So the runner must not be that process. After
``unshare(CLONE_NEWPID)`` (:func:`plughost_runner.sandbox.namespaces.enter`),
:func:`split` makes one of two chains. A runner forked by the fork server,
which adopts the orphans of its children (``PR_SET_CHILD_SUBREAPER``), hands
it the namespace's init::

    fork server  reads the runner's end from init over a pipe (``report_fd``),
      │          which the runner never holds, so a plugin cannot forge it
      └─ init     pid 1 inside, the pid the host knows: leads the runner's session
           │      and process group, reaps orphans, forwards SIGTERM/SIGINT/SIGHUP,
           │      and exits as soon as the runner does (taking every leftover
           │      process of the namespace with it) or the fork server does
           └─ runner   pid 2 inside: an ordinary process, the one :func:`split` returns in

Where it can, the fork server makes init itself, already pid 1 of the new
namespaces (:mod:`.clone`), and init says so on ``report_fd``
(:func:`split_cloned`). Otherwise the process that entered the namespace only
forks init, tells the fork server init's pid on ``report_fd`` and exits: no
third process waits outside. Once init has forked the runner it execs :data:`NATIVE_INIT`, a small C
program (``init.c`` beside this module, built by ``scripts/bootstrap.sh``)
that does the same job in a fraction of the memory of a forked interpreter;
where it was not built, init stays this Python process (the fork server tells
the host, which logs it). A
runner the host started itself (or on a kernel without pidfds) keeps that
process as a waiter outside, the pid the host knows, which ends exactly as
the runner did (same code, same signal)::

    waiter ── init (pid 1) ── runner (pid 2)

Either way the host signals the runner's process group, which all of them
share; it measures memory below the namespace's init (leaving out the
helpers, which run no plugin code); and cgroups joined before the split hold
them all.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import struct
import sys
from collections.abc import Callable
from typing import NoReturn

__all__ = [
    "AS_INIT",
    "NATIVE_INIT",
    "RUNNER_NSPID",
    "announce",
    "native_init",
    "split",
    "split_cloned",
]

RUNNER_NSPID = 2  # init's first child: the runner's pid inside its namespace
AS_INIT = 0
"""What init cloned by the fork server names on ``report_fd``: itself, whose pid it cannot see."""
NATIVE_INIT = os.path.join(sys.prefix, "libexec", "plughost-init")  # built from init.c
_PR_SET_PDEATHSIG, _PR_SET_NAME = 1, 15
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_STATUS = struct.Struct("=i")  # a pid on report_fd first, then a wait status

_libc = ctypes.CDLL(None, use_errno=True)


def announce(report_fd: int) -> None:
    """Tell the fork server that this process is the runner the host should know; close it."""
    try:
        os.write(report_fd, _STATUS.pack(os.getpid()))
    finally:
        os.close(report_fd)


def split(in_init: Callable[[], object] | None = None, report_fd: int | None = None) -> None:
    """Fork the namespace's init and the runner below it; return only in the runner (pid 2).

    Call right after entering the new pid namespace, while single-threaded.
    The helpers never return: they ``_exit`` when the runner has ended.
    ``in_init`` runs in init once the runner is forked (a sandboxed MCP
    server's egress proxy lives there, beside the server it serves).
    ``report_fd`` is the fork server's pipe: given, init is handed to the fork
    server and no waiter stays outside; the runner returns with it closed.
    """
    if report_fd is not None:
        server = _pidfd_of_parent()
        if server is not None:
            _split_adopted(report_fd, server)
            return
        announce(report_fd)  # this process stays outside as the waiter, the pid to know
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


def split_cloned(report_fd: int, server: int) -> None:
    """In pid 1 of a namespace the fork server cloned: fork the runner; return only in it.

    Init tells the fork server, which is its parent and knows its pid, that it
    is the namespace's init (:data:`AS_INIT` on ``report_fd``), then carries on
    as in :func:`split`'s adopted chain: it becomes the native init, or serves
    as a Python one, watching the fork server through ``server`` (a pidfd of
    it, opened before the clone: from inside the namespace it has no pid).
    The runner returns with neither descriptor.
    """
    program = _native_init_opened()
    runner = os.fork()
    if runner == 0:
        for fd in (report_fd, server, *_given(program)):
            os.close(fd)  # the runner can neither speak for init nor signal the fork server
        return
    try:
        os.write(report_fd, _STATUS.pack(AS_INIT))
    except OSError:
        os._exit(1)  # the fork server is gone: so is the namespace
    _exec_native_init(runner, report_fd, server, program)
    _end_with(lambda child, pipe: _serve_adopted(child, pipe, server), runner, report_fd)


def native_init() -> str | None:
    """The native init program's path, or None where it was not built (no C compiler)."""
    return NATIVE_INIT if os.access(NATIVE_INIT, os.X_OK) else None


def _pidfd_of_parent() -> int | None:
    try:
        return os.pidfd_open(os.getppid())
    except (AttributeError, OSError):  # before Linux 5.3, or the fork server is gone
        return None


def _split_adopted(report_fd: int, server: int) -> None:
    """Fork init, hand it to the fork server and exit; return in the runner below init."""
    session_read, session_write = os.pipe()
    init = os.fork()
    if init:
        os.close(session_write)
        os.read(session_read, 1)  # end-of-file once init leads its session: signal it then
        code = 0
        try:
            os.write(report_fd, _STATUS.pack(init))
        except OSError:
            code = 1
        os._exit(code)
    os.setsid()
    os.close(session_read)
    os.close(session_write)
    program = _native_init_opened()
    runner = os.fork()
    if runner == 0:
        for fd in (report_fd, server, *_given(program)):
            os.close(fd)  # the runner can neither speak for init nor signal the fork server
        return
    _exec_native_init(runner, report_fd, server, program)
    _end_with(lambda child, pipe: _serve_adopted(child, pipe, server), runner, report_fd)


def _native_init_opened() -> int | None:
    """The native init, opened before the runner is forked; None where it cannot be.

    The runner covers ``/tmp`` and other folders as soon as it starts, in the mount
    namespace it shares with init, and a virtualenv may lie there: the program is
    executed through this descriptor, which the covering does not hide.
    """
    path = native_init()
    if path is None:
        return None
    try:
        return os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return None


def _given(program: int | None) -> tuple[int, ...]:
    return () if program is None else (program,)


def _exec_native_init(runner: int, report_fd: int, server: int, program: int | None) -> None:
    """Become the native init, which carries on as :func:`_serve_adopted`; return if it cannot.

    Only ``report_fd`` and ``server`` cross the exec; every other descriptor
    this process inherited is closed first, and stays closed in the Python init
    that carries on where there is no native one: a cloned init forks the runner
    before it closes anything (see the fork server).
    """
    passed = (report_fd, server)
    kept = sorted((*passed, *_given(program)))
    for low, high in zip([-1, *kept], [*kept, os.sysconf("SC_OPEN_MAX")], strict=True):
        os.closerange(low + 1, high)
    if program is None:
        return
    for fd in passed:
        os.set_inheritable(fd, True)
    argv = [NATIVE_INIT, str(report_fd), str(server), str(runner)]
    with contextlib.suppress(OSError):
        os.execve(program, argv, os.environ)  # closed by the exec itself (close-on-exec)
    os.close(program)
    for fd in passed:
        os.set_inheritable(fd, False)


def _serve_adopted(runner: int, report_fd: int, server: int) -> int:
    """Pid 1 under the fork server: reap, forward; report the runner's end and exit.

    No parent-death signal: the parent that forked init exits at once. Init
    watches the fork server through a pidfd instead, and ends the namespace
    when it is gone. Only this fallback (no native init) needs the wake-up
    pipe, so it is made here: a runner that ended before it is reaped by the
    first pass, before any wait.
    """
    _libc.prctl(_PR_SET_NAME, b"plughost-init", 0, 0, 0)
    wake, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    _forward_to(runner)
    while True:
        while True:  # reap first: the runner may have ended before the handler was set
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:  # cannot happen while the runner lives; be safe
                return 1
            if pid == 0:
                break
            if pid == runner:
                with contextlib.suppress(OSError):
                    os.write(report_fd, _STATUS.pack(status))
                if os.WIFSIGNALED(status):  # pid 1 cannot signal itself: the usual code
                    return 128 + os.WTERMSIG(status)
                return os.waitstatus_to_exitcode(status)
        ready, _, _ = select.select([wake, server], [], [])
        if server in ready:
            return 1
        with contextlib.suppress(BlockingIOError):
            os.read(wake, 4096)


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
