"""Eager memory streams: an item moves without a turn of the loop, and nothing else changes.

The stdio transports of ``plughost serve`` and of its upstream servers hand
their sessions these streams (:func:`plughost.mcp.stream_filters.eager_memory_stream`).
"""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from plughost.mcp.stream_filters import eager_memory_stream
from tests.host.mcp.loop_turns import without_a_turn


async def test_an_item_reaches_a_waiting_receiver_without_a_turn_of_the_loop() -> None:
    send, receive = eager_memory_stream[int](0)
    received: list[int] = []

    async def take() -> None:
        received.append(await receive.receive())

    async with send, receive, anyio.create_task_group() as tg:
        tg.start_soon(take)
        await anyio.wait_all_tasks_blocked()
        assert await without_a_turn(lambda: send.send(1))
    assert received == [1]


async def test_a_receiver_takes_a_waiting_senders_item_without_a_turn() -> None:
    send, receive = eager_memory_stream[int](0)
    async with send, receive, anyio.create_task_group() as tg:
        tg.start_soon(send.send, 7)
        await anyio.wait_all_tasks_blocked()  # the sender waits: nobody receives yet
        assert await without_a_turn(receive.receive)
    assert send.statistics().tasks_waiting_send == 0


async def test_items_arrive_in_the_order_they_were_sent_when_senders_must_wait() -> None:
    send, receive = eager_memory_stream[int](0)
    async with send, receive:
        received: list[int] = []
        async with anyio.create_task_group() as tg:
            for n in range(5):
                tg.start_soon(send.send, n)
                await anyio.wait_all_tasks_blocked()
            with anyio.fail_after(5):
                for _ in range(5):
                    received.append(await receive.receive())
        assert received == [0, 1, 2, 3, 4]


async def test_a_cancelled_sender_raises_and_its_item_never_arrives() -> None:
    send, receive = eager_memory_stream[str](0)
    async with send, receive:
        received: list[str] = []

        async def take() -> None:
            received.append(await receive.receive())

        async with anyio.create_task_group() as tg:
            tg.start_soon(take)
            await anyio.wait_all_tasks_blocked()
            with anyio.CancelScope() as scope:
                scope.cancel()
                await send.send("cancelled")
            assert scope.cancelled_caught
            await send.send("after")
        assert received == ["after"]


async def test_closing_the_send_end_ends_the_receivers_stream() -> None:
    send, receive = eager_memory_stream[int](1)
    async with send, receive:
        await send.send(1)
        await send.aclose()
        assert await receive.receive() == 1
        with pytest.raises(anyio.EndOfStream):
            await receive.receive()
        assert send.statistics().open_send_streams == 0


async def test_closing_the_receive_end_breaks_the_senders_stream() -> None:
    send, receive = eager_memory_stream[int](0)
    async with send, receive:
        receive.close()
        with pytest.raises(anyio.BrokenResourceError):
            await send.send(1)
