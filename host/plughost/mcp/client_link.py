"""The MCP client behind a call: its log level, sampling and elicitation, for the plugin.

:class:`MCPClientLink` is the :class:`~plughost.tools.client_link.ClientLink` the
server sets around each ``tools/call`` (and resource read, prompt): a plugin's
log records during the call become ``notifications/message`` on the request's
stream, ``ctx.llm.generate`` becomes ``sampling/createMessage`` and ``ctx.elicit``
becomes ``elicitation/create``, each tied to the request (``related_request_id``).

Log level. A handshake-era client chooses it with ``logging/setLevel`` (kept per
connection; nothing is sent before the client sets one); a 2026-07-28 client
opts in per request with the ``io.modelcontextprotocol/logLevel`` ``_meta`` key.
Records are queued as they arrive and sent in order by one task; the queue is
drained before the call's result goes out, so a client sees a call's logs first.
It holds at most :data:`MAX_QUEUED_LOGS` records: while a client does not keep
up, the records past that are dropped and counted, and once the queue is drained
the client is told how many (an upstream server's records pass no rate limit, and
a client that stops reading must not make the host keep them all).

Sampling and elicitation need a client that declared the capability, a
protocol version that has the method (``sampling/createMessage`` exists in every
handshake-era version, 2024-11-05 on; ``elicitation/create`` from 2025-06-18),
and a channel that can carry a request from the server in the middle of a call.
A call waits on at most :data:`MAX_OPEN_REQUESTS` of its client's answers at a
time; one more request is refused at once (:func:`too_many_requests`), so an
upstream server that asks in a loop of its own cannot pile requests up on a
client that does not answer yet.
Every handshake-era version has one. A 2026-07-28 connection does not: its
requests for input travel as an ``input_required`` result that the client
answers by calling again, which the server serves for ``tools/call`` by parking
the plugin call between rounds (:mod:`plughost.mcp.input_rounds`, handed in as
``ask``); ``resources/read`` and ``prompts/get`` do not park. Otherwise
:class:`~plughost.tools.client_link.ClientRequestError` says which is missing,
and nothing is sent.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Final

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.connection import Connection, allowed_log_levels
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.jsonrpc import INVALID_PARAMS
from mcp_types.version import MODERN_PROTOCOL_VERSIONS, is_version_at_least
from pydantic import ValidationError

from plughost.mcp.asking import FormRefused, asked, checked_form, clean
from plughost.tools.client_link import ClientRequestError

__all__ = [
    "LOG_LEVELS",
    "MAX_OPEN_REQUESTS",
    "MAX_QUEUED_LOGS",
    "MCPClientLink",
    "asks_for_logs",
    "keep_log_level",
    "set_logging_level",
    "too_many_requests",
]

log = logging.getLogger(__name__)

LOG_LEVELS: Final[tuple[types.LoggingLevel, ...]] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
_LEVEL_KEY = "plughost.log_level"
_SINCE = {"sampling": "2024-11-05", "elicitation": "2025-06-18"}  # the method's first version
_DRAIN_TIMEOUT = 2.0
MAX_OPEN_REQUESTS: Final = 16
"""How many requests to its client one call may wait on at a time."""
MAX_QUEUED_LOGS: Final = 4096
"""Records of one call waiting for its client; twice a runner's burst at its default rate."""

Ask = Callable[[types.CreateMessageRequest | types.ElicitRequest], Awaitable[Mapping[str, Any]]]
"""Asks a 2026-07-28 client through an ``input_required`` round; returns its raw response."""


def _mcp_level(levelno: int) -> types.LoggingLevel:
    if levelno >= logging.CRITICAL:
        return "critical"
    if levelno >= logging.ERROR:
        return "error"
    if levelno >= logging.WARNING:
        return "warning"
    if levelno >= logging.INFO:
        return "info"
    return "debug"


async def set_logging_level(
    ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
) -> types.EmptyResult:
    """``logging/setLevel``: remember the level for the client's connection."""
    connection = getattr(ctx.session, "_connection", None)  # private in SDK 2.3
    if params.level not in LOG_LEVELS:
        raise MCPError(INVALID_PARAMS, f"unknown log level {params.level!r}")
    if connection is not None:
        keep_log_level(connection, params.level)
    return types.EmptyResult()


def keep_log_level(connection: Connection, level: types.LoggingLevel) -> None:
    """Remember ``level`` as the one the client of ``connection`` chose."""
    connection.state[_LEVEL_KEY] = level


