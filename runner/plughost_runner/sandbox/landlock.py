"""Landlock through its three system calls: which files, ports and scopes a runner keeps.

Landlock lets an unprivileged process take away its own rights: once
:func:`restrict` returns, this process and everything it starts can open only
what the rules allow, connect or bind only the TCP ports allowed (ABI 4 and
later), and (ABI 6 and later) neither signal nor reach the abstract sockets of
processes outside its domain. A Landlocked process also cannot ptrace, read
``/proc/<pid>/environ`` or ``/proc/<pid>/mem`` of any process outside its
domain, whatever their uids.

The PyPI ``landlock`` package covers filesystem rules only; the runner needs
port rules and scopes too, so this module speaks to the kernel itself.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from collections.abc import Iterable

__all__ = ["LandlockError", "abi_version", "restrict"]

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same on every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2

# Filesystem rights, by the ABI that introduced them.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_WRITE_DIR = sum(1 << bit for bit in range(4, 13))  # remove, make char/dir/reg/sock/fifo/block/sym
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
_FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
READ = EXECUTE | READ_FILE | READ_DIR
WRITE = READ | WRITE_FILE | _WRITE_DIR | REFER | TRUNCATE | IOCTL_DEV

BIND_TCP, CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1


class LandlockError(OSError):
    """Landlock is missing, or refused a rule."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPort(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long


def abi_version() -> int:
    """The Landlock ABI this kernel offers; 0 when it has none (or it is disabled)."""
    version = _syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    return max(0, int(version))


def fs_rights(abi: int) -> int:
    """Every filesystem right ``abi`` knows: all of them are handled (denied unless allowed)."""
    return _FS_BY_ABI[max(k for k in _FS_BY_ABI if k <= abi)]


def restrict(
    read: Iterable[str],
    write: Iterable[str],
    *,
    connect_ports: Iterable[int] | None = None,
    bind_ports: Iterable[int] | None = None,
    scoped: bool = True,
) -> int:
    """Confine this process (and its future children) to the given paths and ports.

    Paths that do not exist are skipped. ``connect_ports``/``bind_ports`` of
    None leave TCP unrestricted; an empty list forbids it (ABI 4 and later).
    The caller must have set ``no_new_privs`` first.

    Returns:
        The ABI used.

    Raises:
        LandlockError: the kernel has no Landlock or refused the ruleset.
    """
    abi = abi_version()
    if abi < 1:
        raise LandlockError(errno.EOPNOTSUPP, "Landlock is not available")
    handled = fs_rights(abi)
    attr = _RulesetAttr(handled, 0, 0)
    ports = (connect_ports, bind_ports)
    if abi >= 4:
        attr.handled_access_net = (CONNECT_TCP if connect_ports is not None else 0) | (
            BIND_TCP if bind_ports is not None else 0
        )
    if abi >= 6 and scoped:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
    ruleset = _call(_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0)
    try:
        for access, paths in ((WRITE & handled, write), (READ & handled, read)):
            for path in paths:
                _allow_path(ruleset, path, access)
        if abi >= 4:
            for access, allowed in zip((CONNECT_TCP, BIND_TCP), ports, strict=True):
                for port in allowed or ():
                    rule = _NetPort(access, port)
                    _call(_ADD_RULE, ruleset, _RULE_NET_PORT, ctypes.byref(rule), 0)
        _call(_RESTRICT_SELF, ruleset, 0)
    finally:
        os.close(ruleset)
    return abi


def _allow_path(ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a path that is not there needs no rule
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            access &= _FILE_ONLY
        rule = _PathBeneath(access, fd)
        _call(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0)
    finally:
        os.close(fd)


def _call(number: int, *args: object) -> int:
    result = int(_syscall(number, *args))
    if result < 0:
        code = ctypes.get_errno()
        raise LandlockError(code, f"landlock system call {number}: {os.strerror(code)}")
    return result
