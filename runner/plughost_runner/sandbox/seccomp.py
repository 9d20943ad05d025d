"""A seccomp filter: the system calls a plugin never needs fail with EPERM.

The filter is a deny list, so that anything an ordinary Python library does
keeps working: it refuses the calls that reach into other processes
(``ptrace``, ``process_vm_*``), change what the process can see or become
(``mount``, ``unshare``, ``setns``, namespace flags of ``clone``, ``chroot``),
talk to the kernel's more exposed corners (``bpf``, ``perf_event_open``,
``userfaultfd``, ``io_uring``, ``keyctl``, module loading, ``kexec``) or type
into a terminal (``ioctl(TIOCSTI)``). ``clone3`` answers ENOSYS, because its
flags sit behind a pointer that a filter cannot read; the C library then falls
back to ``clone``. A call made with another architecture's numbering (x32 on
x86_64) ends the process.

pyseccomp (the ctypes wrapper of libseccomp on PyPI) has had no release since
2021 and looks libseccomp up with an ``ldconfig`` subprocess on every start;
the filter below is small enough to build and test here.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import platform

__all__ = ["SeccompError", "compiled", "install", "supported"]

_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_RET_KILL_PROCESS, _RET_ALLOW = 0x80000000, 0x7FFF0000
_RET_ERRNO = 0x00050000
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
_NAMESPACE_FLAGS = 0x7E020000
_TIOCSTI, _TIOCLINUX = 0x5412, 0x541C

# Numbers shared by every architecture (the unified table from 424 on).
_COMMON = {
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
    "fspick": 433, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "mount_setattr": 442, "quotactl_fd": 443,
}  # fmt: skip
_DENIED = {
    "x86_64": {
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "mount": 165,
        "umount2": 166, "pivot_root": 155, "chroot": 161, "swapon": 167, "swapoff": 168,
        "reboot": 169, "sethostname": 170, "setdomainname": 171, "init_module": 175,
        "delete_module": 176, "finit_module": 313, "kexec_load": 246, "kexec_file_load": 320,
        "acct": 163, "quotactl": 179, "iopl": 172, "ioperm": 173, "keyctl": 250,
        "add_key": 248, "request_key": 249, "bpf": 321, "perf_event_open": 298,
        "userfaultfd": 323, "unshare": 272, "setns": 308, "open_by_handle_at": 304,
        "name_to_handle_at": 303, "lookup_dcookie": 212, "syslog": 103, "vhangup": 153,
        "personality": 135, **_COMMON,
    },
    "aarch64": {
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "mount": 40,
        "umount2": 39, "pivot_root": 41, "chroot": 51, "swapon": 224, "swapoff": 225,
        "reboot": 142, "sethostname": 161, "setdomainname": 162, "init_module": 105,
        "delete_module": 106, "finit_module": 273, "kexec_load": 104, "kexec_file_load": 294,
        "acct": 89, "quotactl": 60, "keyctl": 219, "add_key": 217, "request_key": 218,
        "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "unshare": 97, "setns": 268,
        "open_by_handle_at": 265, "name_to_handle_at": 264, "lookup_dcookie": 18,
        "syslog": 116, "vhangup": 58, "personality": 92, **_COMMON,
    },
}  # fmt: skip
# (audit architecture, clone, ioctl, clone3, lowest number of a foreign ABI to refuse)
_ARCH = {
    "x86_64": (0xC000003E, 56, 16, 435, 0x40000000),
    "aarch64": (0xC00000B7, 220, 29, 435, None),
}


class SeccompError(OSError):
    """The kernel refused the filter."""


class _Instruction(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Instruction))]


_libc = ctypes.CDLL(None, use_errno=True)


def supported() -> bool:
    """Whether this module has a filter for this machine's architecture."""
    return platform.machine() in _ARCH


def program(machine: str | None = None) -> list[tuple[int, int, int, int]]:
    """The filter for ``machine`` as (code, jt, jf, k) instructions."""
    machine = machine or platform.machine()
    audit_arch, clone, ioctl, clone3, foreign = _ARCH[machine]
    deny = _RET_ERRNO | errno.EPERM
    code: list[tuple[int, int, int, int]] = [
        (_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        (_JEQ_K, 1, 0, audit_arch),
        (_RET_K, 0, 0, _RET_KILL_PROCESS),
        (_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
    ]
    if foreign is not None:
        code += [(_JGE_K, 0, 1, foreign), (_RET_K, 0, 0, _RET_KILL_PROCESS)]
    for number in sorted(_DENIED[machine].values()):
        code += [(_JEQ_K, 0, 1, number), (_RET_K, 0, 0, deny)]
    code += [(_JEQ_K, 0, 1, clone3), (_RET_K, 0, 0, _RET_ERRNO | errno.ENOSYS)]
    # ioctl: refuse TIOCSTI / TIOCLINUX (args[1], low word at offset 24).
    code += [
        (_JEQ_K, 0, 5, ioctl),
        (_LD_W_ABS, 0, 0, 24),
        (_JEQ_K, 1, 0, _TIOCSTI),
        (_JEQ_K, 0, 1, _TIOCLINUX),
        (_RET_K, 0, 0, deny),
        (_RET_K, 0, 0, _RET_ALLOW),
    ]
    # clone: refuse the namespace flags (args[0], low word at offset 16).
    code += [
        (_JEQ_K, 0, 3, clone),
        (_LD_W_ABS, 0, 0, 16),
        (_JSET_K, 0, 1, _NAMESPACE_FLAGS),
        (_RET_K, 0, 0, deny),
        (_RET_K, 0, 0, _RET_ALLOW),
    ]
    return code


def compiled() -> _Program:
    """This machine's filter as the structure the kernel loads, built once.

    The fork server builds it before it forks, so that a runner only hands it
    to the kernel; the instructions are the same for every runner.

    Raises:
        SeccompError: no filter for this architecture.
    """
    if not supported():
        raise SeccompError(errno.EOPNOTSUPP, f"no seccomp filter for {platform.machine()}")
    return _build(platform.machine())[0]


@functools.cache
def _build(machine: str) -> tuple[_Program, ctypes.Array[_Instruction]]:
    code = program(machine)
    instructions = (_Instruction * len(code))(*(_Instruction(*i) for i in code))
    return _Program(len(code), instructions), instructions  # the array outlives the pointer


def install() -> int:
    """Install the filter on this process (``no_new_privs`` must be set first).

    Returns:
        The number of instructions.

    Raises:
        SeccompError: no filter for this architecture, or the kernel refused it.
    """
    prog = compiled()
    if _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        error = ctypes.get_errno()
        raise SeccompError(error, f"seccomp filter refused: {errno.errorcode.get(error, error)}")
    return int(prog.len)
