"""The test kit's end of one runner: spawn it, speak the protocol, stop it.

:class:`RunnerLink` is everything in :class:`~plughost_sdk.testing.PluginTestHarness`
that is about the process and the socket, not about the plugin: it starts
``python -m plughost_runner``, binds the ROUTER socket the runner dials, accepts
only a hello with this spawn's token and protocol version, pairs requests with
replies, fails whatever still waits when the runner exits, and stops it with the
host's ladder (ask, SIGTERM, SIGKILL). What to answer the runner (its load spec,
capability calls, log records) is the harness's business, given as callbacks.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plughost_sdk import wire
from plughost_sdk.errors import ProtocolError, RunnerCrashedError, RunnerStartError

if TYPE_CHECKING:
    import zmq.asyncio

__all__ = ["RUNNER_MODULE", "RefusedError", "RunnerLink"]

log = logging.getLogger("plughost_sdk.testing")

RUNNER_MODULE = "plughost_runner"


class RefusedError(Exception):
    """A request answered with a wire error, in either direction."""

    def __init__(self, code: wire.ErrorCode | str, message: str) -> None:
        super().__init__(message)
        self.error = wire.WireError(code=code, message=message, details={})


RequestHandler = Callable[[wire.Envelope, dict[str, Any]], Awaitable[Any]]
"""Answers a runner's request other than ``runner.ready``; raises RefusedError to refuse."""


