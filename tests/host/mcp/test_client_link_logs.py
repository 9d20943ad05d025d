"""A call's log records that its client has yet to take wait in bounded memory.

A plugin's records and an upstream server's (:mod:`plughost.mcp.upstream_requests`)
are queued on the call's :class:`~plughost.mcp.client_link.MCPClientLink` and sent
by one task. A client that does not read (its stdout pipe full) must not make the
host keep every record an upstream server writes, which no rate limit bounds. The
link is the one a stdio call taken beside the session gets from its
:class:`~plughost.mcp.client_relay.ClientRelay`; the test is its client, reading the
relay's stream only once every record is queued.
"""

from __future__ import annotations

import logging

import anyio
import anyio.lowlevel
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp.shared.message import SessionMessage

from plughost.mcp.client_link import MAX_QUEUED_LOGS
from plughost.mcp.client_relay import ClientRelay

SENT = 3 * MAX_QUEUED_LOGS


def listening_relay(send: anyio.abc.ObjectSendStream[SessionMessage]) -> ClientRelay:
    """A relay whose client did the handshake and asked for records from ``debug`` up."""
    relay = ClientRelay(send)
    relay.introduced(
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        }
    )
    relay.settled("2025-11-25")
    relay.initialized()
    level = types.JSONRPCRequest(
        jsonrpc="2.0", id=1, method="logging/setLevel", params={"level": "debug"}
    )
    relay.asked_level(level)
    relay.answered(types.JSONRPCResponse(jsonrpc="2.0", id=1, result={}))
    return relay


async def read_all(receive: MemoryObjectReceiveStream[SessionMessage], got: list[str]) -> None:
    async for item in receive:
        message = item.message
        if isinstance(message, types.JSONRPCNotification):
            got.append(str((message.params or {}).get("data")))


async def test_records_a_client_does_not_take_are_bounded_and_it_is_told_how_many_dropped() -> None:
    send, receive = anyio.create_memory_object_stream[SessionMessage](0)  # nobody reads yet
    relay = listening_relay(send)
    link = relay.link(7, "chatty")
    got: list[str] = []
    with send, receive, anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            async with link.serving():
                for n in range(SENT):
                    link.log(logging.INFO, "mcp.chatty", str(n))
                tg.start_soon(read_all, receive, got)  # the client reads again
            tg.cancel_scope.cancel()

    assert got[:-1] == [str(n) for n in range(MAX_QUEUED_LOGS)]  # the first ones, in order
    assert got[-1] == (
        f"plughost dropped {SENT - MAX_QUEUED_LOGS} log records of this call: "
        "the client did not take them as fast as they came"
    )


async def test_records_a_client_keeps_up_with_all_reach_it_without_a_note() -> None:
    send, receive = anyio.create_memory_object_stream[SessionMessage](0)
    relay = listening_relay(send)
    link = relay.link(7, "chatty")
    got: list[str] = []
    with send, receive, anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(read_all, receive, got)
            async with link.serving():
                for n in range(SENT):
                    link.log(logging.INFO, "mcp.chatty", str(n))
                    while n % 1000 == 999 and len(got) <= n:  # the client takes what came
                        await anyio.lowlevel.checkpoint()
            tg.cancel_scope.cancel()

    assert got == [str(n) for n in range(SENT)]
