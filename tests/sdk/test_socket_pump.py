"""SocketPump over real ZeroMQ sockets: whole messages in, whole messages out, bounded parts."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
import zmq

from plughost_sdk.socket_pump import SocketPump

Inbox = asyncio.Queue[list[bytes]]


@contextlib.asynccontextmanager
async def pumped_pair(
    max_parts: int,
) -> AsyncIterator[tuple[SocketPump, SocketPump, asyncio.Queue[list[bytes]]]]:
    context = zmq.Context()
    server = context.socket(zmq.PAIR)
    client = context.socket(zmq.PAIR)
    server.bind("inproc://pump")
    client.connect("inproc://pump")
    received: Inbox = asyncio.Queue()
    receiver = SocketPump(server, max_parts=max_parts)
    sender = SocketPump(client, max_parts=max_parts)
    task = asyncio.create_task(
        receiver.run(lambda parts: received.put_nowait([p.bytes for p in parts]))
    )
    try:
        yield receiver, sender, received
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        server.close(linger=0)
        client.close(linger=0)
        context.term()


async def test_a_multipart_message_arrives_whole_and_in_order() -> None:
    big = bytes(range(256)) * 1024
    async with pumped_pair(max_parts=4) as (_, sender, received):
        await sender.send([b"envelope", big, b"last"])

        parts = await asyncio.wait_for(received.get(), timeout=10)

    assert parts == [b"envelope", big, b"last"]


async def test_a_message_with_too_many_parts_is_dropped_and_counted_and_the_next_arrives() -> None:
    async with pumped_pair(max_parts=3) as (receiver, sender, received):
        await sender.send([b"a", b"b", b"c", b"d"])
        await sender.send([b"next"])

        parts = await asyncio.wait_for(received.get(), timeout=10)

        assert parts == [b"next"]
        assert receiver.oversized == 1


async def test_many_messages_in_one_burst_all_arrive() -> None:
    async with pumped_pair(max_parts=2) as (_, sender, received):
        for number in range(2000):
            await sender.send([str(number).encode()])

        got = [await asyncio.wait_for(received.get(), timeout=10) for _ in range(2000)]

    assert [int(parts[0]) for parts in got] == list(range(2000))


async def test_messages_that_arrive_one_at_a_time_each_arrive_on_their_own() -> None:
    # Each wakeup takes one message and leaves looking for more to a queued call:
    # a message arriving between the two must not wait for a third.
    async with pumped_pair(max_parts=2) as (_, sender, received):
        for number in range(200):
            sender.post([str(number).encode()])
            parts = await asyncio.wait_for(received.get(), timeout=10)
            assert parts == [str(number).encode()]


@pytest.mark.parametrize("size", [10, 64 * 1024 - 1, 64 * 1024, 300 * 1024])
async def test_posted_bodies_arrive_intact_below_and_above_the_copy_threshold(size: int) -> None:
    body = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    async with pumped_pair(max_parts=2) as (_, sender, received):
        sender.post([body])
        sender.post([b"after"])

        got = [await asyncio.wait_for(received.get(), timeout=10) for _ in range(2)]

    assert b"".join(got[0]) + b"".join(got[1]) == body + b"after"


@pytest.mark.parametrize("max_parts", [1, 2])
async def test_a_single_part_message_is_within_any_limit(max_parts: int) -> None:
    async with pumped_pair(max_parts=max_parts) as (receiver, sender, received):
        await sender.send([b"only"])

        assert await asyncio.wait_for(received.get(), timeout=10) == [b"only"]
        assert receiver.oversized == 0


async def test_messages_posted_in_one_iteration_after_the_first_leave_as_one_frame() -> None:
    async with pumped_pair(max_parts=2) as (_, sender, received):
        for number in range(5):  # no await between: one event-loop iteration
            sender.post([b"<%d>" % number])

        first = await asyncio.wait_for(received.get(), timeout=10)
        rest = await asyncio.wait_for(received.get(), timeout=10)

    assert first == [b"<0>"]  # the first goes at once: an isolated message waits for nothing
    assert rest == [b"<1><2><3><4>"]


async def test_a_lone_message_schedules_no_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lone call costs no extra loop iteration: nothing is scheduled to flush after it."""
    async with pumped_pair(max_parts=2) as (receiver, sender, received):
        replies: Inbox = asyncio.Queue()
        answering = asyncio.create_task(
            sender.run(lambda parts: replies.put_nowait([p.bytes for p in parts]))
        )
        loop = asyncio.get_running_loop()
        scheduled: list[object] = []
        real = loop.call_soon

        def counting(callback: object, *args: object, **kwargs: object) -> asyncio.Handle:
            scheduled.append(callback)
            return real(callback, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(loop, "call_soon", counting)
        try:
            for number in range(3):  # request, reply, request: what one call at a time does
                sender.post([b"<%d>" % number])
                assert await asyncio.wait_for(received.get(), timeout=10) == [b"<%d>" % number]
                receiver.post([b"reply"])
                assert await asyncio.wait_for(replies.get(), timeout=10) == [b"reply"]
        finally:
            monkeypatch.undo()
            answering.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await answering

    flushes = [each for each in scheduled if getattr(each, "__name__", "") == "_close_window"]
    assert flushes == []


async def test_a_post_while_the_peer_queue_is_full_waits_its_turn_in_order() -> None:
    context = zmq.Context()
    server, client = context.socket(zmq.PAIR), context.socket(zmq.PAIR)
    client.setsockopt(zmq.SNDHWM, 2)
    server.setsockopt(zmq.RCVHWM, 2)
    server.bind("inproc://full")
    client.connect("inproc://full")
    sender = SocketPump(client, max_parts=1)
    pumping = asyncio.create_task(sender.run(lambda parts: None))
    try:
        big = b"x" * (2 * 1024 * 1024)  # over the join limit: each stays its own message
        for number in range(20):
            sender.post([bytes([number]) + big])
            await asyncio.sleep(0)  # a new iteration each time
        assert sender.backlogged
        got = []
        async with asyncio.timeout(20):
            while len(got) < 20:
                if server.poll(10):
                    got.append(server.recv()[0])
                else:
                    await asyncio.sleep(0)
            await sender.drained()
        assert got == list(range(20))
        assert not sender.backlogged
    finally:
        pumping.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pumping
        server.close(linger=0)
        client.close(linger=0)
        context.term()
