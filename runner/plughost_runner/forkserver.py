"""A fork server: one process that has imported the runner and forks new runners on demand.

Starting a runner as a fresh interpreter costs about 150 ms of CPU (Python,
asyncio, pyzmq, pydantic), paid again at every restart and every reload, and
paid on the same cores as the healthy plugins' calls. This process pays it
once: it imports everything a runner needs, creates no thread, socket or event
loop, and then forks a runner per request, which starts serving in a few
milliseconds and shares the imported pages with its siblings.

Protocol, over a ``SOCK_SEQPACKET`` socketpair (``--control-fd``), one msgpack
map per packet:

- host -> server: ``{"id", "argv", "env"}`` with three file descriptors attached
  (SCM_RIGHTS): the write ends of the new runner's stdout and stderr pipes, and the
  read end of its credentials pipe, which the server never reads (so no runner's
  token is ever in the server's memory, to be inherited by the next runner);
- server -> host: ``{"ready": pid}`` once, then ``{"id", "pid"}`` per fork (or
  ``{"id", "error"}``) and ``{"exit": pid, "code": n}`` when a runner ends
  (``n`` negative for a signal, as in :mod:`subprocess`).

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
import sys
import traceback
from typing import Any

import msgpack

import plughost_runner.maibot.loader  # the MaiBot layer and tomlkit: ~5 MiB a runner, shared

# Imported here, before any fork, so that every runner finds them loaded.
import plughost_runner.process.capture
import plughost_runner.sandbox
import plughost_runner.service
from plughost_runner import __main__ as runner_main
from plughost_runner.process.credentials import make_undumpable

__all__ = ["main"]

_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15
_MAX_PACKET = 1 << 20


def main(argv: list[str] | None = None) -> int:
    """Serve fork requests until the host closes the control socket or dies."""
    parser = argparse.ArgumentParser(
        prog="python -m plughost_runner.forkserver",
        description="plughost fork server: starts runners for a host. Started by the host.",
    )
    parser.add_argument("--control-fd", type=int, required=True, help="the host's socket")
    parser.add_argument("--parent-pid", type=int, required=True, help="exit when it dies")
    args = parser.parse_args(argv)
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        libc.prctl(_PR_SET_NAME, b"plughost-forks", 0, 0, 0)  # ps -o comm, top
    if os.getppid() != args.parent_pid:
        return 70
    make_undumpable()  # and so are its runners until they exec
    control = socket.socket(fileno=args.control_fd)
    return _Server(control).serve()


class _Server:
    def __init__(self, control: socket.socket) -> None:
        self._control = control
        self._children: set[int] = set()
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_write, False)
        signal.set_wakeup_fd(self._wake_write)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # the wakeup fd does the work
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def serve(self) -> int:
        plughost_runner.sandbox.interpreter_candidates()  # once here, not in every runner
        # Move everything imported so far out of the collector's sight: a collection in a
        # runner would otherwise write to (and so copy) every page it shares with us.
        gc.freeze()
        self._send({"ready": os.getpid()})
        selector = selectors.DefaultSelector()
        selector.register(self._control, selectors.EVENT_READ, "control")
        selector.register(self._wake_read, selectors.EVENT_READ, "child")
        while True:
            for key, _ in selector.select():
                if key.data == "child":
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
        # The reply waits until the child leads its own session: the host may signal
        # the runner's process group the moment it hears the pid.
        in_session, leads = os.pipe()
        try:
            pid = os.fork()
        except OSError as exc:
            self._send({"id": request.get("id"), "error": str(exc)})
            for fd in (*pipes, in_session, leads):
                os.close(fd)
            return
        if pid == 0:
            os.setsid()
            os.close(leads)
            os.close(in_session)
            os._exit(self._become_runner(request, pipes))
        os.close(leads)
        os.read(in_session, 1)  # end-of-file once the child has closed its end, after setsid
        os.close(in_session)
        for fd in pipes:
            os.close(fd)
        self._children.add(pid)
        self._send({"id": request.get("id"), "pid": pid})

    def _become_runner(self, request: dict[str, Any], pipes: list[int]) -> int:
        """In the child: a new session, the runner's streams and environment, then its main."""
        try:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for fd in (self._wake_read, self._wake_write):
                os.close(fd)
            self._control.close()
            if sys.platform.startswith("linux"):  # `ps -o comm`, top: not "python"
                ctypes.CDLL(None).prctl(_PR_SET_NAME, b"plughost-runner", 0, 0, 0)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.dup2(pipes[0], 1)
            os.dup2(pipes[1], 2)
            for fd in (devnull, pipes[0], pipes[1]):
                os.close(fd)
            os.environ.clear()
            os.environ.update({str(k): str(v) for k, v in request["env"].items()})
            # The runner's parent is this server, which itself dies with the host.
            argv = [
                *(str(a) for a in request["argv"]),
                "--parent-pid",
                str(os.getppid()),
                "--credentials-fd",
                str(pipes[2]),
            ]
            return runner_main.main(argv)
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # anything else: say so on the runner's stderr and exit
            traceback.print_exc()
            return 1

    def _reap(self) -> None:
        while self._children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self._children.discard(pid)
            self._send({"exit": pid, "code": os.waitstatus_to_exitcode(status)})

    def _send(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(OSError):  # the host is gone: the next receive ends us
            self._control.send(msgpack.packb(message))


if __name__ == "__main__":
    sys.exit(main())
