"""Linux namespaces for a runner: its own user, network, IPC, mount and pid namespaces.

:func:`enter` must run while the process has a single thread (the user
namespace refuses a threaded caller). The runner keeps its own uid inside its
user namespace (an identity map), so files and logs show the same owner; what
it loses is every capability outside that namespace. A new network namespace
has only a loopback interface, down: the host's ``127.0.0.1`` is out of reach.
A new pid namespace shows the runner only its own processes, and ``/proc``
is mounted again inside it so that the host's entries are gone too (Landlock
alone hides a process's ``environ`` and ``mem``, not its command line or status).
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from collections.abc import Iterable

__all__ = [
    "SHARED_DIRECTORIES",
    "NamespaceError",
    "clone_flags",
    "drop_capabilities",
    "enter",
    "hide_shared_directories",
    "loopback_up",
    "mount_proc",
    "note_outside",
    "overlay_folder",
    "settle",
    "unmount",
]

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER = 0x00020000, 0x08000000, 0x10000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_BIND, _MS_REC, _MS_PRIVATE = 2, 4, 8, 4096, 0x4000, 1 << 18
SHARED_DIRECTORIES = ("/tmp", "/var/tmp", "/run", "/var/run", "/dev/shm")
_PRIVATE_TMPFS_SIZE = "64m"
_PR_SET_DUMPABLE, _PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 4, 24, 47, 4
_CAPABILITY_VERSION_3 = 0x20080522
_LAST_CAPABILITY = 63

_libc = ctypes.CDLL(None, use_errno=True)
# Paths found outside every shared directory, once, before any runner was forked.
_outside: frozenset[str] = frozenset()


class NamespaceError(OSError):
    """A namespace could not be created or set up."""


def enter(*, network: bool, pid: bool) -> None:
    """Move this process into new user, mount and IPC namespaces (and network, pid).

    With ``pid``, only the children created afterwards live in the new pid
    namespace: the caller then forks (see :mod:`.pidns`).

    Raises:
        NamespaceError: the kernel refused (no user namespaces for this user, a threaded
            caller, a container's seccomp profile...).
    """
    uid, gid = os.geteuid(), os.getegid()
    _check(_libc.unshare(clone_flags(network=network, pid=pid)), "unshare")
    settle(uid, gid)


def clone_flags(*, network: bool, pid: bool) -> int:
    """The ``CLONE_NEW*`` flags of the namespaces :func:`enter` makes."""
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC
    flags |= CLONE_NEWNET if network else 0
    return flags | (CLONE_NEWPID if pid else 0)


def settle(uid: int, gid: int) -> None:
    """Keep ``uid`` and ``gid`` in this process's new user namespace; make its mounts private.

    The second half of :func:`enter`, for a runner forked by an init that was
    born in its namespaces (:mod:`.clone`): any process of a user namespace
    with its capabilities may write its maps, once. ``uid`` and ``gid`` are the
    ids outside, read before the namespace was made (inside, they read as the
    overflow id until mapped).

    Raises:
        NamespaceError: the kernel refused a map or the mount.
    """
    # A non-dumpable process cannot write its own maps: /proc/self then belongs to root.
    dumpable = _libc.prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
    _libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
    try:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    finally:
        _libc.prctl(_PR_SET_DUMPABLE, max(0, dumpable), 0, 0, 0)
    _check(_libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "mount --make-rprivate /")


def hide_shared_directories(keep: Iterable[str]) -> list[str]:
    """Cover ``/tmp``, ``/run``, ``/var/tmp``, ``/dev/shm`` with empty private tmpfs mounts.

    Those are where other programs leave their Unix sockets (Docker's, D-Bus,
    systemd's, X11's, the host's own runtime directory with every runner's
    socket) and shared memory; Landlock does not govern connecting to a socket
    by path, so the runner must not see them at all. Each path in ``keep`` that
    lies below a covered directory (a plugin folder in ``/tmp``, this runner's
    own socket, ``/etc/resolv.conf``'s target in ``/run``) is bound back in at
    the same place. Must run in a mount namespace of this process's own.
    A path :func:`note_outside` set aside is not looked at again.

    Returns:
        The directories now private to this runner.
    """
    below = _resolved_below([p for p in keep if p not in _outside], SHARED_DIRECTORIES)
    kept = sorted(below.items(), key=lambda item: len(item[0]))
    covered = []
    for directory in SHARED_DIRECTORIES:
        if os.path.isdir(directory) and not os.path.islink(directory):
            options = f"mode=1777,size={_PRIVATE_TMPFS_SIZE}".encode()
            flags = _MS_NOSUID | _MS_NODEV
            _check(_libc.mount(b"tmpfs", directory.encode(), b"tmpfs", flags, options), "tmpfs")
            covered.append(directory)
    try:
        for path, fd in kept:
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                os.makedirs(path, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
            source = f"/proc/self/fd/{fd}".encode()
            _check(_libc.mount(source, path.encode(), None, _MS_BIND | _MS_REC, None), "bind")
    finally:
        for _, fd in kept:
            os.close(fd)
    return covered


def note_outside(paths: Iterable[str]) -> None:
    """Set aside those of ``paths`` that lie outside every shared directory, resolved.

    The fork server calls it once for the paths every runner keeps (the system's
    and the interpreter's), so that :func:`hide_shared_directories` in each runner
    resolves only the few that are not set aside (a plugin's folders,
    ``/etc/resolv.conf`` where it links into ``/run``): one system call per
    path component, once, instead of three system calls per path in every
    runner. A path set aside that later comes to resolve below a shared
    directory (replaced by a link into ``/tmp``, say) is covered in the runners
    forked afterwards instead of bound back: they lose sight of it, never gain any.
    """
    global _outside
    prefixes = tuple(os.path.join(d, "") for d in SHARED_DIRECTORIES)
    _outside = frozenset(
        path
        for path in paths
        if not os.path.join(path, "").startswith(prefixes)
        and not os.path.join(os.path.realpath(path), "").startswith(prefixes)
    )


def _resolved_below(paths: Iterable[str], directories: Iterable[str]) -> dict[str, int]:
    """Each of ``paths`` that exists and resolves below one of ``directories``, opened.

    The kernel resolves each path (an ``O_PATH`` open, then its
    ``/proc/self/fd`` link): three system calls a path, where
    :func:`os.path.realpath` makes one per component. A path that is not
    there is left out.

    Returns:
        The resolved path -> an ``O_PATH`` descriptor of it (the caller closes them).
    """
    prefixes = tuple(os.path.join(d, "") for d in directories)
    found: dict[str, int] = {}
    for path in set(paths):
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            resolved = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            resolved = ""
        if resolved in found or not os.path.join(resolved, "").startswith(prefixes):
            os.close(fd)  # not below a covered directory (or unlinked, or already kept)
        else:
            found[resolved] = fd
    return found


def overlay_folder(folder: str, upper: str, work: str) -> None:
    """Mount a copy-on-write view of ``folder`` over itself, its changes kept in ``upper``.

    The plugin then writes its own folder as MaiBot lets it (a ``data/``
    directory made in ``on_load``, a config template copied in), while the
    folder the host reads manifests and code from, and watches for edits,
    never changes: every write lands in ``upper``, which the host keeps with
    the plugin's data, so it survives restarts and reloads. ``work`` is
    overlayfs's scratch directory, on the same filesystem as ``upper``, and
    belongs to this mount alone. Must run in a mount namespace of this process's own.

    Raises:
        NamespaceError: the kernel refused the mount (no overlayfs in user namespaces).
    """
    for path in (folder, upper, work):
        if any(c in path for c in ",:\\"):  # overlayfs's option separators
            raise NamespaceError(0, f"overlay: {path!r} has ',', ':' or '\\' in it")
    options = f"lowerdir={folder},upperdir={upper},workdir={work}".encode()
    flags = _MS_NOSUID | _MS_NODEV
    _check(_libc.mount(b"overlay", folder.encode(), b"overlay", flags, options), "overlay")


def loopback_up() -> None:
    """Bring up ``lo`` in this (new, empty) network namespace: the runner's own loopback.

    Nothing outside the namespace is on it; the runner's egress proxy listens
    there for programs that only know ``HTTP(S)_PROXY``. Needs the namespace's
    CAP_NET_ADMIN, so it runs before the capabilities are dropped.
    """
    import fcntl
    import socket
    import struct

    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as handle:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(handle, siocgifflags, request))[1]
        fcntl.ioctl(handle, siocsifflags, struct.pack("16sH14x", b"lo", flags | iff_up))


def unmount(path: str) -> None:
    """Detach whatever is mounted at ``path`` (nothing happens if nothing is)."""
    _libc.umount2(path.encode(), 2)  # MNT_DETACH


def mount_proc() -> None:
    """Mount a ``/proc`` that shows this pid namespace only (run as its first process)."""
    flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    _check(_libc.mount(b"proc", b"/proc", b"proc", flags, None), "mount /proc")


def drop_capabilities() -> None:
    """Give up every capability, now and across ``exec`` (the bounding and ambient sets)."""
    _libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    for capability in range(_LAST_CAPABILITY + 1):
        if _libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            break  # past the last capability this kernel knows
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(_libc.capset(header, data), "capset")


def _write(path: str, text: str) -> None:
    """Write ``text`` to a ``/proc`` control file in the one write(2) the kernel wants.

    No text file object: building one costs a forked child five times the write.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


_LIMIT_HINT = (
    "the machine's limit of namespaces is reached: see /proc/sys/user/max_user_namespaces "
    "and its max_pid_, max_net_ and max_mnt_ siblings; raise them with sysctl, or run "
    "fewer sandboxed runners (runner_grouping)"
)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        reason = os.strerror(code)
        if code == errno.ENOSPC and what == "unshare":  # not a full disk: the kernel's count
            reason = f"{reason} ({_LIMIT_HINT})"
        raise NamespaceError(code, f"{what}: {reason}")
