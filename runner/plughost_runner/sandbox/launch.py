"""``python -m plughost_runner.sandbox.launch``: run a program (an MCP server) sandboxed.

The host starts every stdio MCP server through this module::

    python -m plughost_runner.sandbox.launch --policy JSON --report-fd N -- COMMAND ARGS...

It confines itself as a runner is confined (:mod:`plughost_runner.sandbox`):
user, mount, IPC, network and pid namespaces (``/tmp`` and friends private,
``/proc`` showing only its own processes, init killing what is left when the
server ends and when the host dies), no capabilities, ``no_new_privs``,
Landlock (the paths of the policy only) and the seccomp filter; with network
grants, a Python server reaches them through the host's gate (its
``sitecustomize`` installs :mod:`.egress`), and anything that honours
``HTTP(S)_PROXY`` (curl, Node's ``fetch`` with ``NODE_USE_ENV_PROXY``)
through a proxy that the namespace's init serves on its own loopback. Then
it ``exec``\\ s the command, so the server is the process the host talks to,
with nothing of this module left.

Unlike a runner, which refuses to start with less protection than the host
planned (the host probed the kernel for it), a launch takes every protection
the kernel grants and writes the list on ``--report-fd`` as one JSON line
before the ``exec``: the host shows it and counts it, and
``mcp.sandbox.require`` makes a missing one fatal.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import sys
from collections.abc import Callable

from plughost_runner.sandbox import (
    DEVICES,
    SYSTEM_READ,
    SandboxPolicy,
    egress,
    egress_proxy,
    landlock,
    namespaces,
    pidns,
    seccomp,
    set_no_new_privs,
)

__all__ = ["main"]

SITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "site")
"""A ``sitecustomize`` that routes a Python server's network through the gate."""


def main(argv: list[str] | None = None) -> int:
    """Confine this process, report, and become COMMAND (only returns when that fails)."""
    parser = argparse.ArgumentParser(
        prog="python -m plughost_runner.sandbox.launch",
        usage="%(prog)s --policy JSON [--report-fd N] [--require P,...] -- COMMAND [ARGS...]",
        description="Run COMMAND inside plughost's sandbox. Started by the host, not by hand.",
    )
    parser.add_argument("--policy", required=True, help="the sandbox policy (JSON)")
    parser.add_argument("--report-fd", type=int, default=None, help="where to write the report")
    parser.add_argument("--require", default="", help="protections without which to refuse")
    given = sys.argv[1:] if argv is None else argv
    cut = given.index("--") if "--" in given else len(given)
    args = parser.parse_args(given[:cut])
    command = given[cut + 1 :]
    if not command:
        parser.error("no command to run after '--'")
    policy = SandboxPolicy.from_json(args.policy)
    active, missing, proxy = confine(policy)
    required = [p for p in args.require.split(",") if p]
    absent = [p for p in required if p not in active]
    _report(args.report_fd, active, missing)
    if absent:
        print(f"plughost sandbox: refusing to start without {', '.join(absent)}", file=sys.stderr)
        return 4
    if policy.egress:
        os.environ["PLUGHOST_EGRESS"] = policy.egress
        os.environ["PYTHONPATH"] = os.pathsep.join(
            filter(None, [SITE, os.environ.get("PYTHONPATH", "")])
        )
    if proxy:  # for everything but Python's own sockets: curl, Node's fetch, native clients
        os.environ["PLUGHOST_EGRESS_PROXY"] = proxy
        os.environ["NODE_USE_ENV_PROXY"] = "1"
        for name in egress_proxy.ENV:
            os.environ[name] = f"http://{proxy}"
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"plughost sandbox: cannot run {command[0]!r}: {exc}", file=sys.stderr)
        return 127


def confine(policy: SandboxPolicy) -> tuple[list[str], dict[str, str], str]:
    """Apply each protection the kernel grants.

    Returns:
        The protections active, why the rest are missing, and the ``HOST:PORT``
        of the egress proxy init serves on the namespace's loopback ("" for none).
    """
    active: list[str] = []
    missing: dict[str, str] = {}
    listener: socket.socket | None = None

    def attempt(name: str, step: Callable[[], object]) -> bool:
        try:
            step()
        except OSError as exc:
            missing[name] = str(exc)
            return False
        active.append(name)
        return True

    read = [*SYSTEM_READ, *policy.read]
    write = [*DEVICES, *policy.write]
    if policy.user_namespace and attempt(
        "user_namespace", lambda: namespaces.enter(network=True, pid=policy.pid_namespace)
    ):
        active.append("network_namespace")
        if policy.pid_namespace:
            if policy.egress:  # init serves it: the one process that outlives nothing it serves
                listener = _proxy_listener(missing)
            serve = _proxy_in_init(listener, policy.egress) if listener else None
            pidns.split(serve)  # returns in the server's process, pid 2 under a minimal init
            attempt("pid_namespace", namespaces.mount_proc)
        layers = [os.path.dirname(upper) for _, upper, _ in policy.overlays]
        keep = [*read, *write, *layers, *(v[0] for v in policy.overlays)]
        keep += [policy.egress] if policy.egress else []
        attempt("private_tmp", lambda: namespaces.hide_shared_directories(keep))
        if policy.overlays and attempt("cache_views", lambda: _views(policy.overlays)):
            write += [folder for folder, _, _ in policy.overlays]
    if policy.processes:
        _limit(resource.RLIMIT_NPROC, policy.processes)
    if policy.file_size:
        _limit(resource.RLIMIT_FSIZE, policy.file_size)
    proxy = ""
    if listener is not None:
        host, port = listener.getsockname()[:2]
        proxy = f"{host}:{port}"
        listener.close()  # init holds it; the server only connects
    connect = [int(proxy.rsplit(":", 1)[1])] if proxy else []
    if attempt("no_new_privs", _no_new_privs):
        if policy.landlock:
            attempt("landlock", lambda: landlock.restrict(read, write, connect_ports=connect))
        if policy.seccomp:
            attempt("seccomp", seccomp.install)
    return active, missing, proxy


def _proxy_listener(missing: dict[str, str]) -> socket.socket | None:
    try:
        namespaces.loopback_up()
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
    except OSError as exc:
        missing["egress_proxy"] = str(exc)
        return None
    return listener


def _proxy_in_init(listener: socket.socket, gate: str) -> Callable[[], object]:
    def serve() -> None:
        egress.set_gate(gate)
        egress_proxy.start(listener, egress.open_through_gate)

    return serve


def _views(overlays: list[list[str]]) -> None:
    for folder, upper, work in overlays:
        namespaces.overlay_folder(folder, upper, work)


def _no_new_privs() -> None:
    namespaces.drop_capabilities()
    set_no_new_privs()


def _limit(which: int, value: int) -> None:
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))


def _report(fd: int | None, active: list[str], missing: dict[str, str]) -> None:
    if fd is None:
        return
    try:
        os.write(fd, json.dumps({"active": active, "missing": missing}).encode() + b"\n")
    finally:
        os.close(fd)


if __name__ == "__main__":
    sys.exit(main())
