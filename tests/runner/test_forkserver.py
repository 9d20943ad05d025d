"""The fork server imports, before it forks, what runners would otherwise each import."""

from __future__ import annotations

import asyncio
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
from pathlib import Path

import msgpack

from tests.waiting import wait_until


def test_the_fork_server_imports_the_maibot_layer_before_it_forks() -> None:
    # Imported once there, its pages are shared by every forked runner instead of
    # copied into each runner that loads a MaiBot plugin.
    code = (
        "import sys, plughost_runner.forkserver\n"
        "print(sorted(m for m in ('plughost_sdk.maibot.plugin', 'plughost_runner.maibot.loader',"
        " 'tomlkit') if m in sys.modules))"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )

    expected = ["plughost_runner.maibot.loader", "plughost_sdk.maibot.plugin", "tomlkit"]
    assert found.stdout.strip() == str(expected)


# Runs the fork server with its first child held before it leads its own session.
_HELD_FIRST_CHILD = """
import os, sys
import plughost_runner.forkserver as forkserver
gate, fork, setsid, forks = int(sys.argv[2]), os.fork, os.setsid, []
def held_fork():
    forks.append(1)
    pid = fork()
    if pid == 0 and len(forks) == 1:
        os.setsid = lambda: (os.read(gate, 1), setsid())[1]
    return pid
os.fork = held_fork
sys.exit(forkserver.main(["--control-fd", sys.argv[1], "--parent-pid", str(os.getppid())]))
"""


def _request(control: socket.socket, request_id: int) -> None:
    """Ask for a runner that exits at once (an unknown option)."""
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    credentials, written = os.pipe()
    os.close(written)
    packet = msgpack.packb({"id": request_id, "argv": ["--no-such-option"], "env": {}})
    socket.send_fds(control, [packet], [out_write, err_write, credentials])
    for fd in (out_read, out_write, err_read, err_write, credentials):
        os.close(fd)


def test_the_fork_server_forks_the_next_runner_while_one_is_not_yet_in_its_session() -> None:
    # A child not yet scheduled (a busy machine) must not hold up every runner behind it.
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    gate_read, gate_write = os.pipe()
    command = [sys.executable, "-c", _HELD_FIRST_CHILD, str(theirs.fileno()), str(gate_read)]
    server = subprocess.Popen(command, pass_fds=[theirs.fileno(), gate_read])
    theirs.close()
    os.close(gate_read)
    ours.settimeout(30)
    try:
        assert "ready" in msgpack.unpackb(ours.recv(1 << 16))
        _request(ours, 1)
        _request(ours, 2)

        first = msgpack.unpackb(ours.recv(1 << 16))
        assert first["id"] == 2 and "forked" in first
        os.write(gate_write, b"go")
        replies = [msgpack.unpackb(ours.recv(1 << 16)) for _ in range(2)]
        held = [r for r in replies if r.get("id") == 1]
        while len(held) < 2:  # the other runner's own replies and exit come in between
            reply = msgpack.unpackb(ours.recv(1 << 16))
            held += [reply] if reply.get("id") == 1 else []
        assert "forked" in held[0] and "pid" in held[1]
    finally:
        server.kill()
        server.wait(timeout=30)
        ours.close()
        os.close(gate_write)


_ENVIRONMENT_REPLACED = """
import ctypes, json, os
from plughost_runner import forkserver
os.environ["ONLY_THE_SERVERS"] = "1"
os.environ["CHANGED"] = "server"
os.environ["KEPT"] = "same"
forkserver._replace_environment({"KEPT": "same", "CHANGED": "runner", "NEW": "runner"})
native = ctypes.POINTER(ctypes.c_char_p).in_dll(ctypes.CDLL(None), "environ")
entries = []
while native[len(entries)] is not None:
    entries.append(native[len(entries)].decode())
print(json.dumps({"python": dict(os.environ), "native": dict(e.split("=", 1) for e in entries)}))
"""


def test_a_forked_runners_environment_is_exactly_the_one_requested_in_python_and_in_c() -> None:
    # What a plugin's subprocess inherits is the C library's environment, not os.environ.
    found = subprocess.run(
        [sys.executable, "-c", _ENVIRONMENT_REPLACED],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
    )
    seen = json.loads(found.stdout)

    expected = {"KEPT": "same", "CHANGED": "runner", "NEW": "runner"}
    assert seen["python"] == expected
    assert seen["native"] == expected


