"""A sandboxed runner's namespaces and init made by the fork server in one ``clone``.

Real processes: a child cloned by :func:`plughost_runner.sandbox.clone.fork_into`,
and a real fork server asked over its socket for runners whose sandbox has a
pid namespace (the runner's own main replaced by a stand-in that reports where
it runs, so no host is needed).
"""

from __future__ import annotations

import errno
import json
import os
import select
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from typing import Any

import msgpack
import pytest

from plughost_runner.sandbox import SandboxPolicy, clone
from plughost_runner.sandbox.probe import probe

OFFERED = probe()


def needs_namespaces() -> None:
    if not clone.supported():
        pytest.skip("clone(2) is not known on this machine")
    for protection in ("user_namespace", "pid_namespace"):
        if protection not in OFFERED["offered"]:  # type: ignore[operator]
            reason = OFFERED["reasons"].get(protection, "")  # type: ignore[attr-defined]
            pytest.skip(f"this kernel does not grant {protection}: {reason}")


_CLONED = """
import json, os, sys, threading
from plughost_runner.sandbox import clone, namespaces
outside = os.readlink("/proc/self/ns/user"), os.readlink("/proc/self/ns/net")
ids = os.geteuid(), os.getegid()
pid = clone.fork_into(namespaces.clone_flags(network=True, pid=True))
if pid == 0:
    code = 1
    try:
        namespaces.settle(*ids)
        inside = os.readlink("/proc/self/ns/user"), os.readlink("/proc/self/ns/net")
        child = os.fork()  # what runs Python proper: the runner, forked by init
        if child == 0:
            ran = []
            thread = threading.Thread(target=lambda: ran.append(os.getpid()))
            thread.start()
            thread.join()
            os._exit(0 if ran == [2] and os.getppid() == 1 else 9)
        _, status = os.waitpid(child, 0)
        print(json.dumps({
            "pid": os.getpid(), "ids": [os.geteuid(), os.getegid()], "same": list(ids),
            "moved": [a != b for a, b in zip(inside, outside)],
            "grandchild": os.waitstatus_to_exitcode(status),
        }), flush=True)
        code = 7
    finally:
        os._exit(code)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_a_cloned_child_is_pid_1_of_new_namespaces_and_forks_a_runner_that_runs_threads() -> None:
    needs_namespaces()
    done = subprocess.run(
        [sys.executable, "-c", _CLONED], capture_output=True, text=True, timeout=60, check=False
    )

    assert done.returncode == 7, done.stderr
    seen = json.loads(done.stdout)
    assert seen["pid"] == 1
    assert seen["ids"] == seen["same"]  # its own uid and gid, mapped to themselves
    assert seen["moved"] == [True, True]  # a user and a network namespace of its own
    assert seen["grandchild"] == 0  # pid 2 under it, with a thread of its own


_THREADED = """
import os, threading
from plughost_runner.sandbox import clone, namespaces
release = threading.Event()
thread = threading.Thread(target=release.wait)
thread.start()
try:
    pid = clone.fork_into(namespaces.clone_flags(network=True, pid=True))
except OSError as exc:
    print(exc)
else:
    if pid == 0:
        os._exit(0)  # a child that runs no Python while another thread may hold a lock
    os.waitpid(pid, 0)
    print("cloned")
finally:
    release.set()
"""


def test_a_caller_with_a_second_thread_is_refused_the_clone_that_skips_the_after_fork_steps() -> (
    None
):
    # The kernel itself clones a threaded caller into new namespaces (unlike unshare),
    # and the child then runs Python with no after-fork step: a lock another thread
    # held stays held forever there.
    needs_namespaces()
    done = subprocess.run(
        [sys.executable, "-c", _THREADED], capture_output=True, text=True, timeout=60, check=True
    )

    assert done.stdout.strip().endswith("clone: the caller has 2 threads, not one"), done.stderr


# A fork server whose runners report where they run instead of serving a host.
_SERVER = """
import json, os, select, sys, time
import plughost_runner.forkserver as forkserver
from plughost_runner import __main__ as runner_main
def stand_in(argv):
    seen = {"pid": os.getpid(), "ppid": os.getppid(), "argv": argv}
    if "--apply" in os.environ.get("STAND_IN", ""):
        import plughost_runner.sandbox as sandbox
        args = runner_main.parser().parse_args(argv)
        seen["inside"] = sandbox.apply(sandbox.SandboxPolicy.from_json(args.sandbox), "",
                                       args.report_fd)
        seen.update(pid=os.getpid(), ppid=os.getppid(), ids=[os.geteuid(), os.getegid()])
        with open("/proc/self/uid_map") as uid_map:
            seen["uid_map"] = uid_map.read().split()
    if "--list-fds" in os.environ.get("STAND_IN", ""):  # before the sandbox: all it got
        seen["fds"] = [int(fd) for fd in os.listdir("/proc/self/fd") if os.path.exists(
            f"/proc/self/fd/{fd}")]  # less the listing's own
    if "--reach-init" in os.environ.get("STAND_IN", ""):
        seen["init"] = reach_init()
    print(json.dumps(seen), flush=True)
    if "--hold" in os.environ.get("STAND_IN", ""):  # until the credentials pipe is closed
        os.read(int(argv[argv.index("--credentials-fd") + 1]), 1)
    return 5
