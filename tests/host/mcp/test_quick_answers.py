"""Quick answers: an answer that comes first and at once is one JSON body; anything else streams.

A real registry is served over real HTTP by uvicorn with quick_answers_app and a
MemoryEventStore the tests can look into; requests are written by hand, so each
test sees exactly what reaches the wire. tests/integration/test_mcp_server_features.py
checks the same rules against a real ``plughost serve`` (progress before the
answer, resuming a slow call's stream).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
import uvicorn
from mcp.server.streamable_http import EventMessage, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from plughost.mcp.event_store import MemoryEventStore
from plughost.mcp.quick_answers import QUICK_WINDOW, _Window, quick_answers_app
from plughost.mcp.registry_server import RegistryMCPServer
from plughost.mcp.uvicorn_embed import EmbeddedUvicorn, bind, run_uvicorn, signal_startup
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import (
    ToolAvailabilityContext,
    ToolExecutionContext,
    ToolExecutionResult,
    ToolInvocation,
    ToolSpec,
)

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


class HeldProvider:
    """``quick`` answers at once; ``held`` answers once the test releases it."""

    provider_name = "held"
    provider_type = "builtin"

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.holding = asyncio.Event()

    async def list_tools(self, context: ToolAvailabilityContext | None = None) -> list[ToolSpec]:
        return [ToolSpec(name="quick", description="Quick."), ToolSpec(name="held", description="")]

    async def invoke(
        self, invocation: ToolInvocation, context: ToolExecutionContext | None = None
    ) -> ToolExecutionResult:
        if invocation.tool_name == "held":
            self.holding.set()
            await self.release.wait()
        return ToolExecutionResult(tool_name=invocation.tool_name, content="done")

    async def close(self) -> None:
        pass


@dataclass
class Served:
    url: str
    store: MemoryEventStore
    provider: HeldProvider

    async def probe(self) -> int:
        """Store a marker event and return its id: the store numbers events in order."""
        return int(await self.store.store_event("probe", None))


@asynccontextmanager
async def serving(window: float = QUICK_WINDOW) -> AsyncIterator[Served]:
    registry = ToolRegistry()
    provider = HeldProvider()
    registry.register_provider(provider)
    bridge = RegistryMCPServer(registry)
    store = MemoryEventStore()
    app = quick_answers_app(
        bridge.server,
        path="/mcp",
        host="127.0.0.1",
        event_store=store,
        retry_interval=1000,
        session_idle_timeout=None,
        max_sessions=None,
        window=window,
    )
    started, stopped = anyio.Event(), anyio.Event()
    server = EmbeddedUvicorn(
        uvicorn.Config(signal_startup(app, started), log_config=None, lifespan="on")
    )
    sock = bind("127.0.0.1", 0)
    async with bridge.running(), anyio.create_task_group() as tg:
        tg.start_soon(run_uvicorn, server, sock, stopped)
        with anyio.fail_after(10):
            await started.wait()
        try:
            yield Served(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", store, provider)
        finally:
            provider.release.set()
            server.should_exit = True
    sock.close()


async def open_session(http: httpx2.AsyncClient, url: str) -> dict[str, str]:
    """Open a 2025-11-25 session by hand; return the headers its requests carry."""
    params = types.InitializeRequestParams(
        protocol_version="2025-11-25",
        capabilities=types.ClientCapabilities(),
        client_info=types.Implementation(name="raw", version="1"),
    )
    initialize = types.JSONRPCRequest(
        jsonrpc="2.0", id=1, method="initialize", params=params.model_dump(by_alias=True)
    )
    body = initialize.model_dump_json(by_alias=True, exclude_none=True)
    response = await http.post(url, content=body, headers=HEADERS)
    headers = HEADERS | {
        "mcp-session-id": response.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
    }
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, json=initialized, headers=headers)).status_code == 202
    return headers


def call(name: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name}}


def answer_in(line: str) -> dict[str, Any] | None:
    if line.startswith("data:") and line[5:].strip():
        message: dict[str, Any] = json.loads(line[5:])
        return message if "result" in message else None
    return None


async def test_a_quick_answer_is_one_json_body_and_leaves_nothing_to_resume() -> None:
    # A window no busy machine overruns: the answer ends the wait the moment it comes.
    async with serving(window=30) as served, httpx2.AsyncClient(timeout=10) as http:
        headers = await open_session(http, served.url)
        before = await served.probe()

        response = await http.post(served.url, json=call("quick"), headers=headers)
        after = await served.probe()

    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers["mcp-session-id"] == headers["mcp-session-id"]
    assert response.json()["result"]["content"][0]["text"] == "done"
    assert after - before == 3  # the call stored its priming event and its answer
    replayed: list[EventMessage] = []

    async def collect(event: EventMessage) -> None:
        replayed.append(event)

    for event_id in range(before + 1, after):  # both are gone: no client ever saw their ids
        assert await served.store.replay_events_after(str(event_id), collect) is None
    assert replayed == []


async def test_a_late_answer_streams_from_its_priming_event_and_resumes_past_a_quick_one() -> None:
    async with serving() as served, httpx2.AsyncClient(timeout=10) as http:
        slow, other = await open_session(http, served.url), await open_session(http, served.url)
        async with http.stream("POST", served.url, json=call("held"), headers=slow) as response:
            # The headers come only once the window passed without the answer.
            assert response.headers["content-type"].startswith("text/event-stream")
            lines = response.aiter_lines()
            first = await anext(lines)
            assert first.startswith("id:")
            priming = first.split(":", 1)[1].strip()
            # Another session's request with the same id is answered as JSON meanwhile,
            # and forgetting its events leaves this stream's alone.
            quick = await http.post(served.url, json=call("quick"), headers=other)
            assert quick.status_code == 200
            served.provider.release.set()
            streamed = [answer async for line in lines if (answer := answer_in(line))]
        resumed = slow | {"Last-Event-ID": priming}
        async with http.stream("GET", served.url, headers=resumed) as replay:
            replayed = []
            async for line in replay.aiter_lines():
                if answer := answer_in(line):
                    replayed.append(answer)
                    break

    assert [answer["id"] for answer in streamed] == [2]
    assert replayed == streamed  # the answer, and nothing of the other session's


async def test_a_window_that_passes_before_the_wait_begins_still_streams_a_slow_call() -> None:
    # A window of nothing passes while the request is still being handed to the session,
    # before the wait for its first event has begun: the headers must not wait for the answer.
    async with serving(window=0) as served, httpx2.AsyncClient(timeout=10) as http:
        headers = await open_session(http, served.url)
        async with http.stream("POST", served.url, json=call("held"), headers=headers) as response:
            kind = response.headers["content-type"]
            served.provider.release.set()
            streamed = [
                answer async for line in response.aiter_lines() if (answer := answer_in(line))
            ]

    assert kind.startswith("text/event-stream")
    assert [answer["id"] for answer in streamed] == [2]


async def test_a_resumed_stream_replays_its_own_events_not_another_sessions_with_its_id() -> None:
    async with serving() as served, httpx2.AsyncClient(timeout=10) as http:
        sessions = [await open_session(http, served.url) for _ in range(2)]
        async with contextlib.AsyncExitStack() as stack:
            streams = [
                await stack.enter_async_context(
                    http.stream("POST", served.url, json=call("held"), headers=headers)
                )
                for headers in sessions  # both requests have the id 2
            ]
            lines = [stream.aiter_lines() for stream in streams]
            primings = [(await anext(each)).split(":", 1)[1].strip() for each in lines]
            served.provider.release.set()
            for each in lines:
                assert [answer async for line in each if (answer := answer_in(line))]
        resumed = sessions[0] | {"Last-Event-ID": primings[0]}
        events: list[dict[str, str]] = []
        async with http.stream("GET", served.url, headers=resumed) as replay:
            async for line in replay.aiter_lines():
                if line.startswith("data:"):
                    events.append({"data": line[5:].strip()})
                    if not events[-1]["data"]:
                        break  # the resumed stream's own priming event: the replay is over

    assert [json.loads(event["data"])["id"] for event in events[:-1]] == [2]


async def test_a_session_that_ends_leaves_none_of_its_streams_in_the_store() -> None:
    async with serving() as served, httpx2.AsyncClient(timeout=10) as http:
        headers = await open_session(http, served.url)
        async with http.stream("POST", served.url, json=call("held"), headers=headers) as stream:
            lines = stream.aiter_lines()
            priming = (await anext(lines)).split(":", 1)[1].strip()
            served.provider.release.set()
            assert [answer async for line in lines if (answer := answer_in(line))]
        kept = served.store.stream_of(priming)
        assert (await http.delete(served.url, headers=headers)).status_code == 200

    assert kept is not None  # resumable while the session lived
    assert served.store.stream_of(priming) is None


async def test_requests_the_sdk_refuses_get_its_errors_unchanged() -> None:
    async with serving() as served, httpx2.AsyncClient(timeout=10) as http:
        headers = await open_session(http, served.url)
        json_only = headers | {"Accept": "application/json"}
        no_session = {k: v for k, v in headers.items() if k != "mcp-session-id"}

        unacceptable = await http.post(served.url, json=call("quick"), headers=json_only)
        unparsable = await http.post(served.url, content=b"{", headers=headers)
        sessionless = await http.post(served.url, json=call("quick"), headers=no_session)

    assert unacceptable.status_code == 406
    assert unparsable.status_code == 400 and "Parse error" in unparsable.text
    assert sessionless.status_code == 400 and "Missing session ID" in sessionless.text


async def test_the_window_ends_a_wait_but_never_follows_an_event_already_handed_over() -> None:
    events, reader = anyio.create_memory_object_stream[EventMessage](16)
    answer = EventMessage(types.JSONRPCResponse(jsonrpc="2.0", id=2, result={}), "9")
    async with events, reader, anyio.create_task_group() as tg:
        got: list[EventMessage | None] = []

        async def wait(window: _Window) -> None:
            try:
                got.append(await window.first_event(reader))
            finally:
                window.close()

        idle = _Window(events, 3600)
        tg.start_soon(wait, idle)
        await anyio.wait_all_tasks_blocked()
        idle._end()  # nothing came: the wait ends with nothing
        await anyio.wait_all_tasks_blocked()
        handed = _Window(events, 3600)
        tg.start_soon(wait, handed)  # a second wait, this time for an event that comes
        await anyio.wait_all_tasks_blocked()
        events.send_nowait(answer)  # handed to the waiting receive...
        handed._end()  # ...so the window, passing at that moment, adds nothing
        await anyio.wait_all_tasks_blocked()
        left = events.statistics().current_buffer_used

    assert got == [None, answer]
    assert left == 0


async def test_a_window_passed_before_its_wait_takes_what_is_there_or_nothing() -> None:
    events, reader = anyio.create_memory_object_stream[EventMessage](16)
    answer = EventMessage(types.JSONRPCResponse(jsonrpc="2.0", id=2, result={}), "9")
    async with events, reader:
        empty = _Window(events, 3600)
        empty._end()  # passed while the request was being handed to the session
        nothing = await empty.first_event(reader)
        empty.close()
        events.send_nowait(answer)
        ready = _Window(events, 3600)
        ready._end()
        got = await ready.first_event(reader)
        ready.close()

    assert nothing is None
    assert got == answer


@pytest.mark.parametrize(
    ("owner", "name", "parameters"),
    [
        (StreamableHTTPSessionManager, "_admit_session", ["self", "requestor"]),
        (StreamableHTTPServerTransport, "terminate", ["self"]),
        (
            StreamableHTTPServerTransport,
            "_handle_post_request",
            ["self", "scope", "request", "receive", "send"],
        ),
        (StreamableHTTPServerTransport, "_check_content_type", ["self", "request"]),
        (
            StreamableHTTPServerTransport,
            "_mint_priming_event",
            ["self", "stream_id", "protocol_version"],
        ),
        (
            StreamableHTTPServerTransport,
            "_create_session_message",
            ["self", "message", "request", "request_id", "protocol_version"],
        ),
        (StreamableHTTPServerTransport, "_create_event_data", ["self", "event_message"]),
        (StreamableHTTPServerTransport, "_clean_up_memory_streams", ["self", "request_id"]),
    ],
)
def test_the_sdk_members_quick_answers_overrides_or_calls_are_unchanged(
    owner: type, name: str, parameters: list[str]
) -> None:
    version = metadata.version("mcp")
    member = getattr(owner, name, None)
    assert member is not None, f"mcp {version} has no {owner.__name__}.{name}: see quick_answers"
    found = list(inspect.signature(member).parameters)
    assert found == parameters, f"mcp {version} changed {owner.__name__}.{name}{found}"


async def test_a_transport_the_sdk_builds_has_the_state_quick_answers_uses() -> None:
    version = metadata.version("mcp")
    transport = StreamableHTTPServerTransport("s1", event_store=MemoryEventStore())
    async with transport.connect():
        for attribute in (
            "_read_stream_writer",
            "_request_streams",
            "_sse_stream_writers",
            "_event_store",
        ):
            assert getattr(transport, attribute, None) is not None, (
                f"mcp {version} has no StreamableHTTPServerTransport.{attribute}: see quick_answers"
            )
