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
- the client declared neither ``sampling`` nor ``elicitation`` and never sent
  ``logging/setLevel``: nothing can be asked of it mid-call, and no log record
  would be sent to it (upstream servers and plugins that ask get the refusal the
  server's own link gives, word for word);
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

from plughost.mcp.content import result_to_mcp
from plughost.mcp.registry_server import RegistryMCPServer, Reporter
from plughost.mcp.stream_filters import FilteredReceive, WatchedSend
from plughost.tools import progress
from plughost.tools.client_link import ClientRequestError
from plughost.tracing import tracing

__all__ = ["CallForwarder"]

log = logging.getLogger(__name__)

_PARAMS = frozenset({"name", "arguments", "_meta"})
_ASKING = ("sampling", "elicitation")


class CallForwarder:
    """Takes the ``tools/call`` requests of one stdio client that the session need not see.

    Args:
        bridge: The server whose calls these are.
    """

    def __init__(self, bridge: RegistryMCPServer) -> None:
        self._bridge = bridge
        self._write: Any = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._initialize_id: types.RequestId | None = None
        self._version: str | None = None
        self._quiet_client = True  # offers nothing to ask, wants no logs
        self._calls: dict[types.RequestId, anyio.CancelScope] = {}
        self.forwarded = 0
        """Calls answered here so far."""

    @contextlib.asynccontextmanager
    async def serving(self, read_stream: Any, write_stream: Any) -> AsyncIterator[tuple[Any, Any]]:
        """Yield the (read, write) pair to hand the server; calls taken run while inside."""
        self._write = write_stream
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                yield FilteredReceive(read_stream, self.take), WatchedSend(write_stream, self.sent)
            finally:
                self._tg = None
                tg.cancel_scope.cancel()

    # --- what passes, what is taken -------------------------------------------------------

    def take(self, message: types.JSONRPCMessage) -> bool:
        """Start answering ``message`` here if it is a call to take; False passes it on."""
        if isinstance(message, types.JSONRPCNotification):
            return message.method == "notifications/cancelled" and self._cancel(message.params)
        if not isinstance(message, types.JSONRPCRequest):
            return False
        if message.method == "initialize":
            self._initialized(message)
            return False
        if message.method == "logging/setLevel":
            self._quiet_client = False  # from now on its calls may log to it: the server's
            return False
        if message.method != "tools/call" or self._tg is None or not self._takes(message.params):
            return False
        params = message.params or {}
        scope = anyio.CancelScope()
        self._calls[message.id] = scope
        self.forwarded += 1
        log.debug("mcp call answered beside the session tool=%s id=%s", params["name"], message.id)
        self._tg.start_soon(self._answer, message.id, params, scope)
        return True

    def sent(self, message: types.JSONRPCMessage) -> None:
        """Note the server's answer to ``initialize``: the protocol version it settled on."""
        if (
            isinstance(message, types.JSONRPCResponse)
            and self._initialize_id is not None
            and message.id == self._initialize_id
        ):
            version = message.result.get("protocolVersion")
            self._version = version if isinstance(version, str) else None

    def _initialized(self, request: types.JSONRPCRequest) -> None:
        self._initialize_id = request.id
        self._version = None
        capabilities = (request.params or {}).get("capabilities")
        offers = capabilities if isinstance(capabilities, Mapping) else {}
        self._quiet_client = not any(offers.get(name) is not None for name in _ASKING)

    def _takes(self, params: Mapping[str, Any] | None) -> bool:
        version = self._version
        if version is None or version in MODERN_PROTOCOL_VERSIONS or not self._quiet_client:
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

    def _cancel(self, params: Mapping[str, Any] | None) -> bool:
        request_id = (params or {}).get("requestId")
        scope = self._calls.get(request_id) if isinstance(request_id, str | int) else None
        if scope is None:
            return False
        scope.cancel()
        return True

    # --- answering ------------------------------------------------------------------------

    async def _answer(
        self, request_id: types.RequestId, params: Mapping[str, Any], scope: anyio.CancelScope
    ) -> None:
        meta = params.get("_meta") or {}
        token = meta.get("progressToken")
        report = None if token is None else self._reporter(token)
        try:
            with self._bridge.calls, scope:
                try:
                    result = await self._bridge.run_call(
                        params["name"],
                        params.get("arguments"),
                        str(request_id),
                        _QuietLink(),
                        report,
                    )
                    message = self._response(request_id, result_to_mcp(result))
                except Exception as exc:  # run_call turns faults into results: a bug of ours
                    log.exception("mcp tool call failed beside the session")
                    error = types.ErrorData(code=types.INTERNAL_ERROR, message=str(exc))
                    message = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
                await self._send(message)
        finally:
            if self._calls.get(request_id) is scope:  # a reused id may belong to a newer call
                del self._calls[request_id]

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


class _QuietLink:
    """The link of a client that offers nothing to ask and set no log level.

    It refuses as :class:`~plughost.mcp.client_link.MCPClientLink` refuses such a
    client, word for word, and drops log records as it does.
    """

    def __init__(self) -> None:
        self._finished = False

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        try:
            yield
        finally:
            self._finished = True

    def log(self, level: int, logger: str, message: str) -> None:
        return None

    async def generate(self, request: dict[str, Any]) -> dict[str, Any]:
        raise self._refusal("sampling")

    async def elicit(self, asker: str, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        raise self._refusal("elicitation")

    def _refusal(self, name: str) -> ClientRequestError:
        if self._finished:
            return ClientRequestError(f"the MCP call this {name} request belongs to has finished")
        return ClientRequestError(
            f"the MCP client did not offer {name} (it declares no '{name}' capability)"
        )