def reach_init():
    # What plugin code could do to its init once init waits for it (asleep, as itself).
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open("/proc/1/comm") as comm, open("/proc/1/stat") as stat:
            if comm.read().strip() == "plughost-init" and stat.read().split()[2] == "S":
                break
        select.select([], [], [], 0.01)
    report = open("/proc/1/cmdline").read().split("\\0")[1]  # native init: its report fd
    reached = {}
    for what, path in (("mem", "/proc/1/mem"), ("report", f"/proc/1/fd/{report}")):
        try:
            os.close(os.open(path, os.O_RDWR if what == "mem" else os.O_WRONLY))
            reached[what] = "opened"
        except OSError as exc:
            reached[what] = exc.strerror
    return reached
runner_main.main = stand_in
if sys.argv[2:] == ["--refuse-clone"]:
    def refused(flags):
        raise PermissionError(1, "clone: Operation not permitted")
    forkserver.clone.fork_into = refused
if sys.argv[2:] == ["--no-native-init"]:
    forkserver.plughost_runner.sandbox.pidns.NATIVE_INIT = "/nonexistent/plughost-init"
sys.exit(forkserver.main(["--control-fd", sys.argv[1], "--parent-pid", str(os.getppid())]))
"""


class _Server:
    """A real fork server over its socket; each request's stdout and stderr kept."""

    def __init__(self, *options: str) -> None:
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        command = [sys.executable, "-c", _SERVER, str(theirs.fileno()), *options]
        self.process = subprocess.Popen(command, pass_fds=[theirs.fileno()])
        theirs.close()
        self.control.settimeout(30)
        assert "ready" in self.receive()

    def receive(self) -> dict[str, Any]:
        reply: dict[str, Any] = msgpack.unpackb(self.control.recv(1 << 16))
        return reply

    def fork(
        self, policy: SandboxPolicy, stand_in: str = ""
    ) -> tuple[list[dict[str, Any]], str, str]:
        """Ask for a runner with ``policy``; its replies up to its exit, its stdout, its stderr.

        ``stand_in`` set to ``--apply``: the runner applies its sandbox before it reports.
        """
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        credentials, written = os.pipe()
        os.close(written)
        argv = ["--endpoint", "ipc:///nowhere", "--runner-id", "r", "--sandbox", policy.to_json()]
        packet = msgpack.packb({"id": 1, "argv": argv, "env": {"STAND_IN": stand_in}})
        socket.send_fds(self.control, [packet], [out_write, err_write, credentials])
        for fd in (out_write, err_write, credentials):
            os.close(fd)
        replies = [self.receive()]
        while "exit" not in replies[-1]:
            replies.append(self.receive())
        with os.fdopen(out_read) as out, os.fdopen(err_read) as err:
            return replies, out.read(), err.read()

    def close(self) -> None:
        self.process.kill()
        self.process.wait(timeout=30)
        self.control.close()


@pytest.fixture
def server() -> Any:
    made = _Server()
    try:
        yield made
    finally:
        made.close()


def test_the_fork_server_clones_a_sandboxed_runners_init_and_hears_the_runners_end(
    server: _Server,
) -> None:
    needs_namespaces()
    policy = SandboxPolicy(user_namespace=True, network_namespace=True, pid_namespace=True)

    replies, out, err = server.fork(policy)

    forked, named, ended = replies
    assert forked["forked"] == named["pid"]  # no process in between that handed init over
    assert ended == {"exit": named["pid"], "code": 5}  # the runner's own code, from init
    runner = json.loads(out)
    assert (runner["pid"], runner["ppid"]) == (2, 1), err
    assert "--report-fd" not in runner["argv"]  # init, not the runner, reports to the server


