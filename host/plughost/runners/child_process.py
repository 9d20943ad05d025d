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
import functools
import os
import subprocess
import threading
from collections.abc import Mapping, Sequence
from typing import IO

__all__ = ["ChildProcess", "read_pipes", "start_child"]

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
    popen = await asyncio.to_thread(
        subprocess.Popen,
        list(argv),
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=new_session,
        pass_fds=tuple(pass_fds),
    )
    try:
        (stdout, stderr), transports = await read_pipes([popen.stdout, popen.stderr])
    except BaseException:
        popen.kill()
        await asyncio.to_thread(popen.wait)
        raise
    child = ChildProcess(popen, stdout, stderr, transports)
    child._watch()
    return child


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
            pipe_transport, _ = await loop.connect_read_pipe(
                functools.partial(asyncio.StreamReaderProtocol, reader), pipe
            )
            readers.append(reader)
            transports.append(pipe_transport)
    except BaseException:
        for opened in transports:
            opened.close()
        raise
    return readers, transports
