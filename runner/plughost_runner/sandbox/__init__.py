"""The runner's sandbox, applied in the runner process before any plugin code runs.

The host decides what to apply (it has probed the kernel, see ``probe``) and
hands the runner a :class:`SandboxPolicy` as ``--sandbox '<json>'``; this
package only carries it out, in this order:

0. the cgroups the host made for it (on a root host: ``limits.processes``, and
   the meters of ``limits.memory_mb`` and ``limits.cpu_seconds``);
1. user, mount and IPC namespaces, plus a network namespace (no network at all,
   not even the host's loopback, nor its socket tables in ``/proc/net``) unless
   the runner reaches the host over TCP, plus a pid namespace (the runner
   under a minimal init, see
   :mod:`.pidns`) unless the operator turned it off; inside them
   ``/tmp``, ``/var/tmp``, ``/run`` and ``/dev/shm`` covered by empty private
   mounts (no other program's Unix socket in reach), each plugin folder
   covered by a copy-on-write view of itself whose writes land in the
   plugin's own data area (:func:`.namespaces.overlay_folder`), and
   ``RLIMIT_NPROC``; then ``RLIMIT_FSIZE`` (no file past the disk quota);
2. every capability dropped, ``no_new_privs`` set;
3. Landlock: the plugin folders read-only (writable through a copy-on-write
   view), the plugins' data and temp directories writable, the interpreter
   and system libraries read-only,
   nothing else (not the host's runtime directory, not other plugins, not the
   host's working directory); TCP ports only as the manifests ask; no signals
   to, and no ``/proc/<pid>/environ`` or ``mem`` of, any process outside;
4. a seccomp filter (:mod:`.seccomp`);
5. with network grants or a manifest's ports, name lookups and TCP connects
   (and, for a manifest's ``bind`` ports, TCP binds) routed through the
   host's gate (:mod:`.egress`), the runner's only way out of its namespace,
   and an HTTP proxy on the namespace's own loopback for native clients and
   subprocesses (:mod:`.egress_proxy`).

A step the host asked for that fails raises :class:`SandboxError`: the runner
then exits rather than run plugins with less protection than the host reports.

Lives here: the policy and :func:`apply`. Not here: deciding the policy (the
host's ``plughost.runners.sandbox``).
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import resource
import socket
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from plughost_runner.sandbox import clone, egress, landlock, namespaces, pidns, seccomp

__all__ = [
    "SandboxError",
    "SandboxPolicy",
    "apply",
    "clones",
    "enter_cloned",
    "interpreter_candidates",
    "interpreter_paths",
    "prepare",
    "set_no_new_privs",
]

_PR_SET_NO_NEW_PRIVS = 38
# Read-only system paths a Python program and its subprocesses need; /etc only in part.
SYSTEM_READ = (
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/proc",
    "/sys/devices/system/cpu", "/etc/ssl", "/etc/ca-certificates", "/etc/pki",
    "/etc/crypto-policies", "/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf",
    "/etc/host.conf", "/etc/gai.conf", "/etc/localtime", "/etc/timezone", "/etc/passwd",
    "/etc/group", "/etc/mime.types", "/etc/protocols", "/etc/services", "/etc/os-release",
    "/etc/ld.so.cache", "/etc/alternatives", "/etc/fonts", "/etc/gitconfig",
)  # fmt: skip
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
_libc = ctypes.CDLL(None, use_errno=True)
# Set in-process only (see enter_cloned), never from anything a runner is told.
_cloned: _Cloned | None = None


@dataclass(frozen=True, slots=True)
class _Cloned:
    """This runner's init was cloned into its namespaces by the fork server."""

    network: bool  # with a network namespace of its own
    ids: tuple[int, int]  # the uid and gid outside, which the runner maps to themselves


class SandboxError(OSError):
    """A protection the host asked for could not be applied."""


