"""The stdio transport to an upstream MCP server: a child process that this module owns.

The official SDK's ``stdio_client`` keeps its process to itself. Owning it
here gives three things the connection needs:

- **why it ended**: "command exited with code 1" or "command was killed by
  signal 9", instead of the SDK's bare "Connection closed". Whichever task
  notices the end first (the reader at end of output, the writer on a broken
  pipe) waits, at most ``_REAP_WAIT``, for the exit code and reports it before
  the failure travels on, so the error names the exit code however the race
  between the closed pipe and the exit status went;
- **when it ended**: ``on_exit`` is called as soon as the server's stdout
  closes, so the connection is marked lost before anyone sends into it;
- **whether a request left**: the writer runs in the sending task and marks the
  request sent (:func:`plughost.mcp.delivery.mark_sent`) only once its bytes
  are in the pipe; a write to a dead server fails before that, so the call can
  be retried on a new process without any risk of running twice.

Shutdown follows the SDK's ladder: close stdin, wait, SIGTERM to the process
group, wait, SIGKILL; shielded and bounded. The waits are 2 s when the
connection closes normally and 0.2 s when it is abandoned (cancelled, or failed),
so a server that hung is gone within a moment of its ``connect_timeout``.

The server's stderr is a pipe too, logged line by line under the server's name
and within bounds (:mod:`plughost.mcp.server_stderr`), never passed to serve's own.

What does not live here: the session on top of it (:mod:`plughost.mcp.session`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Any, Self

import anyio
import anyio.abc
import anyio.lowlevel
import mcp_types as types
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from plughost.mcp.adopted_process import AdoptedProcess
from plughost.mcp.delivery import mark_sent
from plughost.mcp.pipe_lines import LineTooLongError, PipeLines
from plughost.mcp.server_stderr import ServerStderr
from plughost.mcp.stream_filters import EagerSend, eager_memory_stream
from plughost.secret_values import SECRET_KEY

__all__ = ["exit_reason", "stdio_transport"]

log = logging.getLogger(__name__)

_EXIT_GRACE = 2.0  # for the server to leave on its own once stdin closes, then after SIGTERM
_ABANDON_GRACE = 0.2  # the same, for a connection given up on (a connect that timed out)
_EXIT_POLL = 0.01
_REAP_WAIT = 0.5  # after stdout closed: how long to wait to learn the exit code
_BACKLOG = 64 * 1024  # bytes waiting for the server's pipe past which a request waits its turn
# One JSON-RPC message from the server, at most (bytes), as serve reads from its own client.
_LINE_LIMIT = 256 * 1024 * 1024


def exit_reason(returncode: int | None) -> str:
    """Say how a server process ended, for status and error messages."""
    if returncode is None:
        return "the server closed its output"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = str(-returncode)
        return f"command was killed by signal {-returncode} ({name})"
    return f"command exited with code {returncode}"


class _ExitReport:
    """Tells ``on_exit`` how the process ended: once, after waiting for its exit code.

    The end shows first as a closed pipe, on stdout (the reader) or stdin (the
    writer), and only a moment later as an exit status. Whoever sees it first
    calls :meth:`report`; the failure it then raises or causes is seen by the
    connection after ``on_exit`` ran, so the connection names the exit code.
    """

    def __init__(self, process: anyio.abc.Process, on_exit: Callable[[str], None]) -> None:
        self._process = process
        self._on_exit = on_exit
        self._started = False
        self._done = anyio.Event()
        self.silenced = False  # the transport is stopping the server itself: nothing to report

    async def report(self, reason: str | None = None) -> None:
        """Wait up to ``_REAP_WAIT`` s for the exit code, then call ``on_exit`` (only once).

        Args:
            reason: Why the output was given up on, said instead of how the process ended.
        """
        if self._started:
            with anyio.move_on_after(_REAP_WAIT):
                await self._done.wait()
            return
        self._started = True
        try:
            await _exited(self._process, _REAP_WAIT)
            if not self.silenced:
                self._on_exit(reason or exit_reason(self._process.returncode))
        finally:
            self._done.set()


class _Writer:
    """The session's write stream: each message is written by the task that sends it."""

    def __init__(self, process: anyio.abc.Process, ended: _ExitReport) -> None:
        self._process = process
        self._ended = ended
        # asyncio's lock takes no turn of the loop when it is free (anyio's does, every time).
        self._lock = asyncio.Lock()
        self._closed = False
        self.line_hook: Callable[[bytes], bool] | None = None
        """Sees each line of the server's output first; True takes it from the session."""

    def write_now(self, data: bytes, request: bool) -> bool:
        """Put one line into the server's pipe at once; False if it was not written.

        A ``request`` is refused while another send is under way or the pipe is
        backed up (it then goes through :meth:`send`, which waits for room); a
        notification (a cancel) is written all the same.
        """
        pipe = getattr(self._process.stdin, "_stream", None)
        if self._closed or self._process.returncode is not None:
            return False
        if not isinstance(pipe, asyncio.StreamWriter) or pipe.is_closing():
            return False
        if request and (self._lock.locked() or pipe.transport.get_write_buffer_size() > _BACKLOG):
            return False
        pipe.write(data)
        return True

    async def send(self, item: SessionMessage, /) -> None:
        stdin = self._process.stdin
        if self._closed or stdin is None or self._process.returncode is not None:
            await self._ended_first()
            raise anyio.ClosedResourceError
        line = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
        async with self._lock:
            try:
                await _write(stdin, line.encode())
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                await self._ended_first()
                raise anyio.ClosedResourceError from exc
        if isinstance(item.message, types.JSONRPCRequest):
            mark_sent()

    async def _ended_first(self) -> None:
        """A write found the server gone: have its exit reported before the failure goes up."""
        if not self._ended.silenced:
            await self._ended.report()

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return None