def test_a_runner_under_a_cloned_init_holds_only_its_streams_and_credentials(
    server: _Server,
) -> None:
    # Init forks it before closing anything it inherited from the fork server (the
    # control socket, other runners' report pipes, the server's pidfd): the runner
    # closes its own copies before any plugin code could use them.
    needs_namespaces()
    policy = SandboxPolicy(user_namespace=True, network_namespace=True, pid_namespace=True)

    replies, out, err = server.fork(policy, stand_in="--list-fds")

    runner = json.loads(out)
    credentials = int(runner["argv"][runner["argv"].index("--credentials-fd") + 1])
    assert sorted(runner["fds"]) == sorted([0, 1, 2, credentials]), err
    assert replies[0]["forked"] == replies[1]["pid"]  # under the init the server cloned


def test_a_runner_under_a_cloned_init_keeps_its_own_ids_in_its_sandbox(server: _Server) -> None:
    needs_namespaces()
    policy = SandboxPolicy(user_namespace=True, network_namespace=True, pid_namespace=True)

    replies, out, err = server.fork(policy, stand_in="--apply")

    runner = json.loads(out)
    assert runner["inside"] is True, err
    assert runner["ids"] == [os.geteuid(), os.getegid()]  # mapped to themselves, not nobody
    assert runner["uid_map"] == [str(os.geteuid()), str(os.geteuid()), "1"]
    assert replies[-1]["code"] == 5


def test_a_runner_whose_cloned_init_cannot_join_its_cgroup_ends_with_the_reason(
    server: _Server, tmp_path: Any
) -> None:
    needs_namespaces()
    missing = str(tmp_path / "no-such-cgroup" / "cgroup.procs")
    policy = SandboxPolicy(
        user_namespace=True, network_namespace=True, pid_namespace=True, cgroups=[missing]
    )

    replies, out, err = server.fork(policy)

    assert replies[-1]["code"] == 4
    assert out == ""  # no runner ran
    assert err.startswith("plughost runner:") and "cannot sandbox the runner" in err
    assert "no-such-cgroup" in err


@pytest.fixture
def one_process() -> Iterator[dict[str, Any]]:
    """Sandbox policy fields that leave a runner's init room for itself alone, not the runner."""
    if os.geteuid() != 0:
        yield {"processes": 1}  # RLIMIT_NPROC, counted in the runner's user namespace
        return
    for root in ("/sys/fs/cgroup/pids", "/sys/fs/cgroup"):  # cgroup v1, then v2
        group = os.path.join(root, f"plughost-test-{os.getpid()}")
        try:
            os.mkdir(group)
        except OSError:
            continue
        try:
            with open(os.path.join(group, "pids.max"), "w", encoding="utf-8") as limit:
                limit.write("1")
        except OSError:
            os.rmdir(group)
            continue
        try:
            yield {"cgroups": [os.path.join(group, "cgroup.procs")]}
        finally:
            os.rmdir(group)  # empty again: init and the server's other children are gone
        return
    pytest.skip("root without a pids cgroup it can make: no way to refuse init its fork")


def test_a_runner_whose_cloned_init_cannot_fork_it_ends_with_the_reason_on_its_stderr(
    server: _Server, one_process: dict[str, Any]
) -> None:
    needs_namespaces()
    policy = SandboxPolicy(
        user_namespace=True, network_namespace=True, pid_namespace=True, **one_process
    )

    replies, out, err = server.fork(policy)

    assert replies[0]["forked"] == replies[1]["pid"]  # cloned: the init the host knows
    assert replies[-1]["code"] == 4
    assert out == ""  # no runner ran
    assert err.startswith("plughost runner:")
    assert "cannot fork the runner under its pid-namespace init" in err
    assert os.strerror(errno.EAGAIN) in err


def test_a_runner_without_a_pid_namespace_is_forked_as_before(server: _Server) -> None:
    needs_namespaces()
    policy = SandboxPolicy(user_namespace=True, network_namespace=True)

    replies, out, _ = server.fork(policy)

    runner = json.loads(out)
    assert replies[-1] == {"exit": runner["pid"], "code": 5}  # the runner itself, pid outside
    assert runner["pid"] == replies[0]["forked"]
    assert "--report-fd" in runner["argv"]


