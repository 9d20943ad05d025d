"""MemoryEventStore: replay after Last-Event-ID, priming events skipped, memory bounded."""

from __future__ import annotations

import mcp_types as types
from mcp.server.streamable_http import EventMessage

from plughost.mcp import event_store
from plughost.mcp.event_store import MemoryEventStore


def message(n: int) -> types.JSONRPCMessage:
    return types.JSONRPCNotification(jsonrpc="2.0", method=f"notifications/n{n}")


async def test_a_reconnect_replays_the_events_of_its_stream_after_the_last_id() -> None:
    store = MemoryEventStore()
    priming = await store.store_event("a", None)
    first = await store.store_event("a", message(1))
    await store.store_event("b", message(9))
    await store.store_event("a", message(2))
    sent: list[EventMessage] = []

    async def send(event: EventMessage) -> None:
        sent.append(event)

    assert await store.replay_events_after(priming, send) == "a"
    assert [e.message.method for e in sent] == ["notifications/n1", "notifications/n2"]
    sent.clear()
    assert await store.replay_events_after(first, send) == "a"
    assert [e.message.method for e in sent] == ["notifications/n2"]
    assert await store.replay_events_after("unknown", send) is None


async def test_old_events_are_dropped_so_memory_stays_bounded() -> None:
    store = MemoryEventStore()
    ids = [
        await store.store_event("a", message(n)) for n in range(event_store.EVENTS_PER_STREAM + 1)
    ]
    sent: list[EventMessage] = []

    async def send(event: EventMessage) -> None:
        sent.append(event)

    assert await store.replay_events_after(ids[0], send) is None  # dropped: nothing to resume
    assert await store.replay_events_after(ids[1], send) == "a"
    assert len(sent) == event_store.EVENTS_PER_STREAM - 1


async def test_forgetting_drops_only_the_events_named_and_a_stream_left_empty() -> None:
    store = MemoryEventStore()
    priming = await store.store_event("a", None)
    progress = await store.store_event("a", message(1))
    answer = await store.store_event("a", types.JSONRPCResponse(jsonrpc="2.0", id=1, result={}))
    other = await store.store_event("b", None)
    other_answer = await store.store_event("b", message(2))
    sent: list[EventMessage] = []

    async def send(event: EventMessage) -> None:
        sent.append(event)

    store.forget(progress, other, other_answer, "unknown", "12x")

    assert await store.replay_events_after(priming, send) == "a"
    assert [event.event_id for event in sent] == [answer]  # the rest of its stream stays
    assert await store.replay_events_after(progress, send) is None
    assert await store.replay_events_after(other, send) is None  # its stream is gone
    assert len(sent) == 1


async def test_sessions_resume_and_forget_only_their_own_streams_of_the_same_request_id() -> None:
    store = MemoryEventStore()
    mine, theirs = store.session("s1"), store.session("s2")
    my_priming = await mine.store_event("2", None)
    their_priming = await theirs.store_event("2", None)
    their_answer = await theirs.store_event("2", message(2))
    my_answer = await mine.store_event("2", message(2))
    sent: list[EventMessage] = []

    async def send(event: EventMessage) -> None:
        sent.append(event)

    mine.forget(their_answer)  # not this session's: kept

    assert await mine.replay_events_after(my_priming, send) == "2"
    assert [event.event_id for event in sent] == [my_answer]
    assert await mine.replay_events_after(their_priming, send) is None
    assert await theirs.replay_events_after(their_priming, send) == "2"
    assert [event.event_id for event in sent] == [my_answer, their_answer]


async def test_a_last_event_id_that_names_no_event_replays_nothing_and_raises_nothing() -> None:
    store = MemoryEventStore()
    mine = store.session("s1")
    await mine.store_event("2", message(1))
    sent: list[EventMessage] = []

    async def send(event: EventMessage) -> None:
        sent.append(event)

    # A header is read as Latin-1: "\xb2" is a digit to str.isdigit, not to int.
    for hostile in ["\xb2", "1\xb2", "9" * 5000, "-1", " 1", ""]:
        assert await mine.replay_events_after(hostile, send) is None
        assert await store.replay_events_after(hostile, send) is None
        mine.forget(hostile)
    assert sent == []


async def test_a_session_opening_streams_past_every_bound_evicts_its_own_not_anothers() -> None:
    store = MemoryEventStore()
    quiet, busy = store.session("quiet"), store.session("busy")
    priming = await quiet.store_event("2", None)
    answer = await quiet.store_event("2", message(2))
    for n in range(event_store.MAX_STREAMS + 10):
        await busy.store_event(str(n), None)
    sent: list[EventMessage] = []

    async def send(event: EventMessage) -> None:
        sent.append(event)

    assert await quiet.replay_events_after(priming, send) == "2"
    assert [event.event_id for event in sent] == [answer]
    last = await busy.store_event("last", None)
    assert await busy.replay_events_after(last, send) == "last"  # its newest stream is kept


async def test_the_total_stays_bounded_the_fullest_session_giving_way() -> None:
    store = MemoryEventStore()
    per_session = event_store.MAX_STREAMS_PER_SESSION
    count = event_store.MAX_STREAMS // per_session + 3
    ids: list[list[str]] = [[] for _ in range(count)]
    for n in range(count):
        session = store.session(f"s{n}")
        for stream in range(per_session + 5):  # each tries past its own cap
            ids[n].append(await session.store_event(str(stream), None))
    own = await store.session("alone").store_event("1", None)
    kept = [sum(store.stream_of(event) is not None for event in each) for each in ids]

    assert sum(kept) + 1 == len(store._streams) == event_store.MAX_STREAMS
    assert store.stream_of(own) is not None  # the quietest session is not the one evicted
    assert max(kept) <= per_session and max(kept) - min(kept) <= 1  # the fullest gave way
    assert all(store.stream_of(each[-1]) is not None for each in ids)  # oldest go first


async def test_a_closed_session_drops_its_streams_and_no_others() -> None:
    store = MemoryEventStore()
    ending, staying = store.session("ending"), store.session("staying")
    gone = [await ending.store_event(str(n), None) for n in range(3)]
    kept = await staying.store_event("0", None)

    ending.close()
    ending.close()  # ending twice is harmless

    assert [store.stream_of(event) for event in gone] == [None, None, None]
    assert store.stream_of(kept) == "staying/0"
