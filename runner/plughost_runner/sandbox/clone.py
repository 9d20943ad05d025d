"""Fork this interpreter straight into new namespaces: ``clone(2)`` with namespace flags.

A child that is forked, calls ``unshare`` and forks again so that its pid
namespace has an init, and then exits, costs a sandboxed runner three copies
of the fork server's address space, two of them torn down again within
milliseconds. :func:`fork_into` makes the namespace's init in one system call,
a child that is already pid 1 of a new pid namespace (and in new user, mount,
IPC and network namespaces), so a runner costs two copies and none is thrown
away unused.

Lives here: the one system call. Not here: what the child does then
(:func:`plughost_runner.sandbox.enter_cloned`).

The child is a short-lived init-to-be, and runs none of the steps a fork
normally takes in a child: not CPython's (reset the interpreter's locks and
threads, then every ``os.register_at_fork`` hook: together most of a
millisecond of page copies in each child), nor the C library's (its record of
the thread id stays the parent's). That is sound only in a caller with a
single thread, where no lock can be held by a thread the child does not
have: unlike ``unshare``, the kernel clones a threaded caller into new
namespaces, so :func:`fork_into` counts the caller's threads itself and
refuses more than one. The child must still not call ``raise``, ``abort`` or
``pthread_kill``, nor start a thread, and it should ``exec`` soon. What runs
as Python proper, the runner, is forked from it with :func:`os.fork`, which
takes every step again.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import signal

__all__ = ["fork_into", "supported"]

_SYS_CLONE = {"x86_64": 56, "aarch64": 220}.get(platform.machine())
# A PyDLL keeps the interpreter lock across the call, as os.fork does across fork(2).
_libc = ctypes.PyDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def supported() -> bool:
    """Whether :func:`fork_into` knows this machine's ``clone`` system call."""
    return _SYS_CLONE is not None


def fork_into(flags: int) -> int:
    """Fork this process into the new namespaces ``flags`` names (``CLONE_NEW*``).

    Returns:
        0 in the child, the child's pid in the parent (as :func:`os.fork`).

    Raises:
        OSError: the caller has more than one thread, the kernel refused (no user
            namespaces, a limit on their number...), or this machine's ``clone`` is
            not known here (see :func:`supported`).
    """
    if _SYS_CLONE is None:
        raise OSError(0, f"clone: not known on {platform.machine()}")
    threads = _threads()
    if threads != 1:
        raise OSError(errno.EINVAL, f"clone: the caller has {threads} threads, not one")
    # clone(flags, stack, parent_tid, child_tid, tls) on x86-64; aarch64 swaps the last
    # two, and every pointer is unused here: a NULL stack makes it fork-like.
    pid = _libc.syscall(
        ctypes.c_long(_SYS_CLONE),
        ctypes.c_ulong(flags | signal.SIGCHLD),
        ctypes.c_void_p(0),
        ctypes.c_void_p(0),
        ctypes.c_void_p(0),
        ctypes.c_ulong(0),
    )
    if pid == 0:
        return 0
    code = ctypes.get_errno()
    if pid < 0:
        raise OSError(code, f"clone: {os.strerror(code)}")
    return int(pid)


def _threads() -> int:
    """How many threads this process has (``/proc/self/task`` links one directory each)."""
    return os.stat("/proc/self/task").st_nlink - 2
