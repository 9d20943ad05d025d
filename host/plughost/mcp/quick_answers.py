"""Quick answers: a request answered at once gets its answer as one JSON body, not an SSE stream.

The SDK's streamable HTTP transport answers every request ``POST`` with an SSE
stream: response headers and a priming event at once, then the request's
events, then the answer. That stream is what carries a call's progress, its
logs and the server's own requests (sampling, elicitation), and what a client
that lost the connection resumes with ``Last-Event-ID``. But most requests
stream nothing: ``tools/list``, ``initialize``, a quick tool call. For them the
stream costs four writes instead of two, a client that parses SSE, and a new
connection per request (a client stops reading once it has the answer, before
the stream's last chunk, so the connection cannot be reused).

:func:`quick_answers` holds a request's stream back for :data:`QUICK_WINDOW`
seconds. When the first thing the stream has to say within the window is the
answer, the answer goes out as one ``application/json`` body (which the
specification lets a server choose for any request) and its stream is dropped
from the event store: the client never saw one of its event ids, so nothing can
resume it. When anything else comes first (a progress notification, a log, a
question to the client), when the window passes, or when the stream is not one
this module can read, the held headers and events go out as they were and the
stream carries on as SSE, resumable from its priming event.

What does not live here: the event store (:mod:`plughost.mcp.event_store`) and
serving (:mod:`plughost.mcp.server`).
"""

from __future__ import annotations

import asyncio
import enum
from typing import Final

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from plughost.mcp.event_store import MemoryEventStore

__all__ = ["QUICK_WINDOW", "quick_answers"]

QUICK_WINDOW: Final = 0.1
"""Seconds a request's answer may take to go out as one JSON body; past them, it streams."""

_SSE = b"text/event-stream"
_DROPPED_HEADERS = frozenset(
    {b"content-type", b"content-length", b"cache-control", b"connection", b"x-accel-buffering"}
)


class _State(enum.Enum):
    HOLDING = "holding"  # headers and the priming event held back, waiting for the answer
    RELEASING = "releasing"  # writing out what was held; later writes wait for it
    STREAMING = "streaming"  # an SSE stream (or not SSE at all): everything passes
    ANSWERED = "answered"  # the answer went out as JSON: the stream's tail is dropped


def quick_answers(app: ASGIApp, store: MemoryEventStore, window: float = QUICK_WINDOW) -> ASGIApp:
    """Wrap ``app`` so that a ``POST`` answered within ``window`` seconds gets a JSON body."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        answer = _Answer(send, store)
        async with anyio.create_task_group() as tg:
            # A timer, not a sleeping task: most answers come first, and a task costs more.
            timer = asyncio.get_running_loop().call_later(window, tg.start_soon, answer.release)
            try:
                await app(scope, receive, answer.send)
            finally:
                timer.cancel()
        if answer.holding:  # a stream that ended while held (nothing was written yet)
            await answer.release()

    return wrapped


class _Answer:
    """One ``POST``'s response, held back until it is known to be a quick answer or a stream."""

    def __init__(self, send: Send, store: MemoryEventStore) -> None:
        self._send = send
        self._store = store
        self._state = _State.HOLDING
        self._held: list[Message] = []
        # Without a checkpoint when free: each held message takes it, and it is rarely contended.
        self._lock = anyio.Lock(fast_acquire=True)

    @property
    def holding(self) -> bool:
        """Whether the response is still held back."""
        return self._state is _State.HOLDING

    async def send(self, message: Message) -> None:
        if self._state is _State.HOLDING or self._state is _State.RELEASING:
            async with self._lock:  # waits while what was held is written out
                if await self._held_back(message):
                    return
        if self._state is _State.STREAMING:
            await self._send(message)
        # Once answered, what follows is the SSE stream's end or a keep-alive ping: dropped.

    async def _held_back(self, message: Message) -> bool:
        """Hold ``message``, answer with it, or write it out after what was held."""
        if self._state is not _State.HOLDING:
            return False
        if not await self._hold(message):
            self._held.append(message)
            await self._release_held()
        return True

    async def _hold(self, message: Message) -> bool:
        """Hold ``message`` or answer with it as JSON; False if the stream must go out as it is."""
        if message["type"] == "http.response.start":
            if _content_type(message) != _SSE:
                return False
            self._held.append(message)
            return True
        if message["type"] != "http.response.body" or not message.get("more_body", False):
            return False
        fields = _event_fields(message.get("body", b""))
        if fields is None:
            return False
        event_id, data = fields.get(b"id", b"").decode(), fields.get(b"data", b"")
        if not data and b"event" not in fields:
            self._held.append(message)  # the priming event: only worth sending with a stream
            return True
        if not self._held or not event_id or not self._store.is_answer(event_id):
            return False
        await self._answer(self._held[0], data)
        self._store.forget_stream_of(event_id)
        return True

    async def _answer(self, start: Message, body: bytes) -> None:
        headers = [(k, v) for k, v in start["headers"] if k.lower() not in _DROPPED_HEADERS]
        headers += [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        self._state = _State.ANSWERED
        self._held.clear()
        await self._send(
            {"type": "http.response.start", "status": start["status"], "headers": headers}
        )
        await self._send({"type": "http.response.body", "body": body})

    async def release(self) -> None:
        """Write out what is held and pass everything after it, unless already answered."""
        async with self._lock:
            if self._state is _State.HOLDING:
                await self._release_held()

    async def _release_held(self) -> None:
        self._state = _State.RELEASING
        try:
            for message in self._held:
                await self._send(message)
        finally:
            self._held.clear()
            self._state = _State.STREAMING


def _content_type(start: Message) -> bytes:
    for key, value in start["headers"]:
        if key.lower() == b"content-type":
            return bytes(value).split(b";", 1)[0].strip().lower()
    return b""


def _event_fields(chunk: bytes) -> dict[bytes, bytes] | None:
    """The fields of the one SSE event in ``chunk``, or None if it holds anything else."""
    lines = chunk.replace(b"\r\n", b"\n").split(b"\n")
    if len(lines) < 3 or lines[-2:] != [b"", b""]:
        return None  # not exactly one event ended by a blank line
    fields: dict[bytes, bytes] = {}
    for line in lines[:-2]:
        name, colon, value = line.partition(b":")
        if not colon or not name or name in fields:
            return None  # a comment, a bare field or multi-line data: leave it to SSE
        fields[name] = value[1:] if value.startswith(b" ") else value
    return fields
