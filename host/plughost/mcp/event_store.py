"""A bounded in-memory event store: SSE priming events and resumable streams over HTTP.

With an event store, the SDK's streamable HTTP transport opens every SSE stream
with a *priming event* (an event id and empty data, plus the ``retry`` field that
tells the client how long to wait before reconnecting), stores each event it
sends, and replays the events after ``Last-Event-ID`` when a client reconnects
to a stream that broke. That is what the specification (SEP-1699) asks of a
server whose streams may close before the response.

Memory is bounded: each stream keeps its last :data:`EVENTS_PER_STREAM` events,
each session its last :data:`MAX_STREAMS_PER_SESSION` streams, and the store at
most :data:`MAX_STREAMS` streams, a new stream past that bound evicting the
oldest stream of the session holding the most. So a session that opens stream
after stream evicts its own, never a quieter session's; a reconnect after older
events were dropped replays nothing (the client re-sends its request). A
session's streams go when the session ends (:meth:`SessionEvents.close`).
The SDK names a request's stream by the request's id, which every session numbers
from 1, so each session writes through a :class:`SessionEvents` view
(:meth:`MemoryEventStore.session`) that keeps its streams apart: a session
resumes only its own streams, never another's that shares a request id.
A request answered with one JSON body instead of a stream
(:mod:`plughost.mcp.quick_answers`) has its events dropped at once: its client
never learnt one of their ids, so nothing can resume them. Only those events go:
request ids name streams, and another session's request may share the id.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict, deque
from typing import Final

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import JSONRPCMessage

__all__ = [
    "EVENTS_PER_STREAM",
    "MAX_STREAMS",
    "MAX_STREAMS_PER_SESSION",
    "MemoryEventStore",
    "SessionEvents",
]

EVENTS_PER_STREAM: Final = 256
MAX_STREAMS: Final = 1024
MAX_STREAMS_PER_SESSION: Final = 128
_UNSCOPED: Final = ""  # the owner of streams written to the store itself, not through a session
_MAX_DIGITS: Final = 19  # more events than a server ever stores


class MemoryEventStore(EventStore):
    """Keeps recent events per SSE stream for replay after a reconnect."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._streams: dict[StreamId, deque[tuple[int, JSONRPCMessage | None]]] = {}
        self._stream_of: dict[int, StreamId] = {}
        # Each owner's streams, oldest first (an OrderedDict used as an ordered set).
        self._owned: dict[str, OrderedDict[StreamId, None]] = {}
        self._owner_of: dict[StreamId, str] = {}

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        """Store one event (``None``: a priming event) and return its id."""
        return self.store_owned(_UNSCOPED, stream_id, message)

    def store_owned(self, owner: str, stream_id: StreamId, message: JSONRPCMessage | None) -> str:
        """Store one event of ``owner``'s stream ``stream_id`` and return its id."""
        number = next(self._ids)
        events = self._streams.get(stream_id)
        if events is None:
            events = self._open(owner, stream_id)
        if len(events) == EVENTS_PER_STREAM:
            old, _ = events.popleft()
            self._stream_of.pop(old, None)
        events.append((number, message))
        self._stream_of[number] = stream_id
        return str(number)

    def drop_owner(self, owner: str) -> None:
        """Drop every stream of ``owner`` (a session that ended)."""
        for stream_id in list(self._owned.get(owner, ())):
            self._drop(stream_id)

    def _open(self, owner: str, stream_id: StreamId) -> deque[tuple[int, JSONRPCMessage | None]]:
        """A new stream of ``owner``'s, past the bounds evicting the fullest owner's oldest."""
        owned = self._owned.setdefault(owner, OrderedDict())
        if len(owned) >= MAX_STREAMS_PER_SESSION:
            self._drop(next(iter(owned)))
        if len(self._streams) >= MAX_STREAMS:
            fullest = max(self._owned.values(), key=len)
            self._drop(next(iter(fullest)))
        owned = self._owned.setdefault(owner, owned)  # _drop removes an owner left with none
        events: deque[tuple[int, JSONRPCMessage | None]] = deque()
        self._streams[stream_id] = events
        owned[stream_id] = None
        self._owner_of[stream_id] = owner
        return events

    def _drop(self, stream_id: StreamId) -> None:
        for number, _ in self._streams.pop(stream_id, ()):
            self._stream_of.pop(number, None)
        owner = self._owner_of.pop(stream_id, None)
        if owner is None:
            return
        owned = self._owned[owner]
        del owned[stream_id]
        if not owned:
            del self._owned[owner]

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        """Send the stream's events after ``last_event_id``; return its stream id, or None."""
        after = _number(last_event_id)
        stream_id = None if after is None else self._stream_of.get(after)
        if after is None or stream_id is None:
            return None
        for number, message in list(self._streams.get(stream_id, ())):
            if number > after and message is not None:
                await send_callback(EventMessage(message, str(number)))
        return stream_id

    def session(self, session_id: str) -> SessionEvents:
        """A view of this store for one session: the streams it writes and resumes are its own."""
        return SessionEvents(self, session_id)

    def stream_of(self, event_id: EventId) -> StreamId | None:
        """The stream ``event_id`` belongs to, while the store keeps it."""
        return self._stream_id(event_id)

    def forget(self, *event_ids: EventId) -> None:
        """Drop the events ``event_ids``, and a stream once it holds none."""
        for event_id in event_ids:
            stream_id = self._stream_id(event_id)
            if stream_id is None:
                continue
            number = int(event_id)  # an id of this store's: _stream_id found it
            del self._stream_of[number]
            kept = deque(event for event in self._streams[stream_id] if event[0] != number)
            if kept:
                self._streams[stream_id] = kept
            else:
                self._drop(stream_id)

    def _stream_id(self, event_id: EventId) -> StreamId | None:
        number = _number(event_id)
        return None if number is None else self._stream_of.get(number)


def _number(event_id: EventId) -> int | None:
    """The number of an id this store issued; None for anything else a client sends.

    ``Last-Event-ID`` is the client's text: ``str.isdigit`` takes ``"\\xb2"`` (a
    Latin-1 header byte), which ``int`` refuses, and ``int`` refuses 4,300 digits.
    """
    if not (event_id.isascii() and event_id.isdigit()) or len(event_id) > _MAX_DIGITS:
        return None
    return int(event_id)


class SessionEvents(EventStore):
    """One session's part of a :class:`MemoryEventStore`, its stream ids kept apart from others'."""

    def __init__(self, store: MemoryEventStore, session_id: str) -> None:
        self._store = store
        self._session_id = session_id
        self._prefix = f"{session_id}/"

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        """Store one event of this session's stream ``stream_id`` and return its id."""
        return self._store.store_owned(self._session_id, self._prefix + stream_id, message)

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        """Replay the stream after ``last_event_id``; None unless it is this session's."""
        stream_id = self._store.stream_of(last_event_id)
        if stream_id is None or not stream_id.startswith(self._prefix):
            return None
        await self._store.replay_events_after(last_event_id, send_callback)
        return stream_id.removeprefix(self._prefix)

    def forget(self, *event_ids: EventId) -> None:
        """Drop this session's events ``event_ids``."""
        own = [i for i in event_ids if (self._store.stream_of(i) or "").startswith(self._prefix)]
        self._store.forget(*own)

    def close(self) -> None:
        """Drop all of this session's streams: the session ended, so none can be resumed."""
        self._store.drop_owner(self._session_id)