@dataclass(slots=True)
class SandboxPolicy:
    """What the host asks a runner to apply to itself (the ``--sandbox`` argument)."""

    user_namespace: bool = False
    network_namespace: bool = False
    pid_namespace: bool = False
    no_new_privs: bool = False
    seccomp: bool = False
    landlock: bool = False
    read: list[str] = field(default_factory=list)
    write: list[str] = field(default_factory=list)
    connect_ports: list[int] | None = None  # None: TCP unrestricted; []: none
    bind_ports: list[int] | None = None
    processes: int | None = None  # RLIMIT_NPROC inside the user namespace (not for root)
    cgroups: list[str] = field(default_factory=list)  # cgroup.procs files to join first
    # [folder, upper, work]: a plugin folder made writable copy-on-write (namespaces.overlay_folder)
    overlays: list[list[str]] = field(default_factory=list)
    file_size: int | None = None  # RLIMIT_FSIZE, bytes: no one file past the disk quota
    egress: str = ""  # the host's gate (a Unix socket) for the network the plugins were granted
    listen: bool = False  # a manifest asks for bind ports: TCP bind goes through the gate

    @classmethod
    def from_json(cls, text: str) -> SandboxPolicy:
        """Parse the ``--sandbox`` argument.

        Raises:
            ValueError: not a JSON object of known fields.
        """
        data: Any = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("the sandbox policy must be a JSON object")
        return cls(**data)

    def to_json(self) -> str:
        """The ``--sandbox`` argument for this policy."""
        return json.dumps(asdict(self), separators=(",", ":"))


def apply(policy: SandboxPolicy, socket_path: str = "", report_fd: int | None = None) -> bool:
    """Apply ``policy`` to this process; the caller must still have a single thread.

    With a pid namespace this forks (:mod:`.pidns`): the process that
    returns is the runner, pid 2 in the new namespace under a minimal init.
    Given the fork server's ``report_fd``, the original process hands init
    over to the fork server and exits, and the runner returns with that
    descriptor closed; otherwise it stays outside as a waiter that never
    returns (it exits as the runner does). ``socket_path`` is the runner's own
    ``ipc://`` socket, kept reachable when ``/tmp`` is covered.

    Returns:
        Whether this process now runs in a new pid namespace (its parent is
        then that namespace's init: ``os.getppid()`` is 1).

    Raises:
        SandboxError: a protection could not be applied.
    """
    inside = False
    read = [*SYSTEM_READ, *interpreter_paths(policy), *policy.read]
    write = [*DEVICES, *policy.write]
    proxy: socket.socket | None = None
    connect = policy.connect_ports
    cloned = _cloned
    if cloned is not None and not (
        policy.user_namespace
        and policy.pid_namespace
        and cloned.network == policy.network_namespace
    ):
        raise SandboxError(0, "cannot sandbox the runner: cloned into other namespaces")
    try:
        if cloned is None:
            _join(policy.cgroups)
        if policy.user_namespace:
            if cloned is not None:  # init joined the cgroups and capped the processes
                namespaces.settle(*cloned.ids)
            else:
                namespaces.enter(network=policy.network_namespace, pid=policy.pid_namespace)
                if policy.processes and os.geteuid() != 0:  # counted per user namespace
                    _limit_processes(policy.processes)
            if policy.pid_namespace:
                if cloned is None:
                    pidns.split(report_fd=report_fd)  # returns in the runner, pid 2 under init
                inside = True
                namespaces.mount_proc()
            # upper and work must stay on one mount: keep their common parent
            layers = [os.path.dirname(upper) for _, upper, _ in policy.overlays]
            sockets = [p for p in (socket_path, policy.egress) if p]
            namespaces.hide_shared_directories([*read, *write, *layers, *sockets])
            for folder, upper, work in policy.overlays:
                namespaces.overlay_folder(folder, upper, work)
            if policy.egress and policy.network_namespace:
                proxy = _proxy_listener()  # bound while binding is still allowed
                if connect is not None:
                    connect = [*connect, proxy.getsockname()[1]]
        if policy.file_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (policy.file_size, policy.file_size))
        if policy.no_new_privs:
            namespaces.drop_capabilities()
            set_no_new_privs()
        if policy.landlock:
            landlock.restrict(read, write, connect_ports=connect, bind_ports=policy.bind_ports)
        if policy.seccomp:
            seccomp.install()
    except OSError as exc:
        raise SandboxError(exc.errno, f"cannot sandbox the runner: {exc}") from exc
    if policy.egress:
        egress.install(policy.egress, proxy, listen=policy.listen)
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile.tempdir = None  # type: ignore[attr-defined]  # TMPDIR: the plugin's temp dir
    return inside


def clones(policy: SandboxPolicy) -> bool:
    """Whether the fork server makes this runner's namespaces and init (:func:`enter_cloned`)."""
    return policy.user_namespace and policy.pid_namespace and clone.supported()


