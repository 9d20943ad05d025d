"""ClientRelay: a taken call's requests to its stdio client, bounded and forgotten on time.

The relay writes to one end of an in-memory stream and the test reads the
other, as the client would, answering through :meth:`ClientRelay.claim` (what
the forwarder does with a response it reads). How a taken call asks a real
client is tested in ``tests/host/mcp/test_forwarding.py`` and
``tests/integration/test_mcp_forwarding_asks.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp.shared.message import SessionMessage

from plughost.mcp import client_relay
from plughost.mcp.client_link import MCPClientLink
from plughost.mcp.client_relay import ClientRelay
from plughost.tools.client_link import ClientRequestError

QUESTION = {"messages": [{"role": "user", "content": "2+2?"}]}
SAMPLING: dict[str, Any] = {"sampling": {}}


def hello(capabilities: dict[str, Any]) -> dict[str, Any]:
    return {
        "protocolVersion": "2025-11-25",
        "capabilities": capabilities,
        "clientInfo": {"name": "test", "version": "1"},
    }


@asynccontextmanager
async def relayed(
    *, initialized: bool = True
) -> AsyncIterator[tuple[ClientRelay, MemoryObjectReceiveStream[SessionMessage]]]:
    send, receive = anyio.create_memory_object_stream[SessionMessage](100)
    relay = ClientRelay(send)
    relay.introduced(hello(SAMPLING))
    relay.settled("2025-11-25")
    if initialized:
        relay.initialized()
    with send, receive:
        yield relay, receive


def answer(request_id: Any, text: str = "four") -> types.JSONRPCResponse:
    result = {"role": "assistant", "content": {"type": "text", "text": text}, "model": "m"}
    return types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result)


async def next_message(receive: MemoryObjectReceiveStream[SessionMessage]) -> Any:
    with anyio.fail_after(10):
        return (await receive.receive()).message


async def ask_within_its_call(link: MCPClientLink, failures: list[str]) -> None:
    """Ask the client's model within the call's link; a refusal joins ``failures``."""
    async with link.serving():
        try:
            await link.generate(QUESTION)
        except ClientRequestError as exc:
            failures.append(str(exc))


async def test_a_request_the_client_answers_reaches_the_call_that_asked() -> None:
    async with relayed() as (relay, receive), anyio.create_task_group() as tg:
        answers: list[dict[str, Any]] = []
        link = relay.link(1, "ask")

        async def ask() -> None:
            async with link.serving():
                answers.append(await link.generate(QUESTION))

        tg.start_soon(ask)
        request = await next_message(receive)
        assert relay.claim(answer(request.id))
    assert answers[0]["text"] == "four" and relay.pending == 0


async def test_a_request_held_for_an_initialized_that_never_comes_is_refused_in_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert client_relay._HOLD_TIMEOUT == 10.0  # "ten seconds at most" in docs/mcp.md
    monkeypatch.setattr(client_relay, "_HOLD_TIMEOUT", 0.05)
    async with relayed(initialized=False) as (relay, receive):
        link = relay.link(1, "ask")
        with anyio.fail_after(10), pytest.raises(ClientRequestError) as refused:
            async with link.serving():
                await link.generate(QUESTION)
        sent = receive.statistics().current_buffer_used

    assert "has not sent notifications/initialized" in str(refused.value)
    assert "sampling/createMessage" in str(refused.value)
    assert sent == 0 and relay.pending == 0  # nothing went out, nothing is kept


async def test_a_request_open_when_its_call_ends_is_cancelled_and_forgotten() -> None:
    failures: list[str] = []
    async with relayed() as (relay, receive), anyio.create_task_group() as tg:
        link = relay.link(1, "ask")
        async with link.serving():

            async def ask() -> None:  # an upstream's ask: a task the call does not own
                try:
                    await link.generate(QUESTION)
                except ClientRequestError as exc:
                    failures.append(str(exc))

            tg.start_soon(ask)
            request = await next_message(receive)
            assert relay.pending == 1
        cancelled = await next_message(receive)  # the call has ended
        late = relay.claim(answer(request.id))

    assert cancelled.method == "notifications/cancelled"
    assert cancelled.params["requestId"] == request.id
    assert relay.pending == 0 and late  # the late answer is the relay's, and dropped
    assert failures == ["the MCP call this sampling request belongs to has finished"]


async def test_a_call_may_wait_on_a_bounded_number_of_requests_to_its_client() -> None:
    failures: list[str] = []
    limit = client_relay.MAX_OPEN_REQUESTS
    assert limit == 16  # as docs/mcp.md says
    async with relayed() as (relay, receive), anyio.create_task_group() as tg:
        link = relay.link(1, "ask")
        other = relay.link(2, "ask")

        async def ask(which: Any) -> None:
            try:
                await which.generate(QUESTION)
            except ClientRequestError as exc:
                failures.append(str(exc))

        async with link.serving(), other.serving():
            for _ in range(limit):
                tg.start_soon(ask, link)
            requests = [await next_message(receive) for _ in range(limit)]
            await ask(link)  # one more than the cap: refused at once
            tg.start_soon(ask, other)  # another call is not held back by the first
            requests.append(await next_message(receive))
            for request in requests:
                relay.claim(answer(request.id))

    assert failures == [
        f"the MCP call already waits for {limit} answers from its client; "
        "it is asked nothing more until one comes"
    ]
    assert relay.pending == 0


async def test_a_client_whose_stream_ends_mid_ask_fails_the_ask_as_the_session_does() -> None:
    async with relayed() as (relay, receive), anyio.create_task_group() as tg:
        link = relay.link(1, "ask")
        failures: list[str] = []

        tg.start_soon(ask_within_its_call, link, failures)
        await next_message(receive)
        relay.close()

    assert failures == ["the MCP client refused sampling/createMessage: Connection closed"]
    assert relay.pending == 0


async def test_an_initialize_the_server_did_not_answer_changes_nothing_the_client_declared() -> (
    None
):
    async with relayed() as (relay, receive), anyio.create_task_group() as tg:
        relay.introduced(hello({}))  # a second initialize, not answered (refused)
        link = relay.link(1, "ask")

        async def ask() -> None:
            async with link.serving():
                await link.generate(QUESTION)

        tg.start_soon(ask)
        request = await next_message(receive)
        relay.claim(answer(request.id))
        relay.settled("2025-11-25")  # now the server answered it: no sampling from here on
        with pytest.raises(ClientRequestError, match="did not offer sampling"):
            await relay.link(2, "ask").generate(QUESTION)

    assert request.method == "sampling/createMessage"


async def test_a_malformed_answer_from_the_client_is_refused_with_what_is_wrong() -> None:
    failures: list[str] = []
    async with relayed() as (relay, receive), anyio.create_task_group() as tg:
        link = relay.link(1, "ask")

        tg.start_soon(ask_within_its_call, link, failures)
        request = await next_message(receive)
        relay.claim(types.JSONRPCResponse(jsonrpc="2.0", id=request.id, result={"role": 7}))

    assert len(failures) == 1
    assert failures[0].startswith(
        "the MCP client answered sampling/createMessage with a malformed response: "
    )


async def test_an_ask_cancelled_after_the_client_stopped_reading_is_still_just_cancelled() -> None:
    outcomes: list[str] = []
    async with relayed() as (relay, receive), anyio.create_task_group() as tg:
        link = relay.link(1, "ask")
        scope = anyio.CancelScope()

        async def ask() -> None:
            with scope:
                try:
                    await link.generate(QUESTION)
                except anyio.get_cancelled_exc_class():
                    outcomes.append("cancelled")
                    raise
            outcomes.append("over")

        tg.start_soon(ask)
        await next_message(receive)
        receive.close()  # the client's pipe broke: telling it of the cancel fails
        scope.cancel()

    assert outcomes == ["cancelled", "over"]


async def test_a_call_that_fails_still_ends_and_its_link_refuses_what_comes_after() -> None:
    async with relayed() as (relay, receive):
        link = relay.link(1, "ask")
        with pytest.raises(LookupError, match="the call's own fault"):
            async with link.serving():
                raise LookupError("the call's own fault")
        with anyio.fail_after(10), pytest.raises(ClientRequestError) as late:
            await link.generate(QUESTION)
        sent = receive.statistics().current_buffer_used

    assert "has finished" in str(late.value)
    assert sent == 0 and relay.pending == 0
