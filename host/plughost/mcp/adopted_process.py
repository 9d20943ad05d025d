"""AdoptedProcess: a child started before the event loop, driven as an anyio process.

:mod:`plughost.mcp.early_launch` starts stdio servers with ``subprocess.Popen``
while serve is still importing; the connection that claims one wants what
``anyio.open_process`` returns. This wraps the ``Popen``: its pipes (stdin,
stdout, and stderr when it is one) become
asyncio pipe transports (read and written from the loop, as anyio's own are),
and its end is learnt from a pidfd, so waiting takes no thread and no polling.

What does not live here: starting the process, and deciding whether it may be
used (:mod:`plughost.mcp.early_launch`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from typing import IO

import anyio
import anyio.abc

__all__ = ["AdoptedProcess"]

_CHUNK = 65536


class _PipeReceive(anyio.abc.ByteReceiveStream):
    def __init__(self, reader: asyncio.StreamReader, transport: asyncio.BaseTransport) -> None:
        self._reader = reader
        self._transport = transport

    async def receive(self, max_bytes: int = _CHUNK) -> bytes:
        data = await self._reader.read(max_bytes)
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        self._transport.close()


class _PipeSend(anyio.abc.ByteSendStream):
    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._stream = writer  # the name anyio's wrapper uses: plughost.mcp.stdio writes to it

    async def send(self, item: bytes) -> None:
        if self._stream.is_closing():
            raise anyio.ClosedResourceError
        try:
            self._stream.write(item)
            await self._stream.drain()
        except (ConnectionError, OSError) as exc:
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        self._stream.close()


async def _read_end(pipe: IO[bytes]) -> _PipeReceive:
    """The read end of one of the process's pipes, read from the running loop."""
    reader = asyncio.StreamReader(limit=2**31)
    transport, _ = await asyncio.get_running_loop().connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), pipe
    )
    return _PipeReceive(reader, transport)


class AdoptedProcess(anyio.abc.Process):
    """``process``, with its pipes, as an anyio process on the running loop.

    Build it with :meth:`adopt`.
    """

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        stdin: _PipeSend,
        stdout: _PipeReceive,
        stderr: _PipeReceive | None = None,
    ) -> None:
        self._process = process
        self._stdin = stdin
        self._stdout = stdout
        self._stderr = stderr
        # An early process may have ended and been reaped before it was claimed: its pid may
        # be another's by now, so only a process not yet reaped is looked at through a pidfd.
        self._pidfd = os.pidfd_open(process.pid) if process.returncode is None else None

    @classmethod
    async def adopt(cls, process: subprocess.Popen[bytes]) -> AdoptedProcess:
        """Connect ``process``'s pipes to the running loop (they must both be pipes)."""
        if process.stdin is None or process.stdout is None:
            raise ValueError("the process must have been started with stdin and stdout pipes")
        loop = asyncio.get_running_loop()
        stdout = await _read_end(process.stdout)
        stderr = await _read_end(process.stderr) if process.stderr is not None else None
        write_pipe, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, process.stdin
        )
        writer = asyncio.StreamWriter(write_pipe, protocol, None, loop)
        return cls(process, _PipeSend(writer), stdout, stderr)

    async def wait(self) -> int:
        while (code := self._process.poll()) is None:
            assert self._pidfd is not None  # only a reaped process has none
            await anyio.wait_readable(self._pidfd)
        return code

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def send_signal(self, signal: int) -> None:
        if self._process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.send_signal(signal)

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.poll()

    @property
    def stdin(self) -> anyio.abc.ByteSendStream:
        return self._stdin

    @property
    def stdout(self) -> anyio.abc.ByteReceiveStream:
        return self._stdout

    def stdout_pipe(self) -> tuple[asyncio.BaseTransport, asyncio.StreamReader]:
        """The transport reading stdout and the reader it fills, for a reader of lines
        (:class:`plughost.mcp.pipe_lines.PipeLines`) to take over."""
        return self._stdout._transport, self._stdout._reader

    @property
    def stderr(self) -> anyio.abc.ByteReceiveStream | None:
        return self._stderr

    async def aclose(self) -> None:
        """Close the pipes, wait for the process to end, and close its pidfd."""
        with contextlib.suppress(OSError):
            await self._stdin.aclose()
            await self._stdout.aclose()
            if self._stderr is not None:
                await self._stderr.aclose()
        try:
            await self.wait()
        finally:
            if self._pidfd is not None:
                with contextlib.suppress(OSError):
                    os.close(self._pidfd)
