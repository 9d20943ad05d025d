"""A filter over an eager stream claims each message in the task that sends it.

:class:`plughost.mcp.stream_filters.FilteredReceive` is what puts a call
forwarder (``plughost serve``) or an upstream tap between a stdio transport and
an SDK session; the stdio transports' streams are eager ones.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from plughost.mcp.stream_filters import FilteredReceive, eager_memory_stream


def ping(n: int) -> SessionMessage:
    return SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=n, method="ping"))


def odd(claimed: list[object]) -> Callable[[types.JSONRPCMessage], bool]:
    def claim(message: types.JSONRPCMessage) -> bool:
        if isinstance(message, types.JSONRPCRequest) and int(message.id) % 2:
            claimed.append(message.id)
            return True
        return False

    return claim


async def test_a_claimed_message_is_taken_as_it_is_sent_and_never_enters_the_stream() -> None:
    send, receive = eager_memory_stream[SessionMessage | Exception](0)
    claimed: list[object] = []
    filtered = FilteredReceive(receive, odd(claimed))
    async with send, filtered:
        with anyio.fail_after(5):
            await send.send(ping(1))  # no receiver waits, yet the send returns: it was claimed
            await send.send(ping(3))
            assert claimed == [1, 3]
            assert receive.statistics().current_buffer_used == 0
            async with anyio.create_task_group() as tg:
                tg.start_soon(send.send, ping(2))
                tg.start_soon(send.send, ValueError("not JSON-RPC"))
                assert await filtered.receive() == ping(2)
                assert isinstance(await filtered.receive(), ValueError)
    assert claimed == [1, 3]


async def test_messages_waiting_before_the_filter_came_are_claimed_as_they_are_received() -> None:
    send, receive = eager_memory_stream[SessionMessage | Exception](4)
    claimed: list[object] = []
    async with send, receive:
        await send.send(ping(1))
        await send.send(ping(2))
        filtered = FilteredReceive(receive, odd(claimed))
        await send.send(ping(3))
        with anyio.fail_after(5):
            assert await filtered.receive() == ping(2)
        assert claimed == [1]
        with anyio.fail_after(5):
            await send.send(ping(4))
            assert await filtered.receive() == ping(4)
        assert claimed == [1, 3]


async def test_the_stream_ending_is_reported_once_the_filter_sees_it() -> None:
    send, receive = eager_memory_stream[SessionMessage | Exception](0)
    ended: list[bool] = []
    filtered = FilteredReceive(receive, odd([]), lambda: ended.append(True))
    async with filtered:
        await send.send(ping(1))
        await send.aclose()
        with pytest.raises(anyio.EndOfStream):
            await filtered.receive()
        assert ended == [True]


async def test_once_the_filter_is_closed_its_stream_breaks_for_senders_as_before() -> None:
    send, receive = eager_memory_stream[SessionMessage | Exception](0)
    claimed: list[object] = []
    filtered = FilteredReceive(receive, odd(claimed))
    async with send:
        await filtered.aclose()
        with pytest.raises(anyio.BrokenResourceError):
            await send.send(ping(1))
    assert claimed == []
