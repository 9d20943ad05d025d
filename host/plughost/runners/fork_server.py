"""The host's end of the runner fork server (``python -m plughost_runner.forkserver``).

A runner started as a fresh interpreter spends about 150 ms of CPU importing
Python, asyncio, pyzmq and pydantic, at every start, restart and reload, on
the cores the healthy plugins' calls need. The fork server pays that once and
forks each new runner from its already-imported state; the runner is then
ready in milliseconds and shares those pages with its siblings.

To the supervisor a forked runner looks like any child process
(:class:`ForkedProcess` has the face of
:class:`~plughost.runners.child_process.ChildProcess`): its stdout and stderr are pipes
the host created and handed over with the request, it is the leader of its own
session (so the process-group kill works), and its exit code arrives from the
fork server, which is its parent. If the fork server cannot be used, the
caller falls back to starting an interpreter; a fork server that died is
started again on a later spawn, at most once per ``restart_interval``. A fork
request unanswered within ``fork_timeout`` means the server is frozen (a plugin
of the same user can stop it): it is killed and replaced the same way, and the
runner starts as an interpreter.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

import msgpack

from plughost.runners.child_process import ChildProcess, read_pipes, start_child

__all__ = ["ForkServer", "ForkServerError", "ForkedProcess"]

log = logging.getLogger(__name__)

_MAX_PACKET = 1 << 20
_EXIT_REPORT_GRACE = 0.5
MODULE = "plughost_runner"


class ForkServerError(OSError):
    """The fork server is not running or could not fork; start an interpreter instead."""


class ForkedProcess:
    """A runner forked by the fork server.

    Its exit code normally comes from the fork server, which is its parent. The
    host also watches the process through a pidfd, so that a fork server that is
    frozen (a plugin can stop it: same user) cannot hide a runner's death: if
    the server has not reported an exit shortly after the pidfd says it
    happened, the code is read from the zombie's ``/proc/<pid>/stat``.
    """

    def __init__(
        self,
        pid: int,
        stdout: asyncio.StreamReader,
        stderr: asyncio.StreamReader,
        transports: list[asyncio.BaseTransport],
    ) -> None:
        self.pid = pid
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None
        self._transports = transports
        self._loop = asyncio.get_running_loop()
        self._exited: asyncio.Future[int] = self._loop.create_future()
        self._pidfd: int | None = None
        with contextlib.suppress(AttributeError, OSError):  # gone already, or no pidfd here
            self._pidfd = os.pidfd_open(pid)
            self._loop.add_reader(self._pidfd, self._pidfd_readable)

    async def wait(self) -> int:
        """Wait until the runner has exited; return its exit code."""
        return await asyncio.shield(self._exited)

    def exit_code(self) -> asyncio.Future[int]:
        """A future of the exit code: cancelling it leaves the process's own alone.

        What :meth:`wait` gives, without a task to run it in (one fewer per runner).
        """
        return asyncio.shield(self._exited)

    def close(self) -> None:
        """Close the output pipes."""
        for transport in self._transports:
            transport.close()
        self._close_pidfd()

    def _close_pidfd(self) -> None:
        if self._pidfd is not None:
            self._loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None

    def _pidfd_readable(self) -> None:
        self._close_pidfd()
        if self.returncode is None:  # give the fork server's report a moment to arrive
            self._loop.call_later(_EXIT_REPORT_GRACE, self._exit_without_report)

    def _exit_without_report(self) -> None:
        if self.returncode is None:
            code = _zombie_exit_code(self.pid)
            log.warning("runner pid %d exited; the fork server did not report it", self.pid)
            self.exited(-signal.SIGKILL if code is None else code)

    def exited(self, code: int) -> None:
        """Record the exit the fork server reported."""
        if self.returncode is None:
            self.returncode = code
            self._exited.set_result(code)


class ForkServer:
    """Starts and talks to one fork server; forks runners through it."""

    def __init__(
        self,
        env: Mapping[str, str],
        *,
        python: str | None = None,
        ready_timeout: float = 30.0,
        fork_timeout: float = 3.0,
        restart_interval: float = 10.0,
    ) -> None:
        self._env = dict(env)
        self._python = python or sys.executable
        self._ready_timeout = ready_timeout
        self._fork_timeout = fork_timeout
        self._restart_interval = restart_interval
        self._process: ChildProcess | None = None
        self._socket: socket.socket | None = None
        self._reader: asyncio.Task[None] | None = None
        self._pending: dict[int, asyncio.Queue[dict[str, Any]]] = {}
        self._children: dict[int, ForkedProcess] = {}
        self._early_exits: dict[int, int] = {}
        self._drains: list[asyncio.Task[None]] = []
        self._ids = itertools.count(1)
        self._last_start = -float("inf")
        self._starting: asyncio.Lock | None = None
        self._closed = False
        self.pid: int | None = None
        # Where the native pid-namespace init should be, when it was not built; else None.
        self.init_missing: str | None = None

    @property
    def running(self) -> bool:
        """Whether the fork server is up and answering."""
        return self._reader is not None and not self._reader.done()

    def serves(self, command: Sequence[str]) -> bool:
        """Whether ``command`` starts a plain runner this server can fork instead."""
        return list(command[:3]) == [self._python, "-m", MODULE]

    async def start(self) -> None:
        """Start the fork server and wait until it has imported the runner.

        Raises:
            ForkServerError: it did not start or did not say it was ready in time.
        """
        self._last_start = time.monotonic()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            process = await start_child(
                [
                    self._python,
                    "-m",
                    f"{MODULE}.forkserver",
                    "--control-fd",
                    str(theirs.fileno()),
                    "--parent-pid",
                    str(os.getpid()),
                ],
                self._env,
                pass_fds=[theirs.fileno()],
            )
        except OSError as exc:
            ours.close()
            raise ForkServerError(f"cannot start the fork server: {exc}") from exc
        except BaseException:  # cancelled while spawning (start_child ends the child)
            ours.close()
            raise
        finally:
            theirs.close()
        ours.setblocking(False)
        self._process, self._socket = process, ours
        ready: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._pending[0] = ready
        self._reader = asyncio.create_task(self._read(ours, process))
        self._drains = [
            asyncio.create_task(_drain(process.stdout)),
            asyncio.create_task(_drain(process.stderr, log)),
        ]
        try:
            async with asyncio.timeout(self._ready_timeout):
                hello = await ready.get()
            if "ready" not in hello:
                raise ForkServerError(hello.get("error", "no hello"))
        except (TimeoutError, ForkServerError) as exc:
            await self._stop_process()
            raise ForkServerError(f"the fork server did not become ready: {exc!r}") from exc
        except BaseException:  # cancelled while it starts (the host's start was): not left over
            await self._stop_process(grace=0.0)
            raise
        finally:
            self._pending.pop(0, None)
        self.pid = int(hello["ready"])
        log.debug("fork server ready, pid %s", self.pid)
        self._tell_init_missing(hello.get("init_missing"))

    def _tell_init_missing(self, path: object) -> None:
        """Log once that sandboxed runners' inits are Python processes, and why."""
        if not isinstance(path, str) or self.init_missing is not None:
            return
        self.init_missing = path
        log.warning(
            "no native pid-namespace init at %s: scripts/bootstrap.sh builds it from "
            "plughost_runner/sandbox/init.c with a C compiler (cc), and found none; each "
            "sandboxed runner's init stays a forked Python process, about 3 MiB more memory "
            "per plugin. Install cc and re-run scripts/bootstrap.sh",
            path,
        )

    async def spawn(
        self, argv: Sequence[str], env: Mapping[str, str], credentials: int
    ) -> ForkedProcess:
        """Fork a runner with ``argv`` (its arguments after ``-m plughost_runner``).

        ``credentials`` is the read end of the runner's credentials pipe; it travels
        as a descriptor, and the server hands it to the child without reading it.

        Raises:
            ForkServerError: the fork server is down (and not due for a restart) or failed.
        """
        await self._ensure_running()
        sock = self._socket
        if sock is None:
            raise ForkServerError("the fork server is not running")
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        request_id = next(self._ids)
        replies: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._pending[request_id] = replies
        packet = msgpack.packb({"id": request_id, "argv": list(argv), "env": dict(env)})
        try:
            try:
                socket.send_fds(sock, [packet], [out_write, err_write, credentials])
            except OSError as exc:  # a full queue (a server that stopped reading) included
                raise ForkServerError(f"cannot reach the fork server: {exc}") from exc
            finally:
                os.close(out_write)
                os.close(err_write)
            answer = await self._forked(replies)
        except BaseException:
            for fd in (out_read, err_read):
                os.close(fd)
            raise
        finally:
            self._pending.pop(request_id, None)
        (stdout, stderr), transports = await read_pipes(
            [os.fdopen(out_read, "rb", buffering=0), os.fdopen(err_read, "rb", buffering=0)]
        )
        child = ForkedProcess(int(answer["pid"]), stdout, stderr, transports)
        early = self._early_exits.pop(child.pid, None)  # it exited before this line ran
        if early is not None:
            child.exited(early)
        else:
            self._children[child.pid] = child
        return child

    async def _forked(self, replies: asyncio.Queue[dict[str, Any]]) -> dict[str, Any]:
        """The fork server's answer with the runner's pid.

        Two replies: ``forked`` at once (within ``fork_timeout``, or the server is
        frozen), then ``pid`` when the child has named the runner to know (its pid
        namespace's init, or itself), a few milliseconds of its own start later.
        """
        try:
            async with asyncio.timeout(self._fork_timeout):
                answer = await replies.get()
        except TimeoutError:
            why = f"it did not answer a fork request within {self._fork_timeout:g} s"
            self._replace(why)
            raise ForkServerError(f"the fork server is frozen ({why})") from None
        if "forked" in answer:
            try:
                async with asyncio.timeout(self._ready_timeout):
                    answer = await replies.get()
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(int(answer["forked"]), signal.SIGKILL)
                raise ForkServerError("the forked runner did not say which process it is") from None
        if "pid" not in answer:
            raise ForkServerError(f"the fork server could not fork: {answer.get('error')}")
        return answer

    def _replace(self, why: str) -> None:
        """Kill a fork server that stopped answering; a later spawn starts a new one.

        Its runners die with it (their parent-death signal) and are restarted by their
        supervisors; until the new server is up, runners start as new interpreters.
        """
        process = self._process
        if process is None or process.returncode is not None:
            return
        log.warning("replacing the runner fork server (pid %d): %s", process.pid, why)
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGKILL)

    async def aclose(self) -> None:
        """Stop the fork server (its runners are stopped by their supervisors first)."""
        self._closed = True
        await self._stop_process()

    async def _ensure_running(self) -> None:
        if self.running:
            return
        if self._closed:
            raise ForkServerError("the fork server is closed")
        if time.monotonic() - self._last_start < self._restart_interval:
            raise ForkServerError("the fork server is down")
        self._starting = self._starting or asyncio.Lock()
        async with self._starting:
            if not self.running:
                log.warning("restarting the runner fork server")
                await self._stop_process()
                await self.start()

    async def _read(self, sock: socket.socket, process: ChildProcess) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                try:
                    data = await loop.sock_recv(sock, _MAX_PACKET)
                except OSError:
                    data = b""
                if not data:
                    break
                self._dispatch(msgpack.unpackb(data))
        finally:
            self._lost(process)

    def _dispatch(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        if "ready" in message:
            self._resolve(0, message)
        elif "exit" in message:
            self._exit(int(message["exit"]), int(message.get("code", -1)))
        elif "id" in message:
            self._resolve(int(message["id"] or -1), message)

    def _resolve(self, request_id: int, message: dict[str, Any]) -> None:
        replies = self._pending.get(request_id)
        if replies is not None:
            replies.put_nowait(message)

    def _exit(self, pid: int, code: int) -> None:
        child = self._children.pop(pid, None)
        if child is not None:
            child.exited(code)
        else:  # the fork's reply is still on its way to spawn()
            self._early_exits[pid] = code

    def _lost(self, process: ChildProcess) -> None:
        """The fork server is gone: its runners died with it (their parent-death signal)."""
        if process is not self._process:
            return
        for replies in self._pending.values():
            replies.put_nowait({"error": "the fork server exited"})
        self._pending.clear()
        children, self._children = self._children, {}
        for child in children.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGKILL)
            child.exited(-signal.SIGKILL)
        if not self._closed:
            log.warning("the runner fork server exited; runners are started directly meanwhile")

    async def _stop_process(self, grace: float = 5.0) -> None:
        """Close its socket, give it ``grace`` s to exit on its own, then kill it."""
        process, sock, reader = self._process, self._socket, self._reader
        if sock is not None:
            sock.close()  # the server reads end-of-file and exits
        if process is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(grace):
                    await process.wait()
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGKILL)
                await process.wait()
            process.close()
        if reader is not None:
            reader.cancel()  # its last act is _lost(): the runners are gone with the server
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        for drain in self._drains:
            drain.cancel()
        if self._drains:  # ended here, not left pending on a loop that may close next
            await asyncio.wait(self._drains)
        self._drains = []
        self._process, self._socket, self._reader = None, None, None


def _zombie_exit_code(pid: int) -> int | None:
    """The exit code of an unreaped child of the fork server, from ``/proc/<pid>/stat``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    if len(fields) < 50 or fields[0] != b"Z":  # field 52, exit_code, since Linux 3.5
        return None
    return os.waitstatus_to_exitcode(int(fields[49]))


async def _drain(stream: asyncio.StreamReader, logger: logging.Logger | None = None) -> None:
    """Read the fork server's own output (a traceback if it fails to start)."""
    while line := await stream.readline():
        if logger is not None:
            logger.warning("fork server: %s", line.decode(errors="replace").rstrip())
