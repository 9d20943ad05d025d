"""A child process started off the event loop, whose exit is seen the moment it happens.

``asyncio.create_subprocess_exec`` forks and then waits, on the event loop, until
the child has called ``exec``. On a busy machine the child may not run for a
while, and every tool call in flight waits with it: with three CPU hogs on two
cores that wait was measured at 5 ms typical and 27 ms worst per spawn, which
is exactly when runners are restarted most (a plugin crash-looping next to
healthy ones). Here ``subprocess.Popen`` runs in a worker thread instead, and
the loop only picks up the pipes.

The exit is watched through a pidfd (Linux 5.3+), readable when the process
ends; elsewhere a thread waits for it. Either way :meth:`ChildProcess.wait`
returns when the process exits, not when its output pipes close: a child the
plugin started inherits those pipes and may keep them open long after the
runner died.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import threading
from collections.abc import Mapping, Sequence
from typing import IO

__all__ = ["ChildProcess", "PipeFeed", "read_pipes", "start_child"]

_STREAM_LIMIT = 2**16


class ChildProcess:
    """A started child: pid, exit code once known, its output as streams."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        stdout: asyncio.StreamReader,
        stderr: asyncio.StreamReader,
        transports: list[asyncio.BaseTransport],
    ) -> None:
        self.pid = popen.pid
        self.stdout = stdout
        self.stderr = stderr
        self._popen = popen
        self._transports = transports
        self._exited: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    @property
    def returncode(self) -> int | None:
        """The exit code (negative: killed by that signal), or None while it runs."""
        return self._popen.returncode

    async def wait(self) -> int:
        """Wait until the process has exited; return its exit code."""
        return await asyncio.shield(self._exited)

    def exit_code(self) -> asyncio.Future[int]:
        """A future of the exit code: cancelling it leaves the process's own alone.

        What :meth:`wait` gives, without a task to run it in (one fewer per runner).
        """
        return asyncio.shield(self._exited)

    def close(self) -> None:
        """Close the output pipes (after the exit; children may still hold their ends)."""
        for transport in self._transports:
            transport.close()

    def _collect(self) -> bool:
        """Reap the process if it has exited; True once the exit code is known."""
        if self._popen.poll() is None:
            return False
        if not self._exited.done():
            self._exited.set_result(self._popen.returncode or 0)
        return True

    def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            pidfd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):  # no pidfd here: a thread waits instead
            threading.Thread(
                target=self._wait_in_thread, args=(loop,), name=f"wait-{self.pid}", daemon=True
            ).start()
            return

        def readable() -> None:
            if self._collect():
                loop.remove_reader(pidfd)
                os.close(pidfd)

        loop.add_reader(pidfd, readable)

    def _wait_in_thread(self, loop: asyncio.AbstractEventLoop) -> None:
        self._popen.wait()
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self._collect)


async def start_child(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    new_session: bool = True,
    pass_fds: Sequence[int] = (),
) -> ChildProcess:
    """Start ``argv`` in a worker thread, stdin from /dev/null, stdout and stderr piped.

    Raises:
        OSError: the program could not be started.
    """
    spawning = asyncio.ensure_future(
        asyncio.to_thread(
            subprocess.Popen,
            list(argv),
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=new_session,
            pass_fds=tuple(pass_fds),
        )
    )
    try:
        popen = await asyncio.shield(spawning)
    except asyncio.CancelledError:
        # The thread starts the program whatever becomes of this task: once it has,
        # the program is ended here, not left running with no one to stop it.
        with contextlib.suppress(Exception):
            orphan = await spawning
            await _discard(orphan)
            for pipe in (orphan.stdout, orphan.stderr):  # no transport took them yet
                if pipe is not None:
                    pipe.close()
        raise
    try:
        (stdout, stderr), transports = await read_pipes([popen.stdout, popen.stderr])
    except BaseException:
        await _discard(popen)
        raise
    child = ChildProcess(popen, stdout, stderr, transports)
    child._watch()
    return child


async def _discard(popen: subprocess.Popen[bytes]) -> None:
    """Kill a child no one will own, and reap it."""
    popen.kill()
    await asyncio.to_thread(popen.wait)


async def read_pipes(
    pipes: Sequence[IO[bytes] | None],
) -> tuple[list[asyncio.StreamReader], list[asyncio.BaseTransport]]:
    """Stream readers over the read ends ``pipes``, and the transports to close them.

    Raises:
        ValueError: a pipe is missing.
    """
    loop = asyncio.get_running_loop()
    readers: list[asyncio.StreamReader] = []
    transports: list[asyncio.BaseTransport] = []
    try:
        for pipe in pipes:
            if pipe is None:
                raise ValueError("a child process's output was not piped")
            reader = asyncio.StreamReader(limit=_STREAM_LIMIT, loop=loop)
            transports.append(PipeFeed(loop, pipe, reader))
            readers.append(reader)
    except BaseException:
        for opened in transports:
            opened.close()
        raise
    return readers, transports


class PipeFeed(asyncio.ReadTransport):
    """Feeds a pipe's bytes to a stream reader from one reader callback of the loop.

    What ``loop.connect_read_pipe`` with a ``StreamReaderProtocol`` does, less its
    set-up: that one queues three callbacks and waits a loop iteration per pipe,
    and a runner has two pipes, every start. The reader's back-pressure is kept:
    past twice its limit it pauses this feed (the pipe fills, the writer waits),
    and resumes it once drained.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, pipe: IO[bytes], reader: asyncio.StreamReader
    ) -> None:
        super().__init__()
        self._loop, self._pipe, self._reader = loop, pipe, reader
        self._fd: int | None = pipe.fileno()
        os.set_blocking(self._fd, False)
        reader.set_transport(self)
        self._paused = False
        loop.add_reader(self._fd, self._read_ready)

    def _read_ready(self) -> None:
        if self._fd is None:
            return
        try:
            data = os.read(self._fd, _STREAM_LIMIT)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._reader.set_exception(exc)
            self.close()
            return
        if data:
            self._reader.feed_data(data)  # may pause this feed
        else:
            self._reader.feed_eof()
            self.close()

    def pause_reading(self) -> None:
        if self._fd is not None and not self._paused:
            self._paused = True
            self._loop.remove_reader(self._fd)

    def resume_reading(self) -> None:
        if self._fd is not None and self._paused:
            self._paused = False
            self._loop.add_reader(self._fd, self._read_ready)

    def is_reading(self) -> bool:
        return self._fd is not None and not self._paused

    def is_closing(self) -> bool:
        return self._fd is None

    def close(self) -> None:
        if self._fd is None:
            return
        if not self._paused:
            self._loop.remove_reader(self._fd)
        self._fd = None
        self._pipe.close()
        self._reader.feed_eof()  # a reader waiting on a closed feed ends, as on a pipe's end
