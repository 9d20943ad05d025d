"""UpstreamTap: tools/call requests sent to an upstream MCP server beside its SDK session.

A gateway call that needs nothing of the SDK's client session (see
:mod:`plughost.mcp.forwarding`) is written straight to the upstream's transport
and its answer taken off the transport's read stream before the session sees it.
The tap sits between the transport and :class:`mcp.Client`:

- :meth:`UpstreamTap.wrap` wraps the transport; its read stream passes every
  message on to the session, except the responses and progress notifications
  that answer a request the tap sent;
- :meth:`UpstreamTap.call` sends one ``tools/call`` under a fresh id of the
  tap's own (``plughost-<random>-<n>``, a string the SDK never issues) and
  waits for its outcome: the raw result, or the server's error as
  :class:`~mcp.MCPError`.

Nothing from the server is believed beyond that: a response whose id the tap did
not issue, or issued and already settled, goes to the session as before (which
drops ids it does not know); a response is delivered only to the call that sent
its id; a progress notification only to the call whose token it names, and only
with numeric fields. With ``on_log``, the server's ``notifications/message`` are
taken too, valid ones handed to it by the task that read them: a record the
server wrote before a result is then passed on before that result is delivered,
which the session's own task, a hop behind, could not promise. When the read
stream ends (the server died or closed), every waiting call fails with
``CONNECTION_CLOSED``, as the SDK's own requests do, and a call that is
cancelled (its client cancelled, or its deadline passed) tells the server with
``notifications/cancelled`` under the id the server saw.

What does not live here: deciding which calls go this way and answering the
client (:mod:`plughost.mcp.forwarding`); the transport itself
(:mod:`plughost.mcp.stdio`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import logging
import secrets
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel
import mcp_types as types
from mcp import Client, MCPError
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.message import SessionMessage
from mcp_types.methods import serialize_server_result
from pydantic import ValidationError
from pydantic_core import from_json, to_json

from plughost.mcp.stream_filters import FilteredReceive

__all__ = ["CONNECTION_ENDED", "Progress", "ProgressRelay", "UpstreamTap", "forwarded_call"]

log = logging.getLogger(__name__)

_CANCEL_WRITE_TIMEOUT = 2.0
# What every waiting call is settled with when the transport ends (this very object: an
# upstream's own CONNECTION_CLOSED answer is another, its message the upstream's).
CONNECTION_ENDED = types.ErrorData(code=types.CONNECTION_CLOSED, message="Connection closed")
# tools/call result fields of the 2026-07-28 revision, outside a handshake-era contract:
# dropped before validation, as the SDK's own session does.
_LATER_FIELDS = frozenset({"resultType", "inputRequests", "requestState"})
_RESULT = {"jsonrpc", "id", "result"}
_ERROR = {"jsonrpc", "id", "error"}


@dataclass(frozen=True, slots=True)
class Progress:
    """One ``notifications/progress`` of the server, for the call whose token it names."""

    progress: float
    total: float | None
    message: str | None


_Outcome = dict[str, Any] | types.ErrorData | Progress
ProgressRelay = ProgressFnT
LogHandler = Callable[[types.LoggingMessageNotificationParams], None]
"""Awaited with each report's progress, total and message (the SDK's progress callback)."""


class UpstreamTap:
    """One upstream connection's side channel for forwarded calls (see the module doc)."""

    def __init__(self, on_log: LogHandler | None = None) -> None:
        self._on_log = on_log
        self._prefix = f"plughost-{secrets.token_hex(4)}-"
        self._ids = itertools.count(1)
        self._waiting: dict[str, _Waiter | _Direct] = {}
        self._mark = f'"{self._prefix}'.encode()  # an id of the tap's, as it appears in JSON
        self._write: Any = None
        self._closed = False

    @property
    def live(self) -> bool:
        """Whether the transport is open, so a call can be sent."""
        return self._write is not None and not self._closed

    def wrap(self, transport: Any) -> contextlib.AbstractAsyncContextManager[Any]:
        """The transport, with its read stream filtered through this tap."""

        @contextlib.asynccontextmanager
        async def tapped() -> AsyncIterator[Any]:
            async with transport as streams:
                read, write = streams[0], streams[1]
                self._write = write
                if hasattr(write, "line_hook"):  # a stdio transport: lane answers by the line
                    write.line_hook = self.take_line
                try:
                    yield (FilteredReceive(read, self.claim, self.close), write, *streams[2:])
                finally:
                    self.close()

        return tapped()

    def close(self) -> None:
        """Fail every waiting call with ``CONNECTION_CLOSED``; no call is sent from now on."""
        self._closed = True
        for waiter in list(self._waiting.values()):
            waiter.put(CONNECTION_ENDED)

    async def call(self, params: Mapping[str, Any], relay: ProgressRelay | None) -> dict[str, Any]:
        """Send ``tools/call`` with ``params`` and return the server's raw result.

        With ``relay``, the request asks for progress and each report is awaited
        through ``relay`` in the order the server sent it, before the result.

        Raises:
            MCPError: The server answered with an error, or the connection closed
                (``CONNECTION_CLOSED``) before it answered.
        """
        if not self.live:
            raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed")
        request_id = f"{self._prefix}{next(self._ids)}"
        waiter = _Waiter()
        self._waiting[request_id] = waiter
        out = dict(params)
        meta = dict(out.pop("_meta", None) or {})
        if relay is not None:
            meta["progressToken"] = request_id  # as the SDK does: the id is the token
        if meta:
            out["_meta"] = meta
        request = types.JSONRPCRequest(
            jsonrpc="2.0", id=request_id, method="tools/call", params=out
        )
        written = False
        try:
            await anyio.lowlevel.checkpoint_if_cancelled()
            written = True  # a write interrupted by a cancel may still have reached the server
            try:
                await self._write.send(SessionMessage(request))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed") from None
            return await _outcome(waiter, relay)
        except anyio.get_cancelled_exc_class():
            if written and request_id in self._waiting:
                await self._cancel(request_id)
            raise
        finally:
            self._waiting.pop(request_id, None)

    def send_now(
        self, params: Mapping[str, Any], on_outcome: Callable[[object], None]
    ) -> str | None:
        """Write ``tools/call`` with ``params`` at once, for :mod:`plughost.mcp.direct_lane`.

        ``on_outcome`` is called once, by the task reading the server's output, with
        the raw result (a dict), the server's :class:`~mcp_types.ErrorData`, or
        :data:`CONNECTION_ENDED` when the transport ends first; it is never called
        after :meth:`cancel_now`. None when nothing was written: the transport
        cannot take a line without waiting (the call goes the task's way).
        """
        write_now = getattr(self._write, "write_now", None)
        if not self.live or write_now is None:
            return None
        request_id = f"{self._prefix}{next(self._ids)}"
        request = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        try:  # the bytes the session's writer makes of it (inf as null)
            line = to_json(request, inf_nan_mode="null")
        except ValueError:  # no JSON (a lone surrogate): the session's writer reports it
            return None
        if not write_now(line + b"\n", True):
            return None
        self._waiting[request_id] = _Direct(on_outcome)
        return request_id

    def cancel_now(self, request_id: str, reason: str) -> None:
        """Tell the server a call of :meth:`send_now` is abandoned; its answer is dropped."""
        if self._waiting.pop(request_id, None) is None or not self.live:
            return
        params = {"requestId": request_id, "reason": reason}
        line = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}
        self._write.write_now(to_json(line) + b"\n", False)

    def take_line(self, line: bytes) -> bool:
        """Deliver a line that answers a call of :meth:`send_now`; False passes it on.

        Only a well-formed response under an id the tap issued and still waits on is
        taken; anything else is parsed and checked as any message from the server.
        """
        if self._mark not in line:
            return False
        try:
            # the session's own parser: a line it refuses is never taken
            message = from_json(line, allow_inf_nan=False)
        except ValueError:  # the session's parser reports it
            return False
        if type(message) is not dict or message.get("jsonrpc") != "2.0":
            return False
        request_id = message.get("id")
        if type(request_id) is not str:
            return False
        waiter = self._waiting.get(request_id)
        if not isinstance(waiter, _Direct):
            return False
        outcome: _Outcome
        if message.keys() == _RESULT and type(message["result"]) is dict:
            outcome = message["result"]
        elif message.keys() == _ERROR:
            try:
                outcome = types.ErrorData.model_validate(message["error"], by_name=False)
            except ValidationError:
                return False
        else:
            return False
        del self._waiting[request_id]
        waiter.put(outcome)
        return True

    async def _cancel(self, request_id: str) -> None:
        """Tell the server a call it received is abandoned: shielded, and bounded."""
        notification = types.JSONRPCNotification(
            jsonrpc="2.0",
            method="notifications/cancelled",
            params={"requestId": request_id, "reason": "the caller cancelled the call"},
        )
        with anyio.move_on_after(_CANCEL_WRITE_TIMEOUT, shield=True):
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await self._write.send(SessionMessage(notification))

    def claim(self, message: types.JSONRPCMessage) -> bool:
        """Deliver ``message`` if it answers a call of this tap; False passes it on."""
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            request_id = message.id
            if not isinstance(request_id, str) or not request_id.startswith(self._prefix):
                return False
            waiter = self._waiting.get(request_id)
            if waiter is None:
                log.debug("mcp response for no call in progress dropped id=%s", request_id)
                return True  # an id of ours that is settled, or never was: nobody's answer
            outcome = (
                message.result if isinstance(message, types.JSONRPCResponse) else message.error
            )
            self._waiting.pop(request_id)
            waiter.put(outcome)
            return True
        if isinstance(message, types.JSONRPCNotification):
            if message.method == "notifications/progress":
                return self._progress(message.params or {})
            if message.method == "notifications/message" and self._on_log is not None:
                return self._log(self._on_log, message.params or {})
        return False

    @staticmethod
    def _log(on_log: LogHandler, params: Mapping[str, Any]) -> bool:
        try:
            record = types.LoggingMessageNotificationParams.model_validate(params, by_name=False)
        except ValidationError:
            return False  # the session drops it with a warning, as any malformed notification
        try:
            on_log(record)
        except Exception:
            log.exception("mcp log record handler failed")
        return True

    def _progress(self, params: Mapping[str, Any]) -> bool:
        token = params.get("progressToken")
        if not isinstance(token, str) or not token.startswith(self._prefix):
            return False
        waiter = self._waiting.get(token)
        report = _progress_of(params)
        if waiter is not None and report is not None:
            waiter.put(report)
        return True


