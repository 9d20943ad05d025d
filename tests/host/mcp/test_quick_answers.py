"""quick_answers: an answer with nothing before it goes as one JSON body; anything else streams.

The wrapped app here plays the SDK's part (an SSE response: headers, a priming
event, the request's events) over a real MemoryEventStore, so each test pins
one rule of what reaches the client. tests/integration/test_mcp_server_features.py
checks the same rules against a real ``plughost serve``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import anyio
import mcp_types as types
from starlette.types import Message, Receive, Scope, Send

from plughost.mcp.event_store import MemoryEventStore
from plughost.mcp.quick_answers import quick_answers

SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"connection", b"keep-alive"),
    (b"mcp-session-id", b"s1"),
]
ANSWER = types.JSONRPCResponse(jsonrpc="2.0", id=7, result={"content": []})
PROGRESS = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/progress")


def event(event_id: str, message: types.JSONRPCMessage | None) -> Message:
    if message is None:
        body = f"id: {event_id}\r\ndata: \r\nretry: 1000\r\n\r\n"
    else:
        data = message.model_dump_json(by_alias=True, exclude_unset=True)
        body = f"id: {event_id}\r\nevent: message\r\ndata: {data}\r\n\r\n"
    return {"type": "http.response.body", "body": body.encode(), "more_body": True}


START: Message = {"type": "http.response.start", "status": 200, "headers": SSE_HEADERS}
END: Message = {"type": "http.response.body", "body": b"", "more_body": False}


def sse_app(
    store: MemoryEventStore,
    messages: list[types.JSONRPCMessage],
    before: Callable[[types.JSONRPCMessage], Awaitable[None]] | None = None,
    ids: list[str] | None = None,
) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """An app that answers like the SDK: headers, priming event, each message stored, end."""
    stored = ids if ids is not None else []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send(START)
        stored.append(await store.store_event("7", None))
        await send(event(stored[-1], None))
        for message in messages:
            if before is not None:
                await before(message)
            stored.append(await store.store_event("7", message))
            await send(event(stored[-1], message))
        await send(END)

    return app


async def serve(app: Callable[..., Awaitable[None]], method: str = "POST") -> list[Message]:
    sent: list[Message] = []

    async def receive() -> Message:
        raise AssertionError("the request body is not read here")

    async def send(message: Message) -> None:
        sent.append(message)

    await app({"type": "http", "method": method, "headers": []}, receive, send)
    return sent


async def test_an_answer_with_nothing_before_it_goes_as_one_json_body() -> None:
    store = MemoryEventStore()

    sent = await serve(quick_answers(sse_app(store, [ANSWER]), store))

    start, body = sent
    headers = dict(start["headers"])
    assert start["status"] == 200
    assert headers[b"content-type"] == b"application/json"
    assert headers[b"mcp-session-id"] == b"s1"  # the session's header is kept
    assert b"cache-control" not in headers and b"connection" not in headers
    assert json.loads(body["body"]) == {"jsonrpc": "2.0", "id": 7, "result": {"content": []}}
    assert int(headers[b"content-length"]) == len(body["body"])
    assert not body.get("more_body", False)


async def test_a_quick_answers_stream_is_dropped_from_the_event_store() -> None:
    store = MemoryEventStore()
    ids: list[str] = []

    await serve(quick_answers(sse_app(store, [ANSWER], ids=ids), store))

    replayed: list[object] = []

    async def collect(item: object) -> None:
        replayed.append(item)

    priming, answer = ids
    assert not store.is_answer(answer)
    assert await store.replay_events_after(priming, collect) is None  # nothing to resume
    assert replayed == []


async def test_a_stream_that_says_anything_before_its_answer_goes_out_as_sse_unchanged() -> None:
    store = MemoryEventStore()
    app = sse_app(store, [PROGRESS, ANSWER])

    sent = await serve(quick_answers(app, store))
    expected = await serve(sse_app(MemoryEventStore(), [PROGRESS, ANSWER]))

    assert sent == expected
    assert dict(sent[0]["headers"])[b"content-type"] == b"text/event-stream"
    assert b"data: \r\n" in sent[1]["body"]  # the priming event comes first


async def test_a_stream_still_without_its_answer_after_the_window_goes_out_as_sse() -> None:
    store = MemoryEventStore()
    released = anyio.Event()
    sent: list[Message] = []

    async def wait_for_release(message: types.JSONRPCMessage) -> None:
        with anyio.fail_after(5):
            await released.wait()  # the answer comes only once the headers went out

    async def send(message: Message) -> None:
        sent.append(message)
        if message["type"] == "http.response.body":
            released.set()

    async def receive() -> Message:
        raise AssertionError("the request body is not read here")

    app = quick_answers(sse_app(store, [ANSWER], wait_for_release), store, window=0.01)
    await app({"type": "http", "method": "POST", "headers": []}, receive, send)

    assert [m["type"] for m in sent] == ["http.response.start"] + ["http.response.body"] * 3
    assert dict(sent[0]["headers"])[b"content-type"] == b"text/event-stream"
    assert b"data: \r\n" in sent[1]["body"] and b'"result"' in sent[2]["body"]
    answer_id = sent[2]["body"].split(b"\r\n", 1)[0].removeprefix(b"id: ").decode()
    assert store.is_answer(answer_id)  # kept: the client can resume this stream


async def test_responses_that_are_not_sse_and_other_methods_pass_untouched() -> None:
    store = MemoryEventStore()
    accepted: list[Message] = [
        {"type": "http.response.start", "status": 202, "headers": [(b"content-type", b"x/y")]},
        {"type": "http.response.body", "body": b""},
    ]

    async def plain(scope: Scope, receive: Receive, send: Send) -> None:
        for message in accepted:
            await send(message)

    assert await serve(quick_answers(plain, store)) == accepted
    get_stream = await serve(quick_answers(sse_app(store, [ANSWER]), store), method="GET")
    assert dict(get_stream[0]["headers"])[b"content-type"] == b"text/event-stream"