# As _HELD_FIRST_CHILD, and the held child notes the pipes it holds as it starts (the
# fork server's ends of its pipes among them); each runner lists its own instead of running.
_HELD_AND_LISTED = """
import json, os, sys
import plughost_runner.forkserver as forkserver
from plughost_runner import __main__ as runner_main
gate, noted, fork, setsid, forks = int(sys.argv[2]), sys.argv[3], os.fork, os.setsid, []
def pipes():
    links = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            links.add(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # the listing's own descriptor, closed by now
            pass
    return sorted(link for link in links if link.startswith("pipe:"))
gate_pipe = os.readlink(f"/proc/self/fd/{gate}")
def held_fork():
    forks.append(1)
    pid = fork()
    if pid == 0 and len(forks) == 1:
        with open(noted + ".part", "w") as out:
            json.dump([p for p in pipes() if p != gate_pipe], out)
        os.replace(noted + ".part", noted)  # whole, or not there yet
        os.setsid = lambda: (os.read(gate, 1), setsid())[1]
    return pid
def listing(argv):
    print(json.dumps(pipes()), flush=True)
    return 0
os.fork = held_fork
runner_main.main = listing
sys.exit(forkserver.main(["--control-fd", sys.argv[1], "--parent-pid", str(os.getppid())]))
"""


def test_a_runner_forked_while_another_is_not_yet_in_its_session_holds_none_of_its_pipes(
    tmp_path: Path,
) -> None:
    # The fork server keeps, per child not yet settled, the read ends of its session and
    # report pipes; a runner forked meanwhile must not be able to read (or hold open) them.
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    gate_read, gate_write = os.pipe()
    noted = tmp_path / "first.json"
    command = [
        *(sys.executable, "-c", _HELD_AND_LISTED),
        *(str(theirs.fileno()), str(gate_read), str(noted)),
    ]
    server = subprocess.Popen(command, pass_fds=[theirs.fileno(), gate_read])
    theirs.close()
    os.close(gate_read)
    ours.settimeout(30)
    out_read, out_write = os.pipe()
    try:
        assert "ready" in msgpack.unpackb(ours.recv(1 << 16))
        _request(ours, 1)
        credentials, written = os.pipe()
        os.close(written)
        packet = msgpack.packb({"id": 2, "argv": [], "env": {}})
        socket.send_fds(ours, [packet], [out_write, out_write, credentials])
        os.close(out_write)
        os.close(credentials)
        reply = msgpack.unpackb(ours.recv(1 << 16))
        assert reply["id"] == 2, reply
        with os.fdopen(out_read, closefd=False) as listed:
            second = set(json.loads(listed.readline()))
        # The held child writes its listing on its own time, after the server answered.
        asyncio.run(wait_until(noted.exists, timeout=30, what="the held child's listing"))
        first = set(json.loads(noted.read_text()))
    finally:
        server.kill()
        server.wait(timeout=30)
        ours.close()
        os.close(gate_write)
        os.close(out_read)

    assert first  # the held child's own pipes, the server's ends included
    assert second  # the runner's own: its report pipe, its output
    assert first & second == set()


def test_a_fork_settled_by_its_reaped_exit_ignores_a_stale_report_event() -> None:
    # One select() can return a child's exit (reaped and settled at once) and then its
    # report pipe's own readiness: the second must be ignored, not crash the server.
    from plughost_runner import forkserver

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    previous_wakeup = signal.set_wakeup_fd(-1)
    previous_child = signal.getsignal(signal.SIGCHLD)
    previous_term = signal.getsignal(signal.SIGTERM)
    try:
        server = forkserver._Server(theirs)
        report, reporting = os.pipe()
        os.write(reporting, forkserver._RECORD.pack(4242))
        os.close(reporting)
        fork = forkserver._Fork(request_id=7, child=4242, report=report, session=None)
        server._unsettled[fork.child] = fork
        server._selector.register(report, selectors.EVENT_READ, fork)

        server._settle(fork, exited=True)
        server._settle(fork)  # the stale event of the same batch

        ours.settimeout(5)
        assert msgpack.unpackb(ours.recv(1 << 16)) == {"id": 7, "pid": 4242}
        ours.setblocking(False)
        try:
            extra = ours.recv(1 << 16)
        except BlockingIOError:
            extra = b""
        assert extra == b"", f"a second reply for one fork: {msgpack.unpackb(extra)}"
        assert fork.child not in server._unsettled
    finally:
        signal.set_wakeup_fd(previous_wakeup)
        signal.signal(signal.SIGCHLD, previous_child)
        signal.signal(signal.SIGTERM, previous_term)
        ours.close()
        theirs.close()