class RunnerLink:
    """One runner process and the socket it dials.

    Args:
        root: A private directory for the socket and the runner's output file.
        token: This spawn's secret; only a hello carrying it is served.
        hello: Builds the answer to the runner's hello (the plugins it loads).
        on_request: Answers the runner's requests (capability calls).
        on_logs: Receives each ``log.batch`` body.
        on_progress: Receives each ``progress`` body.
        env: The runner's environment, on top of this process's.
    """

    def __init__(
        self,
        root: Path,
        *,
        token: str,
        hello: Callable[[], dict[str, Any]],
        on_request: RequestHandler,
        on_logs: Callable[[Any], None],
        on_progress: Callable[[Any], None],
        env: dict[str, str],
    ) -> None:
        self._root = root
        self._token = token
        self._hello = hello
        self._on_request = on_request
        self._on_logs = on_logs
        self._on_progress = on_progress
        self._env = env
        self._context: zmq.asyncio.Context | None = None
        self._socket: zmq.asyncio.Socket | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._server: asyncio.Task[None] | None = None
        self._peer: bytes | None = None
        self._ready: asyncio.Future[dict[str, Any]] | None = None
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._next_id = 0
        self.exit_reason = ""

    async def start(self, timeout: float) -> dict[str, Any]:
        """Spawn the runner and return its ready report (what loaded, what failed).

        Raises:
            RunnerStartError: the runner died or stalled before it was ready.
        """
        zmq = _import_zmq()
        self._context = zmq.asyncio.Context()
        self._socket = socket = self._context.socket(zmq.ROUTER)
        socket.setsockopt(zmq.LINGER, 0)
        socket.setsockopt(zmq.ROUTER_MANDATORY, 1)
        socket.bind(f"ipc://{self._root}/runner.sock" if zmq.has("ipc") else "tcp://127.0.0.1:*")
        self._ready = asyncio.get_running_loop().create_future()
        self._process = await self._spawn(socket.getsockopt_string(zmq.LAST_ENDPOINT))
        self._server = asyncio.create_task(self._serve())
        try:
            async with asyncio.timeout(timeout):
                return await self._ready
        except TimeoutError:
            raise RunnerStartError(
                f"the runner was not ready within {timeout:g} s{self._output_tail()}"
            ) from None

    async def request(
        self, method: wire.Method, body: Any, *, plugin: str | None = None, timeout: float
    ) -> Any:
        """Send a request and wait for its reply body.

        The runner is given ``timeout`` and the wait is one second longer, so that
        the runner's own, more precise, timeout answer normally arrives first.

        Raises:
            RefusedError: the runner answered with an error.
            RunnerCrashedError: the runner is gone.
            TimeoutError: no answer in time (the call is cancelled in the runner).
        """
        if self.exit_reason:
            raise RunnerCrashedError(self.exit_reason)
        self._next_id += 1
        request_id = self._next_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        deadline_ms = max(1, int(timeout * 1000))
        try:
            await self._send(
                wire.request(request_id, method, body, plugin=plugin, deadline_ms=deadline_ms)
            )
            async with asyncio.timeout(timeout + 1.0):
                return await future
        except TimeoutError:
            with contextlib.suppress(RunnerCrashedError):
                await self._send(wire.event("call.cancel", {"id": request_id}))
            raise
        finally:
            self._pending.pop(request_id, None)

    async def aclose(self) -> None:
        """Stop the runner, read its last log batch and release the socket."""
        try:
            await self._stop_runner()
        finally:
            if self._server is not None:
                self._server.cancel()
                (outcome,) = await asyncio.gather(self._server, return_exceptions=True)
                if isinstance(outcome, Exception):
                    log.error("the harness's receive loop failed: %r", outcome)
            if self._socket is not None:
                await self._drain_logs()
                self._socket.close(linger=0)
            if self._context is not None:
                self._context.term()

    async def _spawn(self, endpoint: str) -> asyncio.subprocess.Process:
        env = {**os.environ, **self._env}
        env.update(PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
        # The token travels in a pipe, as from the host: never in the environment.
        credentials, write_end = os.pipe()
        try:
            os.write(write_end, json.dumps({"token": self._token, "curve": None}).encode())
        finally:
            os.close(write_end)
        argv = ["--endpoint", endpoint, "--runner-id", "harness", "--parent-pid", str(os.getpid())]
        argv += ["--credentials-fd", str(credentials)]
        # The output file gets only what bypasses the runner's capture: crashes, faulthandler.
        try:
            with self._output_file().open("wb") as output:
                return await asyncio.create_subprocess_exec(
                    *(sys.executable, "-m", RUNNER_MODULE, *argv),
                    env=env,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=output,
                    stderr=asyncio.subprocess.STDOUT,
                    pass_fds=(credentials,),
                )
        finally:
            os.close(credentials)

    def _output_file(self) -> Path:
        return self._root / "runner-output.txt"

    def _output_tail(self) -> str:
        try:
            text = self._output_file().read_bytes()[-4000:].decode("utf-8", "replace")
        except OSError:
            return ""
        lines = [line for line in text.splitlines() if line.strip()][-12:]
        return ("; runner output:\n" + "\n".join(lines)) if lines else ""

    async def _stop_runner(self) -> None:
        """The ladder: ask (``runner.shutdown``), then SIGTERM, then SIGKILL."""
        process = self._process
        if process is None or process.returncode is not None:
            return
        if self._peer is not None and not self.exit_reason:
            try:
                await self.request("runner.shutdown", {"drain": 1.0}, timeout=5.0)
            except (RefusedError, RunnerCrashedError, TimeoutError) as exc:
                log.warning("the runner did not accept shutdown: %s", exc)
        for escalate in (None, process.terminate, process.kill):
            with contextlib.suppress(TimeoutError, ProcessLookupError):
                if escalate is not None:
                    escalate()
                async with asyncio.timeout(5.0 if escalate is None else 2.0):
                    await process.wait()
                return

    async def _serve(self) -> None:
        """Receive frames until cancelled; the runner's exit fails whatever still waits."""
        async with asyncio.TaskGroup() as group:
            group.create_task(self._watch_exit())
            while True:
                identity, envelopes = await self._receive()
                for envelope in envelopes:
                    self._dispatch(group, identity, envelope)

    def _dispatch(self, group: asyncio.TaskGroup, identity: bytes, envelope: wire.Envelope) -> None:
        if identity != self._peer:
            self._handshake(group, identity, envelope)
        elif envelope["kind"] == "response":
            self._resolve(envelope)
        elif envelope["kind"] == "request":
            group.create_task(self._answer(envelope))
        elif envelope["method"] == "log.batch":
            self._on_logs(envelope["body"])
        elif envelope["method"] == "progress":
            self._on_progress(envelope["body"])
        # Heartbeats need no answer: the harness does not watch for hangs.

    async def _receive(self) -> tuple[bytes, list[wire.Envelope]]:
        if self._socket is None:
            raise RuntimeError("the harness has no socket")
        parts = await self._socket.recv_multipart()
        try:
            if not 2 <= len(parts) <= 2 + wire.MAX_BLOBS:
                raise ProtocolError(
                    f"expected 2 to {2 + wire.MAX_BLOBS} frame parts, got {len(parts)}"
                )
            return parts[0], wire.decode_many(parts[1], parts[2:])
        except ProtocolError as exc:
            log.warning("dropped a frame from the runner: %s", exc)
            return parts[0], []

    async def _watch_exit(self) -> None:
        if self._process is None:
            return
        code = await self._process.wait()
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        self.exit_reason = f"the runner {how}{self._output_tail()}"
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(RunnerStartError(f"before it was ready, {self.exit_reason}"))
        for future in self._pending.values():
            if not future.done():
                future.set_exception(RunnerCrashedError(self.exit_reason))

    def _handshake(
        self, group: asyncio.TaskGroup, identity: bytes, envelope: wire.Envelope
    ) -> None:
        """Serve only a hello carrying this spawn's token and our protocol version."""
        body = envelope["body"] if isinstance(envelope["body"], dict) else {}
        token_ok = hmac.compare_digest(str(body.get("token", "")), self._token)
        if envelope["method"] != "runner.hello" or not token_ok or self._peer is not None:
            log.warning("ignored %s from a peer without this spawn's token", envelope["method"])
            return
        if body.get("protocol") != wire.PROTOCOL_VERSION:
            message = (
                f"the runner speaks protocol {body.get('protocol')!r}, this plughost-sdk "
                f"{wire.PROTOCOL_VERSION}; install matching plughost-sdk and plughost-runner"
            )
            error = wire.error_body("protocol_mismatch", message)
            group.create_task(self._send_quietly(wire.response(envelope, error=error), identity))
            return
        self._peer = identity
        group.create_task(self._send_quietly(wire.response(envelope, self._hello())))

    def _resolve(self, envelope: wire.Envelope) -> None:
        future = self._pending.get(envelope["id"])
        if future is None or future.done():
            return
        error = envelope["error"]
        if error is not None:
            future.set_exception(RefusedError(error["code"], error["message"]))
        else:
            future.set_result(envelope["body"])

    async def _answer(self, envelope: wire.Envelope) -> None:
        body = envelope["body"] if isinstance(envelope["body"], dict) else {}
        try:
            if envelope["method"] == "runner.ready":
                if self._ready is not None and not self._ready.done():
                    self._ready.set_result(body)
                reply = wire.response(envelope, {"ok": True})
            else:
                reply = wire.response(envelope, await self._on_request(envelope, body))
        except RefusedError as refused:
            reply = wire.response(envelope, error=refused.error)
        await self._send_quietly(reply)

    async def _drain_logs(self) -> None:
        """Read the last log batch, which the runner sends just before it exits."""
        while self._socket is not None and await self._socket.poll(timeout=50):
            identity, envelopes = await self._receive()
            for envelope in envelopes:
                if identity == self._peer and envelope["method"] == "log.batch":
                    self._on_logs(envelope["body"])

    async def _send(self, envelope: wire.Envelope, identity: bytes | None = None) -> None:
        """Send to the runner; zmq errors become RunnerCrashedError here, at the edge."""
        import zmq

        peer = identity or self._peer
        if self._socket is None or peer is None:
            raise RunnerCrashedError("the runner is not connected")
        try:
            await self._socket.send_multipart([peer, *wire.encode_parts(envelope)])
        except zmq.ZMQError as exc:
            raise RunnerCrashedError(f"cannot reach the runner: {exc}") from exc

    async def _send_quietly(self, reply: wire.Envelope, identity: bytes | None = None) -> None:
        """Send an answer; a runner that went away no longer needs it."""
        try:
            await self._send(reply, identity)
        except ProtocolError as exc:  # a stub returned something msgpack cannot carry
            message = f"the answer cannot be sent to the plugin: {exc}"
            await self._send_quietly(
                wire.response(reply, error=RefusedError("capability_failed", message).error)
            )
        except RunnerCrashedError as exc:
            log.debug("answer to %s not delivered: %s", reply["method"], exc)


def _import_zmq() -> Any:
    try:
        import zmq
        import zmq.asyncio
    except ImportError:
        raise RunnerStartError(
            "the test kit needs pyzmq; pip install 'plughost-sdk[testing]'"
        ) from None
    return zmq