async def _write(stdin: anyio.abc.ByteSendStream, data: bytes) -> None:
    """Write ``data`` to the server's stdin; return once the pipe took it or its buffer has room.

    On asyncio, the pipe's own writer is used: anyio's wrapper gives up a turn of
    the loop after every write, which a request on its way to the server does not
    need. A cancelled sender still raises before anything is written.
    """
    pipe = getattr(stdin, "_stream", None)
    if not isinstance(pipe, asyncio.StreamWriter):
        await stdin.send(data)
        return
    await anyio.lowlevel.checkpoint_if_cancelled()
    if pipe.is_closing():
        raise anyio.ClosedResourceError
    pipe.write(data)
    await pipe.drain()


@contextlib.asynccontextmanager
async def stdio_transport(
    command: str,
    args: list[str],
    *,
    env: dict[str, str] | None,
    cwd: str | None,
    on_exit: Callable[[str], None],
    pass_fds: tuple[int, ...] = (),
    adopted: anyio.abc.Process | None = None,
    name: str = "server",
) -> AsyncIterator[tuple[Any, Any]]:
    """Start the server and yield the SDK's (read stream, write stream) pair.

    Args:
        command: The executable.
        args: Its arguments.
        env: Extra environment variables, over the SDK's safe default set.
        cwd: Its working directory.
        on_exit: Called once with :func:`exit_reason` when the server's output ends
            (not when this context exits first).
        pass_fds: Descriptors the process inherits (the sandbox launcher's report pipe);
            this function closes them.
        adopted: The process, already started with this very command
            (:mod:`plughost.mcp.early_launch`): driven instead of starting another.
        name: The server's name, which tags each line of its stderr
            (:mod:`plughost.mcp.server_stderr`).

    Raises:
        OSError: The command could not be started.
    """
    environment = get_default_environment() | (env or {})
    try:
        process = adopted or await anyio.open_process(
            [command, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,  # read by the loop and logged under its name
            env=environment,
            cwd=cwd,
            start_new_session=True,
            pass_fds=pass_fds,
        )
    finally:
        for fd in pass_fds:  # the child has them now, or never will
            os.close(fd)
    # Eager: an answer moves from the pipe to the task waiting for it with no extra turn.
    send, receive = eager_memory_stream[SessionMessage | Exception](0)
    ended = _ExitReport(process, on_exit)
    writer = _Writer(process, ended)

    async def read() -> None:
        reason = None
        try:
            output_ended = await _read_lines(process, send, writer)
        except _LineTooLong as exc:
            output_ended, reason = True, str(exc)
            log.warning("mcp server output given up reason=%s", reason)
        if output_ended and not ended.silenced:
            await writer.aclose()  # nothing more is sent to a server whose output ended
            await ended.report(reason)
        await send.aclose()

    abandoned = False
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            secrets = [value for key, value in environment.items() if SECRET_KEY.search(key)]
            stderr = ServerStderr(name, secrets=secrets)
            if process.stderr is not None:
                tg.start_soon(stderr.read, process.stderr)
            try:
                yield receive, writer
            except BaseException:
                abandoned = True  # cancelled or failed: no grace for a server that hung
                raise
            finally:
                ended.silenced = True
                with anyio.CancelScope(shield=True):
                    await writer.aclose()
                    await _stop(process, name, grace=_ABANDON_GRACE if abandoned else _EXIT_GRACE)
                    await stderr.drained(_REAP_WAIT)  # its last words, often why it ended
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await send.aclose()
            await receive.aclose()
            with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await process.aclose()


class _LineTooLong(Exception):
    """The server wrote more than :data:`_LINE_LIMIT` bytes without ending the line."""


async def _read_lines(
    process: anyio.abc.Process, send: EagerSend[SessionMessage | Exception], writer: _Writer
) -> bool:
    """Hand every line of the server's stdout to the session; return True at end of output.

    The lines are split by :class:`~plughost.mcp.pipe_lines.PipeLines` as the loop
    reads the pipe: a line the writer's ``line_hook`` takes (an answer on the direct
    lane) is handled there, with no task woken; the rest come here, in order.

    Raises:
        _LineTooLong: The server wrote a line longer than the limit.
    """
    lines = await _lines_of(process, writer)
    if lines is None:
        return await _read_chunks(process, send, writer)
    try:
        while (line := await lines.next()) is not None:
            await send.send(_parse(line))
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        return False  # the session is gone: our own shutdown
    except LineTooLongError as exc:
        raise _LineTooLong(f"the server wrote {exc}") from None
    except OSError as exc:
        log.debug("mcp server stdout failed reason=%s", exc)
    return True


async def _lines_of(process: anyio.abc.Process, writer: _Writer) -> PipeLines | None:
    """The server's stdout, read as lines by the pipe's own protocol; None where it cannot be.

    The pipe's transport reads into a ``StreamReader``; its protocol is
    replaced here by one that splits lines as they are read and then tells the
    protocol it replaced when the pipe closes (asyncio's subprocess transport
    learns so that its child's output ended). What the ``StreamReader`` holds
    already (what the server wrote before this, an early-launched one's
    answers among it) is read first.
    """
    found = _stdout_pipe(process)
    if found is None:
        return None
    pipe, reader = found
    buffered = getattr(reader, "_buffer", None)
    if not isinstance(pipe, asyncio.ReadTransport) or not isinstance(buffered, bytearray):
        return None
    # asyncio's subprocess transport hands a read on to the reader a turn of the loop
    # later (call_soon): with the pipe paused, one turn lets what it read reach the reader.
    pipe.pause_reading()
    try:
        await asyncio.sleep(0)
    except BaseException:
        pipe.resume_reading()
        raise
    lines = PipeLines(
        lambda: writer.line_hook, limit=_LINE_LIMIT, final_line=False, inner=pipe.get_protocol()
    )
    early = bytes(buffered)
    buffered.clear()
    pipe.set_protocol(lines)
    lines.connection_made(pipe)
    ended = reader.at_eof() or pipe.is_closing()
    if not ended:
        pipe.resume_reading()  # paused above, and maybe by the reader, full; lines may pause it
    if early:
        lines.data_received(early)
    if ended:
        lines.eof_received()
    return lines


def _stdout_pipe(
    process: anyio.abc.Process,
) -> tuple[asyncio.BaseTransport, asyncio.StreamReader] | None:
    """The transport reading the process's stdout, and the reader it fills, if there are."""
    if isinstance(process, AdoptedProcess):
        return process.stdout_pipe()
    transport = getattr(process, "_transport", None)  # anyio's process on asyncio
    reader = getattr(getattr(process, "_process", None), "stdout", None)
    if not isinstance(transport, asyncio.SubprocessTransport) or not isinstance(
        reader, asyncio.StreamReader
    ):
        return None
    pipe = transport.get_pipe_transport(1)
    return None if pipe is None else (pipe, reader)


async def _read_chunks(
    process: anyio.abc.Process, send: EagerSend[SessionMessage | Exception], writer: _Writer
) -> bool:
    """:func:`_read_lines` where the pipe's protocol cannot be replaced: chunk by chunk.

    A line that spans reads is gathered in one buffer that each read extends, so
    a long line costs its length once, not once per read; a line within one read
    is sliced from it. Past :data:`_LINE_LIMIT` a line is refused, also one
    that ends within the read that took it over.

    Raises:
        _LineTooLong: The server wrote a line longer than the limit.
    """
    stdout = process.stdout
    if stdout is None:
        return True
    line = bytearray()
    try:
        async for chunk in stdout:
            view, start = memoryview(chunk), 0
            while (end := chunk.find(b"\n", start)) >= 0:
                if len(line) + end - start > _LINE_LIMIT:
                    raise _too_long()
                if line:
                    line += view[start:end]
                    data = bytes(line)  # its own: the buffer is reused
                    line.clear()
                else:
                    data = chunk[start:end]
                start = end + 1
                if data and not data.isspace():
                    hook = writer.line_hook
                    if hook is None or not hook(data):
                        await send.send(_parse(data))
            line += view[start:]
            if len(line) > _LINE_LIMIT:
                raise _too_long()
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        return False  # the session is gone: our own shutdown
    except OSError as exc:
        log.debug("mcp server stdout failed reason=%s", exc)
    return True


def _too_long() -> _LineTooLong:
    return _LineTooLong(
        f"the server wrote a line over {_LINE_LIMIT} bytes, more than one JSON-RPC message may hold"
    )


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        log.warning("mcp server wrote a line that is not JSON-RPC: %.200r", line)
        return exc


async def _stop(process: anyio.abc.Process, name: str, *, grace: float) -> None:
    """Close stdin, wait; SIGTERM the group, wait; SIGKILL the group: ``grace`` s per wait.

    Each signal is logged: a server that needs one makes every stop of serve (and so
    every call of a client that starts serve per call) ``grace`` seconds longer.
    """
    if process.stdin is not None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            log.info(
                "mcp server did not end within %.1f s: sending %s server=%s pid=%d",
                grace,
                sig.name,
                name,
                process.pid,
            )
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)
        if await _exited(process, grace if sig is not signal.SIGKILL else _EXIT_GRACE):
            return
    log.warning("mcp server process would not die server=%s pid=%d", name, process.pid)


async def _exited(process: anyio.abc.Process, timeout: float) -> bool:
    """Whether the process ended within ``timeout`` seconds.

    It polls ``returncode``: ``wait()`` would also wait for the end of the pipes,
    which a grandchild that inherited them can hold open long after the server died.
    """
    with anyio.move_on_after(timeout):
        while process.returncode is None:  # noqa: ASYNC110 - no event to wait on
            await anyio.sleep(_EXIT_POLL)
    return process.returncode is not None