def test_a_runner_cloned_into_other_namespaces_than_its_policy_names_refuses_to_start() -> None:
    needs_namespaces()
    code = textwrap.dedent(
        """
        import plughost_runner.sandbox as sandbox
        sandbox._cloned = sandbox._Cloned(network=False, ids=(0, 0))
        try:
            sandbox.apply(sandbox.SandboxPolicy(user_namespace=True, network_namespace=True,
                                                pid_namespace=True))
        except sandbox.SandboxError as exc:
            print(exc)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )

    assert "cloned into other namespaces" in done.stdout


def test_a_runner_whose_clone_the_kernel_refuses_is_forked_and_enters_its_namespaces_itself() -> (
    None
):
    needs_namespaces()
    refusing = _Server("--refuse-clone")
    policy = SandboxPolicy(user_namespace=True, network_namespace=True, pid_namespace=True)
    try:
        replies, out, err = refusing.fork(policy, stand_in="--apply")
    finally:
        refusing.close()

    runner = json.loads(out)
    assert runner["inside"] is True, err  # under an init its first child forked and handed over
    assert (runner["pid"], runner["ppid"]) == (2, 1)
    assert replies[0]["forked"] != replies[1]["pid"]  # the child in between, as before
    assert replies[-1] == {"exit": replies[1]["pid"], "code": 5}


def test_a_cloned_python_init_holds_none_of_the_servers_or_its_runners_descriptors() -> None:
    # Where the native init is missing, the cloned init stays a Python process. It forks
    # the runner before any other step, so it must close what it inherited itself.
    needs_namespaces()
    python_init = _Server("--no-native-init")
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    credentials, written = os.pipe()
    theirs = {f"pipe:[{os.fstat(fd).st_ino}]" for fd in (out_read, err_read, credentials)}
    policy = SandboxPolicy(user_namespace=True, network_namespace=True, pid_namespace=True)
    argv = ["--endpoint", "ipc:///nowhere", "--runner-id", "r", "--sandbox", policy.to_json()]
    packet = msgpack.packb({"id": 1, "argv": argv, "env": {"STAND_IN": "--hold"}})
    try:
        socket.send_fds(python_init.control, [packet], [out_write, err_write, credentials])
        for fd in (out_write, err_write, credentials):
            os.close(fd)
        python_init.receive()  # forked
        init = python_init.receive()["pid"]
        _wait_for_name(init, "plughost-init")  # named once it has closed what it inherited

        held = {os.readlink(f"/proc/{init}/fd/{fd}") for fd in os.listdir(f"/proc/{init}/fd")}
        assert not held & theirs, held  # the runner's streams and credentials
        assert not [link for link in held if link.startswith("socket:")], held  # the control
    finally:
        os.close(written)
        python_init.close()
        for fd in (out_read, err_read):
            os.close(fd)


def _wait_for_name(pid: int, name: str, timeout: float = 30.0) -> None:
    """Wait, under ``timeout``, until process ``pid`` has named itself ``name``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/comm", encoding="utf-8") as comm:
            if comm.read().strip() == name:
                return
        select.select([], [], [], 0.01)  # the next look at /proc, within the deadline
    raise AssertionError(f"process {pid} never named itself {name}")


@pytest.mark.parametrize("options", [(), ("--refuse-clone",)], ids=["cloned", "forked"])
def test_plugin_code_cannot_open_its_inits_memory_or_report_pipe_even_without_landlock(
    options: tuple[str, ...],
) -> None:
    # Exec makes a process dumpable; the native init makes itself non-dumpable again, or
    # code of the runner's own uid could write into it (no seccomp filter there) or forge
    # the runner's end. Landlock would refuse it too, so the policy leaves Landlock out.
    needs_namespaces()
    made = _Server(*options)
    policy = SandboxPolicy(
        user_namespace=True,
        network_namespace=True,
        pid_namespace=True,
        no_new_privs=True,
        seccomp="seccomp" in OFFERED["offered"],  # type: ignore[operator]
    )
    try:
        replies, out, err = made.fork(policy, stand_in="--apply --reach-init")
    finally:
        made.close()

    runner = json.loads(out)
    assert (runner["pid"], runner["ppid"]) == (2, 1), err
    assert runner["init"] == {"mem": "Permission denied", "report": "Permission denied"}
    assert replies[-1]["code"] == 5  # its own end, which nothing forged
