"""The fork server rehearses a runner's start once, leaves nothing behind, survives a failure."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import msgpack

# Runs the rehearsal in a fresh interpreter that has imported what the fork server
# imports, and reports what it changed and which plugins it loaded.
_REHEARSED = """
import json, os, signal, sys, threading
import plughost_runner.forkserver
from plughost_runner import __main__ as runner_main, rehearsal
from plughost_runner.maibot import imports as maibot_imports

def state():
    return {
        "threads": threading.active_count(),
        "fds": sorted(os.listdir("/proc/self/fd")),
        "modules": sorted(sys.modules),
        "path": list(sys.path),
        "maibot_packages": dict(maibot_imports._packages),
        "sigint": repr(signal.getsignal(signal.SIGINT)),
    }
loaded = []
load = rehearsal.load_plugin
async def noted(spec, bridge):
    outcome = await load(spec, bridge)
    loaded.append([spec.flavor, type(outcome).__name__])
    return outcome
rehearsal.load_plugin = noted
before = state()
rehearsal.rehearse(runner_main.read_command_line)
after = state()
print(json.dumps({
    "changed": {key: [before[key], after[key]] for key in before if before[key] != after[key]},
    "loaded": loaded,
    "nowhere": os.path.exists("/nonexistent"),
}))
"""


def _run() -> dict[str, object]:
    found = subprocess.run(
        [sys.executable, "-c", _REHEARSED],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    result: dict[str, object] = json.loads(found.stdout)
    return result


def test_the_rehearsal_loads_both_its_plugins_and_leaves_no_thread_descriptor_or_module() -> None:
    seen = _run()

    assert seen["loaded"] == [["plughost", "LoadedPlugin"], ["maibot", "LoadedPlugin"]]
    assert seen["changed"] == {}  # threads, descriptors, modules, sys.path, SIGINT: as before
    assert seen["nowhere"] is False  # the rehearsal plugins' data directories were never made


# The fork server, with a rehearsal that fails as a broken installation's would.
_BROKEN_REHEARSAL = """
import sys
import plughost_runner.forkserver as forkserver
def broken(read_command_line):
    raise forkserver.rehearsal.RehearsalError("the rehearsal plugin in /x failed: gone")
forkserver.rehearsal.rehearse = broken
sys.exit(forkserver.main(["--control-fd", sys.argv[1], "--parent-pid", sys.argv[2]]))
"""


def test_a_fork_server_whose_rehearsal_fails_says_so_and_still_forks_runners() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    command = [sys.executable, "-c", _BROKEN_REHEARSAL, str(theirs.fileno()), str(os.getpid())]
    server = subprocess.Popen(command, pass_fds=[theirs.fileno()], stderr=subprocess.PIPE)
    theirs.close()
    ours.settimeout(30)
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    credentials, written = os.pipe()
    try:
        assert "ready" in msgpack.unpackb(ours.recv(1 << 16))
        packet = msgpack.packb({"id": 1, "argv": ["--no-such-option"], "env": {}})
        socket.send_fds(ours, [packet], [out_write, err_write, credentials])
        replies = [msgpack.unpackb(ours.recv(1 << 16)) for _ in range(2)]
        assert [sorted(r) for r in replies] == [["forked", "id"], ["id", "pid"]]
    finally:
        server.kill()
        _, stderr = server.communicate(timeout=30)
        ours.close()
        for fd in (out_read, out_write, err_read, err_write, credentials, written):
            os.close(fd)
    assert b"no rehearsal, runners start cold: the rehearsal plugin in /x failed" in stderr