async def forwarded_call(
    client: Client, tap: UpstreamTap, params: dict[str, Any], relay: ProgressRelay | None
) -> types.CallToolResult:
    """Send ``tools/call`` with ``params`` through ``tap``; checked as ``client.call_tool`` checks.

    The raw result is validated against the connection's protocol version, typed,
    and (unless it is an error) its structured content checked against the tool's
    output schema by the client's session, so a server's answer is believed no
    further than on the SDK's own path.

    Raises:
        MCPError: The server's error, or ``CONNECTION_CLOSED``.
        pydantic.ValidationError: The server's result is malformed.
        RuntimeError: The structured content does not match the output schema.
    """
    return await checked_result_later(client, params["name"], await tap.call(params, relay))


async def checked_result_later(
    client: Client, tool: str, raw: Mapping[str, Any]
) -> types.CallToolResult:
    """``raw`` checked as :func:`forwarded_call` checks it (which may list the tools first).

    Raises:
        pydantic.ValidationError: The result is malformed.
        RuntimeError: The structured content does not match the output schema.
    """
    result, _ = _checked(client, raw)
    if not result.is_error:
        await client.session.validate_tool_result(tool, result)
    return result


def checked_result(
    client: Client, tool: str, raw: Mapping[str, Any]
) -> tuple[types.CallToolResult, dict[str, Any] | None]:
    """``raw`` checked as :func:`forwarded_call` checks it, without awaiting.

    Only for a ``tool`` whose output schema the session knows (see
    :func:`output_checked_now`): its check then runs to the end at once.

    Returns:
        The result, and the answer as the check shaped it for the server's
        protocol version: what a client of that same version is sent (the
        direct lane writes it as it is). None in its place where the check had
        to change the answer first (fields of a later protocol, a negative
        ``ttlMs``).

    Raises:
        pydantic.ValidationError: The result is malformed.
        RuntimeError: The structured content does not match the output schema.
    """
    result, shaped = _checked(client, raw)
    if not result.is_error:
        check = client.session.validate_tool_result(tool, result)
        try:
            check.send(None)
        except StopIteration:
            return result, shaped
        check.close()
        raise RuntimeError(f"the output schema check of {tool} had to wait")
    return result, shaped


