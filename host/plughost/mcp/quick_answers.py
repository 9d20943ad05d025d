"""Quick answers: a request answered at once gets one JSON body; only a slower one gets a stream.

The SDK's streamable HTTP transport answers every request ``POST`` with an SSE
stream, built before the request is dispatched: a task group, an
``EventSourceResponse`` with its own tasks, a priming event. That stream is what
carries a call's progress, its logs and the server's own requests (sampling,
elicitation), and what a client that lost the connection resumes with
``Last-Event-ID``. But most requests stream nothing: ``tools/list``, a quick tool
call. For them the stream costs the server its tasks, the client an SSE parser,
and both a new connection per request (a client stops reading once it has the
answer, before the stream's last chunk, so the connection cannot be reused).

:class:`QuickAnswersTransport` decides per request, before it builds anything. It
stores the priming event and dispatches the request, then waits up to
:data:`QUICK_WINDOW` seconds for the first event of the request's own stream.
When that is the answer, it goes out as one ``application/json`` body (which the
specification lets a server choose for any request), and the priming event and
the answer are dropped from the event store: the client never saw either id, so
nothing can resume them. When something else comes first (a progress
notification, a log, a question to the client), or the window passes, the SSE
stream starts as the SDK's would: the priming event first (stored before the
request ran, so a resume from it replays everything after), then every event of
the request, ending with its answer.

Everything else is the SDK's own path: ``initialize``, notifications and responses
from the client, a ``GET`` stream, ``DELETE``, and any request the SDK would refuse
(wrong headers, a bad body, a foreign session id), which the SDK answers with its
usual error. 2026-07-28 requests never reach this transport (the SDK serves them
statelessly, deciding JSON or SSE the same way).

The transport overrides private members of the SDK, which
tests/host/mcp/test_quick_answers.py pins (naming the SDK version when they move);
host/pyproject.toml bounds the SDK to the minor versions checked.

What does not live here: the event store (:mod:`plughost.mcp.event_store`) and
serving (:mod:`plughost.mcp.server`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from functools import partial
from typing import Any, Final

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http import (
    CONTENT_TYPE_JSON,
    CONTENT_TYPE_SSE,
    MCP_SESSION_ID_HEADER,
    REQUEST_STREAM_BUFFER_SIZE,
    EventMessage,
    SSEEvent,
    StreamableHTTPServerTransport,
    check_accept_headers,
)
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from plughost.mcp.event_store import MemoryEventStore, SessionEvents

__all__ = [
    "QUICK_WINDOW",
    "QuickAnswersSessionManager",
    "QuickAnswersTransport",
    "quick_answers_app",
]

log = logging.getLogger(__name__)

QUICK_WINDOW: Final = 0.1
"""Seconds a request's answer may take to go out as one JSON body; past them, it streams."""

# Put on a request's own stream when its window passes with nothing said, so the wait
# ends without a cancellation (which could lose an event handed over at that moment).
_WINDOW_PASSED: Final = EventMessage(JSONRPCNotification(jsonrpc="2.0", method="window-passed"))
_SSE_HEADERS: Final = {
    "Cache-Control": "no-cache, no-transform",
    "Connection": "keep-alive",
    "Content-Type": CONTENT_TYPE_SSE,
}
_LOOPBACK_HOSTS: Final = ("127.0.0.1", "localhost", "::1")


def quick_answers_app(
    server: Server[Any],
    *,
    path: str,
    host: str,
    event_store: MemoryEventStore,
    retry_interval: int,
    session_idle_timeout: float | None,
    max_sessions: int | None,
    window: float = QUICK_WINDOW,
) -> Starlette:
    """Serve ``server`` over streamable HTTP at ``path``, each request answered as JSON or SSE.

    On a loopback ``host`` foreign ``Host`` and ``Origin`` headers are refused
    (DNS rebinding protection), as the SDK's own app does.
    """
    security = None
    if host in _LOOPBACK_HOSTS:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    manager = QuickAnswersSessionManager(
        server,
        event_store=event_store,
        security_settings=security,
        retry_interval=retry_interval,
        session_idle_timeout=session_idle_timeout,
        max_sessions=max_sessions,
        window=window,
    )
    return Starlette(
        routes=[Route(path, endpoint=StreamableHTTPASGIApp(manager))],
        lifespan=lambda _app: manager.run(),
    )


class QuickAnswersSessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager, whose sessions' transports are :class:`QuickAnswersTransport`."""

    def __init__(self, app: Server[Any], *, window: float = QUICK_WINDOW, **options: Any) -> None:
        super().__init__(app, **options)
        self.window = window

    def _admit_session(
        self, requestor: AuthorizationContext | None
    ) -> StreamableHTTPServerTransport | None:
        transport = super()._admit_session(requestor)
        if transport is not None:
            # The SDK builds the transport by name; the subclass only overrides methods,
            # so the built one becomes it with everything the SDK set up kept.
            transport.__class__ = QuickAnswersTransport
            transport.quick_window = self.window  # type: ignore[attr-defined]
            # Request ids name the SDK's streams and every session counts from 1: each
            # session stores and resumes only its own streams.
            if isinstance(self.event_store, MemoryEventStore) and transport.mcp_session_id:
                transport._event_store = self.event_store.session(transport.mcp_session_id)
        return transport


class QuickAnswersTransport(StreamableHTTPServerTransport):
    """A session's transport that sends a quick answer as JSON and streams the rest."""

    quick_window: float = QUICK_WINDOW

    async def _handle_post_request(
        self, scope: Scope, request: Request, receive: Receive, send: Send
    ) -> None:
        message = await self._plain_request(request)
        if message is None:  # the SDK's path: what it refuses, it refuses as it always did
            await super()._handle_post_request(scope, request, receive, send)
            return
        await self._answer(message, request, scope, receive, send)

    async def _plain_request(self, request: Request) -> JSONRPCRequest | None:
        """The request this POST carries, when the SDK would dispatch it as it is; else None."""
        has_json, has_sse = check_accept_headers(request)
        if not (has_json and has_sse) or not self._check_content_type(request):
            return None
        session = request.headers.get(MCP_SESSION_ID_HEADER)
        if self.mcp_session_id is None or session != self.mcp_session_id:
            return None
        try:
            message = jsonrpc_message_adapter.validate_json(await request.body(), by_name=False)
        except ValidationError:  # the SDK says what is wrong with it
            return None
        if not isinstance(message, JSONRPCRequest) or message.method == "initialize":
            return None
        return message

    async def _answer(
        self, message: JSONRPCRequest, request: Request, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """Dispatch ``message``; answer as JSON if its answer comes first and soon, else stream."""
        writer = self._read_stream_writer
        if writer is None:
            raise RuntimeError("the transport serves requests only once connected")
        request_id = str(message.id)
        version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER, DEFAULT_NEGOTIATED_VERSION)
        priming = await self._mint_priming_event(request_id, version)
        events, reader = anyio.create_memory_object_stream[EventMessage](REQUEST_STREAM_BUFFER_SIZE)
        self._request_streams[request_id] = (events, reader)
        streaming = False
        try:
            window = _Window(events, self.quick_window)
            try:
                await writer.send(
                    self._create_session_message(message, request, request_id, version)
                )
                first = await window.first_event(reader)
            finally:
                window.close()
            if first is not None and isinstance(first.message, JSONRPCResponse | JSONRPCError):
                self._forget(priming, first)
                response = Response(
                    first.message.model_dump_json(by_alias=True, exclude_unset=True),
                    media_type=CONTENT_TYPE_JSON,
                    headers={MCP_SESSION_ID_HEADER: self.mcp_session_id or ""},
                )
                await response(scope, receive, send)
                return
            leading = [priming] if priming is not None else []
            if first is not None:
                leading.append(self._create_event_data(first))
            streaming = True  # from here the stream's writer cleans up
            await self._stream(request_id, reader, leading, scope, receive, send)
        finally:
            if not streaming:
                await self._clean_up_memory_streams(request_id)

    def _forget(self, priming: SSEEvent | None, answer: EventMessage) -> None:
        """Drop the events of a request answered as JSON: no client can resume them."""
        if isinstance(self._event_store, MemoryEventStore | SessionEvents):
            ids = [answer.event_id, priming["id"] if priming is not None else None]
            self._event_store.forget(*(i for i in ids if i is not None))

    async def terminate(self) -> None:
        """End the session, and drop its stored streams: its id answers 404, so none resumes."""
        await super().terminate()
        if isinstance(self._event_store, SessionEvents):
            self._event_store.close()

    async def _stream(
        self,
        request_id: str,
        reader: MemoryObjectReceiveStream[EventMessage],
        leading: list[SSEEvent],
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        """Answer with an SSE stream: ``leading``, then the request's events up to its answer."""
        sse_writer, sse_reader = anyio.create_memory_object_stream[SSEEvent](0)
        self._sse_stream_writers[request_id] = sse_writer  # close_sse_stream() closes it
        headers = dict(_SSE_HEADERS)
        if self.mcp_session_id:
            headers[MCP_SESSION_ID_HEADER] = self.mcp_session_id
        forward = partial(self._forward, request_id, sse_writer, reader, leading)
        response = EventSourceResponse(
            content=sse_reader, data_sender_callable=forward, headers=headers
        )
        try:
            await response(scope, receive, send)
        finally:
            await sse_writer.aclose()
            await sse_reader.aclose()

    async def _forward(
        self,
        request_id: str,
        sse_writer: MemoryObjectSendStream[SSEEvent],
        reader: MemoryObjectReceiveStream[EventMessage],
        leading: list[SSEEvent],
    ) -> None:
        try:
            async with sse_writer, reader:
                for event in leading:
                    await sse_writer.send(event)
                async for event_message in reader:
                    await sse_writer.send(self._create_event_data(event_message))
                    if isinstance(event_message.message, JSONRPCResponse | JSONRPCError):
                        break
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            log.debug("mcp http stream closed early request=%s", request_id)
        finally:
            self._sse_stream_writers.pop(request_id, None)
            await self._clean_up_memory_streams(request_id)


class _Window:
    """The quick window of one request: ends its wait for its first event when it passes.

    The wait is a receive on the request's stream, which the window ends with a
    marker handed straight to it, and only while it waits: a marker that sat in
    the stream's buffer could follow an event already handed over. The window
    may pass before the wait has begun (while the request is handed to the
    session, or in the receive's first checkpoint); then the wait takes only
    what is there, or the window looks again once the receive waits, so that it
    ends every wait it outlives.
    """

    def __init__(self, events: MemoryObjectSendStream[EventMessage], seconds: float) -> None:
        self._events = events
        self._passed = False
        self._waiting = False
        self._loop = asyncio.get_running_loop()
        self._timer: asyncio.Handle = self._loop.call_later(seconds, self._end)

    async def first_event(
        self, reader: MemoryObjectReceiveStream[EventMessage]
    ) -> EventMessage | None:
        """The first event of the request's stream; None if the window passed or it closed."""
        try:
            if self._passed:
                event = reader.receive_nowait()
            else:
                self._waiting = True
                event = await reader.receive()
        except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
            return None  # nothing yet, the session ended, or the stream closed for a resume
        finally:
            self._waiting = False
        return None if event is _WINDOW_PASSED else event

    def close(self) -> None:
        """The wait is over: the window has nothing more to end."""
        self._timer.cancel()

    def _end(self) -> None:
        self._passed = True
        if not self._waiting:
            return  # the wait, when it begins, sees the window passed
        if self._events.statistics().tasks_waiting_receive:
            with contextlib.suppress(anyio.WouldBlock, anyio.ClosedResourceError):
                self._events.send_nowait(_WINDOW_PASSED)
            return
        # In the receive but not waiting: at its first checkpoint, or just handed an event
        # (then it resumes before this callback and closes the window). Look again after it.
        self._timer = self._loop.call_soon(self._end)
