"""Find out which protections this kernel grants this user, by trying each in a child.

Static checks (``/proc/sys/user/max_user_namespaces``, the Landlock ABI) say
what the kernel was built with, not what a container's seccomp profile, an
AppArmor rule or a sysctl lets this user do; so each protection is tried for
real in a forked child that then exits. Run as ``python -m
plughost_runner.sandbox`` (the host does, once per process); it prints one JSON
object: ``{"offered": [...], "reasons": {name: why not}, "landlock_abi": n}``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable

from plughost_runner.sandbox import landlock, namespaces, seccomp, set_no_new_privs

__all__ = ["main", "probe"]


def probe() -> dict[str, object]:
    """Try every protection; return what is offered and why the rest is not."""
    offered: list[str] = []
    reasons: dict[str, str] = {}
    if not sys.platform.startswith("linux"):  # the numbers below are Linux system calls
        return {"offered": offered, "reasons": {"landlock": "Linux only"}, "landlock_abi": 0}
    abi = landlock.abi_version()
    trials: list[tuple[str, Callable[[], object]]] = [
        ("user_namespace", _user_namespace),
        ("network_namespace", lambda: namespaces.enter(network=True, pid=False)),
        ("pid_namespace", _pid_namespace),
        ("folder_overlay", _folder_overlay),
        ("no_new_privs", set_no_new_privs),
        ("seccomp", lambda: _confined(seccomp.install)),
        ("landlock", lambda: _confined(lambda: landlock.restrict([], []))),
    ]
    for name, trial in trials:
        problem = _in_child(trial)
        if problem:
            reasons[name] = problem
        else:
            offered.append(name)
    if "landlock" in offered:
        for name, needed in (("landlock_network", 4), ("landlock_scopes", 6)):
            if abi >= needed:
                offered.append(name)
            else:
                reasons[name] = f"needs Landlock ABI {needed}, this kernel has {abi}"
    return {"offered": offered, "reasons": reasons, "landlock_abi": abi}


def _user_namespace() -> None:
    namespaces.enter(network=False, pid=False)
    namespaces.hide_shared_directories([])


def _folder_overlay() -> None:
    base = tempfile.mkdtemp(prefix="plughost-probe-")
    folder, upper, work = (os.path.join(base, name) for name in ("folder", "upper", "work"))
    for path in (folder, upper, work):
        os.mkdir(path)
    try:
        namespaces.enter(network=False, pid=False)
        namespaces.overlay_folder(folder, upper, work)
        with open(os.path.join(folder, "written"), "w", encoding="utf-8"):
            pass
        if not os.path.exists(os.path.join(upper, "written")):
            raise OSError("a write to the overlay did not reach its upper directory")
    finally:
        namespaces.unmount(folder)
        for directory, subdirectories, _ in os.walk(base):
            for name in subdirectories:  # overlayfs leaves work/work with mode 000
                os.chmod(os.path.join(directory, name), 0o700)
        shutil.rmtree(base)


def _confined(trial: Callable[[], object]) -> None:
    set_no_new_privs()
    trial()


def _pid_namespace() -> None:
    namespaces.enter(network=False, pid=True)
    child = os.fork()
    if child == 0:
        try:
            namespaces.mount_proc()
        except OSError:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(child, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise OSError("cannot mount /proc in a new pid namespace")


def _in_child(trial: Callable[[], object]) -> str:
    """Run ``trial`` in a forked child; return '' if it worked, else the error."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            trial()
            message = b""
        except Exception as exc:  # every failure is an answer here
            message = str(exc).encode() or type(exc).__name__.encode()
        os.write(write, message)
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 4096):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode(errors="replace")


def main() -> int:
    """Print the probe's answer as JSON."""
    print(json.dumps(probe()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