def output_checked_now(client: Client, tool: str) -> bool:
    """Whether the session knows ``tool``'s output schema (or that it has none)."""
    return tool in client.session._tool_output_schemas  # the SDK session's own cache


def _checked(
    client: Client, raw: Mapping[str, Any]
) -> tuple[types.CallToolResult, dict[str, Any] | None]:
    shaped: dict[str, Any] | None = serialize_server_result(
        "tools/call", client.protocol_version, raw
    )
    if not _LATER_FIELDS.isdisjoint(raw):
        raw, shaped = {key: value for key, value in raw.items() if key not in _LATER_FIELDS}, None
    ttl = raw.get("ttlMs")
    if isinstance(ttl, int | float) and not isinstance(ttl, bool) and ttl < 0:
        raw, shaped = {**raw, "ttlMs": 0}, None
    return types.CallToolResult.model_validate(raw, by_name=False), shaped


class _Direct:
    """A call of :meth:`UpstreamTap.send_now`: its outcome goes to a callback (no progress)."""

    __slots__ = ("_on_outcome",)

    def __init__(self, on_outcome: Callable[[object], None]) -> None:
        self._on_outcome = on_outcome

    def put(self, item: _Outcome) -> None:
        if not isinstance(item, Progress):
            self._on_outcome(item)


class _Waiter:
    """What the server sent for one call, in order: asyncio's, so a ready item costs no turn."""

    def __init__(self) -> None:
        self._items: collections.deque[_Outcome] = collections.deque()
        self._ready = asyncio.Event()

    def put(self, item: _Outcome) -> None:
        self._items.append(item)
        self._ready.set()

    async def get(self) -> _Outcome:
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        return self._items.popleft()


async def _outcome(waiter: _Waiter, relay: ProgressRelay | None) -> dict[str, Any]:
    while True:
        item = await waiter.get()
        if isinstance(item, Progress):
            if relay is not None:
                await relay(item.progress, item.total, item.message)
            continue
        if isinstance(item, types.ErrorData):
            raise MCPError(code=item.code, message=item.message, data=item.data)
        return item


def _progress_of(params: Mapping[str, Any]) -> Progress | None:
    progress, total, message = params.get("progress"), params.get("total"), params.get("message")
    if not isinstance(progress, int | float) or isinstance(progress, bool):
        return None
    return Progress(
        float(progress),
        float(total) if isinstance(total, int | float) and not isinstance(total, bool) else None,
        message if isinstance(message, str) else None,
    )