class MCPClientLink:
    """What a plugin call may ask of the MCP client that made it (see the module doc)."""

    def __init__(
        self,
        ctx: ServerRequestContext[Any],
        *,
        ask: Ask | None = None,
        tool: str = "",
        client: object | None = None,
    ) -> None:
        """``tool`` is the tool the client called, named when the user is asked anything.

        ``client`` is who made the call, as the server that took it knows: the links
        of one client's calls share it. By default the link stands for itself (each
        call its own client), which is never wrong, only cautious.
        """
        self.client: object = self if client is None else client
        self._ctx = ctx
        self._ask = ask
        self._tool = tool
        self._levels = _allowed_levels(ctx)
        self._queue: MemoryObjectSendStream[types.LoggingMessageNotification] | None = None
        self._dropped = 0
        self._open = 0  # requests to the client awaiting its answer
        self._finished = False

    def serving(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Send queued log records while inside; on the way out, send what is left first.

        After it, the call is over: a late request through the link is refused.
        """
        return _Serving(self)

    def _served(self) -> None:
        """The call is over (after its logs were sent): refuse what comes late."""
        self._finished = True

    @contextlib.asynccontextmanager
    async def _logs(self) -> AsyncIterator[None]:
        send, receive = anyio.create_memory_object_stream[types.LoggingMessageNotification](
            MAX_QUEUED_LOGS
        )
        self._queue = send
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._send_logs, receive)
            try:
                yield
            finally:
                self._queue = None
                send.close()  # the sender drains what is queued, then ends the group
                tg.cancel_scope.deadline = anyio.current_time() + _DRAIN_TIMEOUT

    def rebind(self, ctx: ServerRequestContext[Any]) -> None:
        """Follow the call to the client's next request (a 2026-07-28 retry): logs go there."""
        self._ctx = ctx

    def log(self, level: int, logger: str, message: str) -> None:
        """Queue a record as ``notifications/message`` if the client wants its level."""
        mcp_level = _mcp_level(level)
        if self._queue is None or mcp_level not in self._levels:
            return
        params = types.LoggingMessageNotificationParams(
            level=mcp_level, logger=logger, data=message
        )
        try:
            self._queue.send_nowait(types.LoggingMessageNotification(params=params))
        except anyio.WouldBlock:
            self._dropped += 1
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    async def _send_logs(
        self, notifications: MemoryObjectReceiveStream[types.LoggingMessageNotification]
    ) -> None:
        async with notifications:
            async for notification in notifications:
                if not await self._send_log(notification):
                    return
                if self._dropped and not notifications.statistics().current_buffer_used:
                    await self._send_log(self._dropped_note())

    def _dropped_note(self) -> types.LoggingMessageNotification:
        dropped, self._dropped = self._dropped, 0
        text = (
            f"plughost dropped {dropped} log records of this call: "
            "the client did not take them as fast as they came"
        )
        # warning, unless the client asked for fewer: then the lowest it takes
        level = "warning" if "warning" in self._levels else min(self._levels, key=LOG_LEVELS.index)
        params = types.LoggingMessageNotificationParams(level=level, logger="plughost", data=text)
        return types.LoggingMessageNotification(params=params)

    async def _send_log(self, notification: types.LoggingMessageNotification) -> bool:
        try:
            await self._ctx.session.send_notification(
                notification, related_request_id=self._ctx.request_id
            )
        except Exception as exc:  # the client left: the call goes on without logs
            log.debug("mcp log notification not sent reason=%r", exc)
            return False
        return True

    async def generate(self, request: dict[str, Any]) -> dict[str, Any]:
        """Ask the client's model through ``sampling/createMessage``."""
        self._require(types.ClientCapabilities(sampling=types.SamplingCapability()), "sampling")
        params = _sampling_params(request)
        message = types.CreateMessageRequest(params=params)
        result = await self._send(message, types.CreateMessageResult, "sampling/createMessage")
        content = result.content
        text = content.text if isinstance(content, types.TextContent) else ""
        return {
            "text": text,
            "model": result.model,
            "stop_reason": result.stop_reason,
            "role": result.role,
        }

    async def elicit(self, asker: str, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        """Ask the client's user through ``elicitation/create`` (form mode).

        The user sees who asks before what (:mod:`plughost.mcp.asking`).
        """
        capability = types.ClientCapabilities(elicitation=types.ElicitationCapability())
        self._require(capability, "elicitation")
        try:
            form = checked_form(schema)
        except FormRefused as exc:
            raise ClientRequestError(f"{clean(asker, 200)}'s form was not shown: {exc}") from None
        params = types.ElicitRequestFormParams(
            message=asked(asker, self._tool, message), requested_schema=form
        )
        request = types.ElicitRequest(params=params)
        result = await self._send(request, types.ElicitResult, "elicitation/create")
        return {"action": result.action, "content": result.content}

    def _require(self, capability: types.ClientCapabilities, name: str) -> None:
        if self._finished:
            raise ClientRequestError(f"the MCP call this {name} request belongs to has finished")
        session = self._ctx.session
        if not session.check_client_capability(capability):
            raise ClientRequestError(
                f"the MCP client did not offer {name} (it declares no '{name}' capability)"
            )
        version = session.protocol_version
        if self._ask is not None:
            return  # a 2026-07-28 tools/call: asked through an input_required round
        if version in MODERN_PROTOCOL_VERSIONS or not session.can_send_request:
            raise ClientRequestError(
                f"the MCP client offers {name}, but its connection (protocol {version}) "
                "cannot carry a request from the server in the middle of this request "
                "(2026-07-28 clients are asked only during tools/call); connect with the "
                "initialize handshake (protocol 2025-11-25 or earlier)"
            )
        if not is_version_at_least(version, _SINCE[name]):
            raise ClientRequestError(
                f"the MCP client offers {name}, but its protocol {version} has no "
                f"{name} requests (they exist from protocol {_SINCE[name]} on)"
            )

    async def _send(self, request: Any, result_type: Any, method: str) -> Any:
        if self._open >= MAX_OPEN_REQUESTS:
            raise too_many_requests()
        self._open += 1
        try:
            return await self._answer(request, result_type, method)
        finally:
            self._open -= 1

    async def _answer(self, request: Any, result_type: Any, method: str) -> Any:
        if self._ask is not None:
            response = await self._ask(request)
            try:
                return result_type.model_validate(response)
            except ValidationError as exc:
                raise _malformed(method, exc) from None
        metadata = ServerMessageMetadata(related_request_id=self._ctx.request_id)
        try:
            return await self._ctx.session.send_request(request, result_type, metadata=metadata)
        except MCPError as exc:
            raise ClientRequestError(
                f"the MCP client refused {method}: {exc.error.message}"
            ) from None
        except ValidationError as exc:  # the session checks the answer against the method
            raise _malformed(method, exc) from None


class _Serving:
    """:meth:`MCPClientLink.serving`: the log sender while inside, then the call's end.

    Entered once per call: a plain class, since most calls send no logs and need
    nothing of a generator's set-up.
    """

    __slots__ = ("_link", "_logs")

    def __init__(self, link: MCPClientLink) -> None:
        self._link = link
        self._logs: contextlib.AbstractAsyncContextManager[None] | None = None

    async def __aenter__(self) -> None:
        if self._link._levels:  # the client asked for logs: a task sends them
            logs = self._link._logs()
            await logs.__aenter__()
            self._logs = logs

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        try:
            if self._logs is not None:
                return await self._logs.__aexit__(exc_type, exc, tb)
            return None
        finally:
            self._link._served()


def too_many_requests() -> ClientRequestError:
    """The refusal of a request past :data:`MAX_OPEN_REQUESTS` of one call."""
    return ClientRequestError(
        f"the MCP call already waits for {MAX_OPEN_REQUESTS} answers from its "
        "client; it is asked nothing more until one comes"
    )


def _malformed(method: str, exc: ValidationError) -> ClientRequestError:
    return ClientRequestError(
        f"the MCP client answered {method} with a malformed response: {exc.errors()[0]['msg']}"
    )


def _sampling_params(request: dict[str, Any]) -> types.CreateMessageRequestParams:
    messages = [
        types.SamplingMessage(
            role="assistant" if m.get("role") == "assistant" else "user",
            content=types.TextContent(text=str(m.get("content", ""))),
        )
        for m in request.get("messages", [])
    ]
    hint = request.get("model_hint")
    preferences = types.ModelPreferences(hints=[types.ModelHint(name=str(hint))]) if hint else None
    return types.CreateMessageRequestParams(
        messages=messages,
        max_tokens=int(request.get("max_tokens", 1024)),
        system_prompt=request.get("system_prompt"),
        temperature=request.get("temperature"),
        stop_sequences=request.get("stop_sequences"),
        model_preferences=preferences,
    )


def asks_for_logs(connection: Connection) -> bool:
    """Whether a handshake-era client set a log level on ``connection``: its calls send records."""
    return connection.state.get(_LEVEL_KEY) in LOG_LEVELS


def _allowed_levels(ctx: ServerRequestContext[Any]) -> frozenset[str]:
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return frozenset(allowed_log_levels(ctx.protocol_version, ctx.meta))
    connection = getattr(ctx.session, "_connection", None)
    level = connection.state.get(_LEVEL_KEY) if connection is not None else None
    if level not in LOG_LEVELS:
        return frozenset()
    return frozenset(LOG_LEVELS[LOG_LEVELS.index(level) :])
