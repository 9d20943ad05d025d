"""CallForwarder: an MCP client's ``tools/call`` answered beside the SDK's server session.

``plughost serve --mcp-stdio`` puts a :class:`CallForwarder` between its stdio
transport and the SDK's server. Most messages pass through to the server; a
``tools/call`` that asks nothing of the SDK's session is taken off the stream and
answered here: the call runs on the registry exactly as the server's handler runs
it (:meth:`~plughost.mcp.registry_server.RegistryMCPServer.run_call`: arguments
checked, visibility, events, metrics, shutdown), and its result is serialized
for the client's protocol version as the server would (the per-version surface,
so a field the client's version lacks never reaches it), then written under the
client's request id. What is skipped is the session's own per-request machinery.

A call is taken only when the session could add nothing, decided per call:

- the client did the ``initialize`` handshake and its answer went out (a
  2026-07-28 client, which may be asked in rounds, is always left to the server);
- whatever the client offers: what a plugin or an upstream server asks of it
  mid-call, and the log records it chose a level for, go to it through the
  :class:`~plughost.mcp.client_relay.ClientRelay`, checked as the server's own
  link checks them;
- no ``logging/setLevel`` of the client awaits its answer (the session's handler
  keeps the level before it runs a call read after it; one taken here would not
  see it);
- the params hold only ``name``, ``arguments`` (an object) and at most a
  ``progressToken`` in ``_meta``;
- the program does not trace with OpenTelemetry (the server's spans stay).

Progress reports go out as ``notifications/progress`` under the client's token,
in order, before the result. A ``notifications/cancelled`` naming a call taken
here cancels it (the cancel travels to the runner or the upstream server) and the
call is never answered, as the spec asks. Every call taken here is counted in
:attr:`CallForwarder.forwarded`, and while it runs in the server's call counter,
so a shutdown waits for it.

What does not live here: the upstream side of a gateway call
(:mod:`plughost.mcp.upstream_tap`), the server's handlers
(:mod:`plughost.mcp.registry_server`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp.shared.message import SessionMessage
from mcp_types.methods import serialize_server_result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from plughost.mcp.client_relay import ClientRelay
from plughost.mcp.content import result_to_mcp
from plughost.mcp.direct_lane import DirectLane
from plughost.mcp.registry_server import RegistryMCPServer, Reporter, ServedLink
from plughost.mcp.stdio_server import PipeWriter
from plughost.mcp.stream_filters import FilteredReceive, WatchedSend
from plughost.tools import progress
from plughost.tracing import tracing

__all__ = ["CallForwarder"]

log = logging.getLogger(__name__)

_PARAMS = frozenset({"name", "arguments", "_meta"})


class CallForwarder:
    """Takes the ``tools/call`` requests of one stdio client that the session need not see.

    Args:
        bridge: The server whose calls these are.
    """

    def __init__(self, bridge: RegistryMCPServer) -> None:
        self._bridge = bridge
        self._write: Any = None
        self._serving = False
        self._initialize_id: types.RequestId | None = None
        self._version: str | None = None
        self._relay: ClientRelay | None = None
        self._lane: DirectLane | None = None
        self._calls: dict[types.RequestId, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.forwarded = 0
        """Calls answered here so far."""

    @contextlib.asynccontextmanager
    async def serving(self, read_stream: Any, write_stream: Any) -> AsyncIterator[tuple[Any, Any]]:
        """Yield the (read, write) pair to hand the server; calls taken run while inside.

        Each call taken runs in a task of its own, owned here as a task group owns
        its tasks: on the way out, the calls still running are cancelled and
        waited for. They are asyncio's tasks, which start at a fifth of the cost of
        a task group's, on the path of every call.
        """
        self._write = write_stream
        self._relay = relay = ClientRelay(write_stream, self._bridge.client_of(None))
        if isinstance(write_stream, PipeWriter):  # the client's pipes: the lane reads its lines
            self._lane = DirectLane(
                self._bridge,
                relay,
                self._takes,
                self._response,
                lambda: self._version,
                write_stream.write_now,
                self._took,
            )
            write_stream.line_hook = self._lane.take_line
        self._serving = True
        try:
            receive = FilteredReceive(read_stream, self.take, relay.close)
            yield receive, WatchedSend(write_stream, self.sent)
        finally:
            self._serving = False
            if self._lane is not None:
                write_stream.line_hook = None
                self._lane.close()
            with anyio.CancelScope(shield=True):
                await self._ended()

    async def _ended(self) -> None:
        """Cancel the calls still running and wait for them to end."""
        while self._tasks:
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks)

    # --- what passes, what is taken -------------------------------------------------------

    def take(self, message: types.JSONRPCMessage) -> bool:
        """Start answering ``message`` here if it is a call to take; False passes it on."""
        relay = self._relay
        if isinstance(message, types.JSONRPCNotification):
            if message.method == "notifications/initialized" and relay is not None:
                relay.initialized()
            return message.method == "notifications/cancelled" and self._cancel(message.params)
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            return relay is not None and relay.claim(message)  # the relay's, or the session's
        if message.method == "initialize":
            self._initialized(message)
            return False
        if message.method == "logging/setLevel":
            if relay is not None:
                relay.asked_level(message)  # the server answers it; the relay sees the answer
            return False
        if message.method != "tools/call" or not self._serving or not self._takes(message.params):
            return False
        params = message.params or {}
        request_id = message.id
        self.forwarded += 1
        log.debug("mcp call answered beside the session tool=%s id=%s", params["name"], request_id)
        task = asyncio.get_running_loop().create_task(self._answer(request_id, params))
        self._calls[request_id] = task
        self._tasks.add(task)

        def ended(task: asyncio.Task[None]) -> None:
            self._tasks.discard(task)
            if self._calls.get(request_id) is task:  # a reused id may belong to a newer call
                del self._calls[request_id]
            if not task.cancelled() and task.exception() is not None:
                log.error("mcp call beside the session failed", exc_info=task.exception())

        task.add_done_callback(ended)
        return True

    def sent(self, message: types.JSONRPCMessage) -> None:
        """Note the server's answers to ``initialize`` (its version) and ``logging/setLevel``."""
        if self._relay is not None:
            self._relay.answered(message)
        if (
            isinstance(message, types.JSONRPCResponse)
            and self._initialize_id is not None
            and message.id == self._initialize_id
        ):
            version = message.result.get("protocolVersion")
            self._version = version if isinstance(version, str) else None
            if self._version is not None and self._relay is not None:
                self._relay.settled(self._version)

    def _initialized(self, request: types.JSONRPCRequest) -> None:
        self._initialize_id = request.id
        self._version = None
        if self._relay is not None:
            self._relay.introduced(request.params)

    def _takes(self, params: Mapping[str, Any] | None) -> bool:
        version = self._version
        if version is None or version in MODERN_PROTOCOL_VERSIONS or self._relay is None:
            return False
        if self._relay.setting_level:  # the session orders the call after the level
            return False
        if params is None or not _PARAMS.issuperset(params) or tracing():
            return False
        arguments = params.get("arguments")
        if not isinstance(params.get("name"), str) or not isinstance(arguments, dict | None):
            return False
        meta = params.get("_meta")
        if meta is None:
            return True
        return isinstance(meta, Mapping) and set(meta) <= {"progressToken"} and _token(meta)

    def _took(self) -> None:
        self.forwarded += 1

    def _cancel(self, params: Mapping[str, Any] | None) -> bool:
        request_id = (params or {}).get("requestId")
        if self._lane is not None and self._lane.cancel(request_id):
            return True
        task = self._calls.get(request_id) if isinstance(request_id, str | int) else None
        if task is None:
            return False
        task.cancel()  # the call ends unanswered; the cancel reaches the runner or upstream
        return True

    # --- answering ------------------------------------------------------------------------

    async def _answer(self, request_id: types.RequestId, params: Mapping[str, Any]) -> None:
        meta = params.get("_meta") or {}
        token = meta.get("progressToken")
        report = None if token is None else self._reporter(token)
        with self._bridge.calls:
            try:
                result = await self._bridge.run_call(
                    params["name"],
                    params.get("arguments"),
                    str(request_id),
                    self._link(request_id, params["name"]),
                    report,
                )
                message = self._response(request_id, result_to_mcp(result))
            except Exception as exc:  # run_call turns faults into results: a bug of ours
                log.exception("mcp tool call failed beside the session")
                error = types.ErrorData(code=types.INTERNAL_ERROR, message=str(exc))
                message = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
            await self._send(message)

    def _response(
        self, request_id: types.RequestId, result: types.CallToolResult
    ) -> types.JSONRPCResponse | types.JSONRPCError:
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        try:
            shaped = serialize_server_result("tools/call", self._version or "", dumped)
        except ValidationError:
            log.exception("mcp tool call returned an invalid result")
            error = types.ErrorData(
                code=types.INTERNAL_ERROR, message="Handler returned an invalid result"
            )
            return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
        return types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=shaped)

    def _link(self, request_id: types.RequestId, tool: str) -> ServedLink:
        if self._relay is None:  # taken only while serving, where there is one
            raise RuntimeError("a call was taken outside CallForwarder.serving")
        return self._relay.link(request_id, tool)

    def _reporter(self, token: types.ProgressToken) -> Reporter:
        async def report(report: progress.Progress) -> None:
            params: dict[str, Any] = {"progressToken": token, "progress": report.progress}
            if report.total is not None:
                params["total"] = report.total
            if report.message is not None:
                params["message"] = report.message
            await self._send(
                types.JSONRPCNotification(
                    jsonrpc="2.0", method="notifications/progress", params=params
                )
            )

        return report

    async def _send(self, message: types.JSONRPCMessage) -> None:
        try:
            await self._write.send(SessionMessage(message))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            log.debug("mcp answer dropped: the client's stream is closed")


def _token(meta: Mapping[str, Any]) -> bool:
    token = meta.get("progressToken")
    return isinstance(token, str | int) and not isinstance(token, bool)