def enter_cloned(policy: SandboxPolicy, ids: tuple[int, int], report_fd: int, server: int) -> None:
    """In pid 1 of namespaces the fork server cloned: join the cgroups, fork the runner.

    The steps :func:`apply` takes up to its pid namespace's split, done by the
    init the fork server made with :func:`.clone.fork_into` (the flags of
    :func:`.namespaces.clone_flags`): join the runner's cgroups, cap its
    processes, then :func:`.pidns.split_cloned`. Init makes no system call
    through ctypes (each child's first one copies many pages): the runner,
    which makes such calls anyway, maps ``ids`` (uid, gid outside) to
    themselves in the user namespace they share and makes the mounts private
    (:func:`.namespaces.settle`, in :func:`apply`). Returns only in the runner
    (pid 2), where :func:`apply` then takes the remaining steps; init never returns.

    Raises:
        SandboxError: a step failed (in init, before the runner exists, or its fork).
    """
    global _cloned
    try:
        _join(policy.cgroups)
        if policy.processes and ids[0] != 0:  # counted per user namespace
            _limit_processes(policy.processes)
    except OSError as exc:
        raise SandboxError(exc.errno, f"cannot sandbox the runner: {exc}") from exc
    try:
        pidns.split_cloned(report_fd, server)
    except OSError as exc:  # a process limit reached, say: the runner was never forked
        why = f"cannot fork the runner under its pid-namespace init: {exc.strerror}"
        raise SandboxError(exc.errno, why) from exc
    _cloned = _Cloned(policy.network_namespace, ids)


def _join(cgroups: list[str]) -> None:
    for procs in cgroups:  # before anything forks: every child is born inside
        with open(procs, "w", encoding="utf-8") as handle:
            handle.write("0")


def _proxy_listener() -> socket.socket:
    """A listening socket on the namespace's own loopback, for :mod:`.egress_proxy`."""
    namespaces.loopback_up()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    return listener


def interpreter_paths(policy: SandboxPolicy) -> list[str]:
    """The directories this interpreter imports from, less any that would expose too much.

    A ``sys.path`` entry that contains a plugin folder or a data directory (a
    project root on ``PYTHONPATH``, say) is left out, since allowing it would
    allow every neighbour below it, and so is the working directory the runner
    inherited from the host. The host sends resolved paths, so this compares
    strings only: no file system call on the way to a runner's start.
    """
    guarded = [os.path.join(p, "") for p in (*policy.read, *policy.write)]
    return [
        path
        for path in interpreter_candidates()
        if not any(g.startswith(os.path.join(path, "")) for g in guarded)
    ]


@functools.cache
def interpreter_candidates() -> tuple[str, ...]:
    """Where this interpreter and the runner import from (resolved; computed once).

    The fork server calls this before it forks, so that forked runners find it done.
    """
    import plughost_sdk

    candidates = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
        str(Path(plughost_sdk.__file__).resolve().parent),
        str(Path(__file__).resolve().parents[1]),
        *(entry for entry in sys.path if entry),
    }
    try:
        cwd = os.path.realpath(os.getcwd())
    except FileNotFoundError:  # gone: nothing relative resolves, and nothing is in it
        cwd = "/"
        candidates = {c for c in candidates if os.path.isabs(c)}
    resolved = {os.path.realpath(c) for c in candidates} - {cwd, "/"}
    return tuple(sorted(p for p in resolved if os.path.isdir(p) or os.path.isfile(p)))


def prepare() -> None:
    """Do once, before forking runners, the work each runner's :func:`apply` would repeat.

    The fork server calls it: the interpreter's paths are resolved, the paths
    every runner keeps that lie outside the shared directories are set aside
    (:func:`.namespaces.note_outside`) and the seccomp filter is built, so a
    forked runner only hands them to the kernel.
    """
    namespaces.note_outside([*SYSTEM_READ, *DEVICES, *interpreter_candidates()])
    if seccomp.supported():
        seccomp.compiled()


def _limit_processes(count: int) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    if hard != resource.RLIM_INFINITY:
        count = min(count, hard)
    resource.setrlimit(resource.RLIMIT_NPROC, (count, count))


def set_no_new_privs() -> None:
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"no_new_privs: {os.strerror(code)}")
