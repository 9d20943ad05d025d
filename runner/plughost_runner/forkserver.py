"""A fork server: one process that has imported the runner and forks new runners on demand.

Starting a runner as a fresh interpreter costs about 150 ms of CPU (Python,
asyncio, pyzmq, pydantic), paid again at every restart and every reload, and
paid on the same cores as the healthy plugins' calls. This process pays it
once: it imports everything a runner needs, rehearses the pure parts of a
runner's start so that each runner finds that code warm
(:mod:`plughost_runner.rehearsal`), keeps no thread, socket or event loop, and
then forks a runner per request, which starts serving in a few milliseconds
and shares the imported pages with its siblings.

Protocol, over a ``SOCK_SEQPACKET`` socketpair (``--control-fd``), one msgpack
map per packet:

- host -> server: ``{"id", "argv", "env"}`` with three file descriptors attached
  (SCM_RIGHTS): the write ends of the new runner's stdout and stderr pipes, and the
  read end of its credentials pipe, which the server never reads (so no runner's
  token is ever in the server's memory, to be inherited by the next runner);
- server -> host: ``{"ready": pid}`` once (plus ``"init_missing": path`` where
  the native pid-namespace init was not built, see
  :mod:`plughost_runner.sandbox.pidns`), then per fork ``{"id", "forked": pid}``
  as soon as the child leads its own session (or ``{"id", "error"}``), ``{"id",
  "pid"}`` once the child has said which process is the runner to know, and
  ``{"exit": pid, "code": n}`` when that runner ends (``n`` negative for a
  signal, as in :mod:`subprocess`).

Which process is the runner to know: the child says so on a pipe of its own
(``--report-fd``) before any plugin code runs. A runner in a pid namespace
names the namespace's init, which this server adopts (it is a child
subreaper) when the child that forked it exits, and which reports the
runner's wait status on that pipe before it ends (see
:mod:`plughost_runner.sandbox.pidns`): no process waits outside the
namespace. Where the runner's sandbox has user and pid namespaces, this server
makes that init itself, cloned straight into them
(:mod:`plughost_runner.sandbox.clone`): no child in between is forked only to
exit, and init names itself (``{"id", "forked"}`` and ``{"id", "pid"}`` then
carry the same pid). Any other runner names itself.

The server dies with the host (``PR_SET_PDEATHSIG``) and its runners die with it.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import os
import selectors
import signal
import socket
import struct
import sys
import traceback
import urllib.request  # noqa: F401  (the proxy hides itself from its getproxies: see egress)
from dataclasses import dataclass
from typing import Any

import msgpack

import plughost_runner.maibot.loader  # the MaiBot layer and tomlkit: ~5 MiB a runner, shared

# Imported here, before any fork, so that every runner finds them loaded.
import plughost_runner.process.capture
import plughost_runner.sandbox
import plughost_runner.sandbox.egress_proxy  # with urllib: 1.6 MiB less a networked runner
import plughost_runner.service
from plughost_runner import __main__ as runner_main
from plughost_runner import rehearsal
from plughost_runner.process.credentials import make_undumpable
from plughost_runner.sandbox import SandboxError, SandboxPolicy, clone, namespaces
from plughost_runner.sandbox.pidns import AS_INIT

__all__ = ["main"]

_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15
_PR_SET_CHILD_SUBREAPER = 36
_MAX_PACKET = 1 << 20
_RECORD = struct.Struct("=i")  # on a report pipe: the pid to know, then (init) a wait status
# Made once, here: a handle made in each forked child costs it a third of a millisecond.
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def main(argv: list[str] | None = None) -> int:
    """Serve fork requests until the host closes the control socket or dies."""
    parser = argparse.ArgumentParser(
        prog="python -m plughost_runner.forkserver",
        description="plughost fork server: starts runners for a host. Started by the host.",
    )
    parser.add_argument("--control-fd", type=int, required=True, help="the host's socket")
    parser.add_argument("--parent-pid", type=int, required=True, help="exit when it dies")
    args = parser.parse_args(argv)
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        _libc.prctl(_PR_SET_NAME, b"plughost-forks", 0, 0, 0)  # ps -o comm, top
        _libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # pid-namespace inits come to us
    if os.getppid() != args.parent_pid:
        return 70
    make_undumpable()  # and so are its runners until they exec
    control = socket.socket(fileno=args.control_fd)
    return _Server(control).serve()


@dataclass(slots=True)
class _Fork:
    """A child forked for a request that has not yet named the runner to know."""

    request_id: Any
    child: int
    report: int  # the read end of its report pipe
    session: int | None  # the read end of its in-session pipe, until it leads its session


class _Server:
    def __init__(self, control: socket.socket) -> None:
        self._control = control
        self._pid = os.getpid()
        self._children: set[int] = set()  # the runners the host knows, until they exit
        self._unsettled: dict[int, _Fork] = {}
        self._statuses: dict[int, int] = {}  # an adopted init -> its report pipe
        self._selector = selectors.DefaultSelector()
        self._ids = (os.geteuid(), os.getegid())
        # Init of a namespace cloned here watches us through it (it cannot see our pid).
        self._pidfd: int | None = None
        with contextlib.suppress(AttributeError, OSError):  # before Linux 5.3: no clone
            self._pidfd = os.pidfd_open(self._pid)
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_write, False)
        signal.set_wakeup_fd(self._wake_write)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # the wakeup fd does the work
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def serve(self) -> int:
        plughost_runner.sandbox.prepare()  # once here, not in every runner
        try:
            rehearsal.rehearse(runner_main.read_command_line)  # warm what a runner runs at start
        except Exception as exc:  # a broken install: runners still start, each one cold
            print(f"plughost fork server: no rehearsal, runners start cold: {exc}", file=sys.stderr)
        # Move everything imported so far out of the collector's sight: a collection in a
        # runner would otherwise write to (and so copy) every page it shares with us.
        gc.freeze()
        hello: dict[str, Any] = {"ready": os.getpid()}
        if plughost_runner.sandbox.pidns.native_init() is None:
            hello["init_missing"] = plughost_runner.sandbox.pidns.NATIVE_INIT
        self._send(hello)
        self._selector.register(self._control, selectors.EVENT_READ, "control")
        self._selector.register(self._wake_read, selectors.EVENT_READ, "child")
        while True:
            for key, _ in self._selector.select():
                if isinstance(key.data, _Fork):
                    if key.fd == key.data.session:
                        self._led(key.data)
                    else:
                        self._settle(key.data)
                elif key.data == "child":
                    with contextlib.suppress(BlockingIOError):
                        os.read(self._wake_read, 4096)
                    self._reap()
                elif not self._receive():
                    return 0  # the host is gone or done with us

    def _receive(self) -> bool:
        try:
            data, fds, _, _ = socket.recv_fds(self._control, _MAX_PACKET, 3)
        except OSError:
            return False
        if not data:
            return False  # the host closed its end
        try:
            request = msgpack.unpackb(data)
            if not isinstance(request, dict):
                raise TypeError(f"expected a map, got {type(request).__name__}")
        except (ValueError, TypeError, msgpack.UnpackException) as exc:
            self._send({"error": f"unreadable request: {exc}"})
            for fd in fds:
                os.close(fd)
            return True
        self._fork(request, list(fds))
        return True

    def _fork(self, request: dict[str, Any], pipes: list[int]) -> None:
        if len(pipes) != 3:
            self._send({"id": request.get("id"), "error": "expected three descriptors"})
            for fd in pipes:
                os.close(fd)
            return
        # The first reply waits until the child leads its own session: the host may signal
        # the runner's process group the moment it hears the pid. The server does not wait
        # for it, though: it serves the next request while this child is not yet scheduled.
        in_session, leads = os.pipe()
        report, reporting = os.pipe()
        cloned = self._cloned_policy(request)
        try:
            pid = self._clone(cloned) if cloned is not None else None
            if pid is None:
                cloned = None
                pid = os.fork()
        except OSError as exc:
            self._send({"id": request.get("id"), "error": str(exc)})
            for fd in (*pipes, in_session, leads, report, reporting):
                os.close(fd)
            return
        if pid == 0:
            os.setsid()
            os.close(leads)
            os.close(in_session)
            os.close(report)
            os._exit(self._become_runner(request, [*pipes, reporting], cloned))
        for fd in (leads, reporting, *pipes):
            os.close(fd)
        os.set_blocking(report, False)
        fork = _Fork(request.get("id"), pid, report, in_session)
        self._unsettled[pid] = fork
        # end-of-file once the child has closed its end, after setsid (or it has exited)
        self._selector.register(in_session, selectors.EVENT_READ, fork)

    def _led(self, fork: _Fork) -> None:
        """The child leads its own session (or has exited): say it is forked, await its report."""
        if fork.session is None:
            return
        self._selector.unregister(fork.session)
        os.close(fork.session)
        fork.session = None
        self._selector.register(fork.report, selectors.EVENT_READ, fork)
        self._send({"id": fork.request_id, "forked": fork.child})

    def _settle(self, fork: _Fork, *, exited: bool = False) -> None:
        """Read which pid the child named (itself, or its namespace's init); tell the host."""
        if self._unsettled.get(fork.child) is not fork:
            # Settled already, by its exit reaped earlier in the same batch of events: its
            # report pipe is closed, and its number may now be another child's.
            return
        self._led(fork)  # an exit can be reaped before its end-of-file on the session pipe is read
        try:
            data = os.read(fork.report, _RECORD.size)
        except BlockingIOError:
            if not exited:
                return  # woken early: nothing to read yet
            data = b""
        except OSError:
            data = b""
        self._selector.unregister(fork.report)
        del self._unsettled[fork.child]
        # A child that ended without naming one was the runner: its exit is the runner's.
        pid = _RECORD.unpack(data)[0] if len(data) == _RECORD.size else fork.child
        if pid == AS_INIT:  # the init cloned here, which cannot see its own pid out here
            self._statuses[fork.child] = fork.report
            pid = fork.child
        elif pid == fork.child:
            os.close(fork.report)
        else:
            self._statuses[pid] = fork.report  # init writes the runner's wait status there
        self._children.add(pid)
        self._send({"id": fork.request_id, "pid": pid})

    def _clone(self, policy: SandboxPolicy) -> int | None:
        """Clone a runner's init straight into its namespaces; None where the kernel refuses.

        Refused (a container's seccomp profile, say), the child is forked as any
        other and enters its namespaces itself: it says why it cannot, if it cannot.
        """
        flags = namespaces.clone_flags(network=policy.network_namespace, pid=True)
        try:
            return clone.fork_into(flags)
        except OSError:
            return None

    def _cloned_policy(self, request: dict[str, Any]) -> SandboxPolicy | None:
        """The sandbox policy of a runner whose namespaces and init this server clones, if so."""
        argv = request.get("argv")
        if self._pidfd is None or not isinstance(argv, list) or "--sandbox" not in argv[:-1]:
            return None
        try:
            policy = SandboxPolicy.from_json(str(argv[argv.index("--sandbox") + 1]))
        except (ValueError, TypeError):
            return None  # the runner says why, and exits
        return policy if plughost_runner.sandbox.clones(policy) else None

    def _become_runner(
        self,
        request: dict[str, Any],
        pipes: list[int],
        cloned: SandboxPolicy | None = None,
    ) -> int:
        """In the child: a new session, the runner's streams and environment, then its main.

        A ``cloned`` child is its pid namespace's init: it forks the runner first
        (which carries on here) and becomes the native init (:meth:`_fork_runner`).
        """
        try:
            if cloned is not None and self._pidfd is not None:
                self._fork_runner(cloned, pipes, self._pidfd)  # returns in the runner only
            if _libc is not None and cloned is None:
                # Until the runner binds itself to its parent: a child that forks a pid
                # namespace's init must not outlive us, or that init would watch another.
                # (A cloned init watches us through a pidfd, and makes no ctypes call.)
                _libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
                _libc.prctl(_PR_SET_NAME, b"plughost-runner", 0, 0, 0)  # `ps -o comm`, top
            if cloned is None and os.getppid() != self._pid:
                return 70  # we died while it started
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            others = [f.report for f in self._unsettled.values()] + [*self._statuses.values()]
            others += [f.session for f in self._unsettled.values() if f.session is not None]
            if cloned is None and self._pidfd is not None:
                others.append(self._pidfd)
            for fd in (self._wake_read, self._wake_write, *others):
                os.close(fd)  # no runner may read, or forge, another runner's report
            self._selector.close()
            self._control.close()
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.dup2(pipes[0], 1)
            os.dup2(pipes[1], 2)
            for fd in (devnull, pipes[0], pipes[1]):
                os.close(fd)
            _replace_environment({str(k): str(v) for k, v in request["env"].items()})
            argv = [*(str(a) for a in request["argv"]), "--credentials-fd", str(pipes[2])]
            if cloned is not None and self._pidfd is not None:
                if _libc is not None:
                    _libc.prctl(_PR_SET_NAME, b"plughost-runner", 0, 0, 0)
                return runner_main.main([*argv, "--parent-pid", "1"])  # pid 2, under init
            # The runner's parent is this server, which itself dies with the host.
            argv += ["--parent-pid", str(os.getppid()), "--report-fd", str(pipes[3])]
            return runner_main.main(argv)
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # anything else: say so on the runner's stderr and exit
            traceback.print_exc()
            return 1

    def _fork_runner(self, policy: SandboxPolicy, pipes: list[int], server: int) -> None:
        """In a cloned init: fork the runner before any other step; return only in the runner.

        Every page init writes before it forks is copied twice, once for init and
        again for the runner, which would then take the same steps itself: so init
        takes none of :meth:`_become_runner`'s. What it inherited from this server
        goes with its exec of the native init, which closes every descriptor but
        its own two (:mod:`.sandbox.pidns`).
        """
        try:
            plughost_runner.sandbox.enter_cloned(policy, self._ids, pipes[3], server)
        except SandboxError as exc:  # still in init, whose stderr is this server's
            with contextlib.suppress(OSError):
                os.write(pipes[1], f"plughost runner: {exc}\n".encode())
            os._exit(4)

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            fork = self._unsettled.get(pid)
            if fork is not None:
                self._settle(fork, exited=True)
            if pid not in self._children:
                continue  # the child that handed its init over, or an orphan adopted
            self._children.discard(pid)
            code = os.waitstatus_to_exitcode(status)
            report = self._statuses.pop(pid, None)
            if report is not None:  # an init: the runner's own end, unless it never came
                with contextlib.suppress(OSError):
                    data = os.read(report, _RECORD.size)
                    if len(data) == _RECORD.size:
                        code = os.waitstatus_to_exitcode(_RECORD.unpack(data)[0])
                os.close(report)
            self._send({"exit": pid, "code": code})

    def _send(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(OSError):  # the host is gone: the next receive ends us
            self._control.send(msgpack.packb(message))


def _replace_environment(env: dict[str, str]) -> None:
    """Make ``os.environ`` exactly ``env``, changing only the variables that differ.

    Each change costs a forked child an encode and a putenv or unsetenv; most of
    a runner's variables are this server's own already.
    """
    for name in [name for name in os.environ if name not in env]:
        del os.environ[name]
    for name, value in env.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


if __name__ == "__main__":
    sys.exit(main())
