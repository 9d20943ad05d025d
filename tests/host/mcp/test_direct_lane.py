"""DirectLane in memory: the client's lines it takes, and answers that must go out.

A client's line the session's parser refuses is never taken: the session
answers it with its parse error. A call on the lane is answered exactly once,
whatever fails of ours on the way, and its counts are released.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any, cast

import mcp_types as types
import pytest
from mcp import MCPError

from plughost.mcp.client import _outcome_unknown
from plughost.mcp.content import result_from_mcp, result_to_mcp
from plughost.mcp.direct_lane import DirectLane, answer_line
from plughost.mcp.direct_lane import _Call as _LaneCall
from plughost.mcp.forwarding import CallForwarder
from plughost.mcp.shutdown import CallCounter
from plughost.mcp.upstream_tap import _checked
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import ToolExecutionResult, ToolSpec


def _lane(seen: list[Mapping[str, Any]]) -> DirectLane:
    def takes(params: Mapping[str, Any]) -> bool:
        seen.append(params)
        return False  # stop there: only whether the line got this far matters

    unused = cast(Any, None)
    return DirectLane(unused, unused, takes, unused, unused, unused, unused)


def _call(arguments: bytes) -> bytes:
    head = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":'
    return head + arguments + b"}}\n"


def test_a_call_the_sessions_parser_refuses_is_left_to_the_session() -> None:
    seen: list[Mapping[str, Any]] = []
    lane = _lane(seen)
    refused = [
        _call(b'{"text":"\\ud800"}'),  # a lone surrogate
        _call(b'{"a":' + b"[" * 300 + b"]" * 300 + b"}"),  # deeper than the session parses
        _call(b'{"text":"\xff"}'),  # not UTF-8
    ]
    for line in refused:
        with pytest.raises(ValueError, match="Invalid JSON"):
            types.jsonrpc_message_adapter.validate_json(line, by_name=False)

    taken = [lane.take_line(line) for line in refused]
    plain = lane.take_line(_call(b'{"text":"hi"}'))

    assert taken == [False] * len(refused) and plain is False
    assert seen == [{"name": "echo", "arguments": {"text": "hi"}}]


class _Bridge:
    def __init__(self) -> None:
        self.calls = CallCounter()


class _Link:
    over = False

    def served(self) -> None:
        self.over = True


class _Tap:
    def __init__(self) -> None:
        self.cancelled: list[str] = []

    def cancel_now(self, request_id: str, reason: str) -> None:
        self.cancelled.append(request_id)


class _Calling:
    """The caller record of a call: one that fails to be left, as a fault of ours would."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        raise RuntimeError("the caller record was already gone")


def _lane_call(
    client_id: int, spec: ToolSpec, link: _Link, tap: _Tap, registry: ToolRegistry
) -> _LaneCall:
    unused = cast(Any, None)
    return _LaneCall(
        client_id=client_id,
        name=spec.name,
        spec=spec,
        server="up",
        target=spec.name,
        timeout=30.0,
        connection=unused,
        client=unused,
        tap=cast(Any, tap),
        upstream_id=f"plughost-x-{client_id}",
        started=0.0,
        link=cast(Any, link),
        calling=_Calling(),
        registry=registry,
    )


async def test_a_fault_while_ending_or_answering_still_answers_once_and_releases_the_call() -> None:
    bridge, registry, written = _Bridge(), ToolRegistry(), []

    def respond(request_id: types.RequestId, result: types.CallToolResult) -> Any:
        raise RuntimeError("no shape for this result")

    def write_now(line: bytes) -> bool:
        written.append(json.loads(line))
        return True

    unused = cast(Any, None)
    lane = DirectLane(cast(Any, bridge), unused, unused, respond, lambda: None, write_now, unused)
    spec = ToolSpec(name="echo", description="", parameters_schema={"type": "object"})
    links, tap = [_Link(), _Link()], _Tap()
    answered, cancelled = (
        _lane_call(client_id, spec, link, tap, registry)
        for client_id, link in zip((7, 8), links, strict=True)
    )
    for _ in (answered, cancelled):
        bridge.calls.__enter__()
        registry.call_began()
    lane._calls[8] = cancelled

    lane._finish(answered, ToolExecutionResult(tool_name="echo", content="hi"))
    taken = lane.cancel(8)  # run by the client's reader: a fault must not escape into it

    # as the task path answers a fault of its own: one INTERNAL_ERROR under the client's id
    assert written == [
        {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {"code": types.INTERNAL_ERROR, "message": "no shape for this result"},
        }
    ]
    assert taken is True and tap.cancelled == ["plughost-x-8"]
    assert [link.over for link in links] == [True, True]  # late asks of the client refused
    assert registry.inflight == 0 and await registry.wait_idle(0)
    await asyncio.wait_for(bridge.calls.quiet(), 5)


class _Session:
    """The SDK session's output-schema check, for a tool that left the cache mid-call."""

    def __init__(self) -> None:
        self._tool_output_schemas: dict[str, Any] = {}
        self.relisted = asyncio.Event()

    async def validate_tool_result(self, name: str, result: types.CallToolResult) -> None:
        await self.relisted.wait()  # the SDK lists the tools again, then finds none to check


class _Caller:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


async def test_an_answer_whose_schema_check_must_wait_is_checked_as_the_task_path_checks_it() -> (
    None
):
    bridge, registry, written = _Bridge(), ToolRegistry(), []
    session = _Session()
    client = cast(Any, type("Client", (), {"protocol_version": "2025-11-25", "session": session}))

    def respond(request_id: types.RequestId, result: types.CallToolResult) -> Any:
        return types.JSONRPCResponse(
            jsonrpc="2.0",
            id=request_id,
            result=result.model_dump(by_alias=True, mode="json", exclude_none=True),
        )

    unused = cast(Any, None)
    lane = DirectLane(
        cast(Any, bridge), unused, unused, respond, lambda: None, written.append, unused
    )
    spec = ToolSpec(name="vanish", description="", parameters_schema={"type": "object"})
    tap, calls = _Tap(), []
    for client_id in (1, 2):
        call = _lane_call(client_id, spec, _Link(), tap, registry)
        call.client, call.calling = client, _Caller()
        bridge.calls.__enter__()
        registry.call_began()
        lane._calls[client_id] = call
        calls.append(call)
    raw = {"content": [{"type": "text", "text": "gone"}], "structuredContent": {"gone": True}}

    for call in calls:
        lane._settle(call, raw)  # its tool left the session's cache: the check must list first
    nothing_yet = list(written)
    lane.cancel(2)  # a cancel meanwhile still ends a call unanswered
    session.relisted.set()
    await asyncio.wait_for(bridge.calls.quiet(), 5)

    assert nothing_yet == []
    assert [json.loads(line) for line in written] == [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {
                "content": [{"type": "text", "text": "gone"}],
                "structuredContent": {"gone": True},
                "isError": False,
                "resultType": "complete",
            },
        }
    ]
    assert registry.inflight == 0


class _CheckedSession:
    """The SDK session of a tool whose output schema it knows: the check runs to the end at once."""

    def __init__(self) -> None:
        self._tool_output_schemas: dict[str, Any] = {"echo": None}

    async def validate_tool_result(self, name: str, result: types.CallToolResult) -> None:
        return None


async def test_a_passed_on_answer_goes_out_before_the_call_is_counted_and_only_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The client's answer is written first; typing and counting the result come after it,
    # and a fault of ours there is recorded as the call's failure without a second answer.
    bridge, registry = _Bridge(), ToolRegistry()
    written: list[bytes] = []
    observed: list[tuple[int, ToolExecutionResult]] = []
    client = cast(Any, SimpleNamespace(protocol_version="2025-11-25", session=_CheckedSession()))
    registry.add_call_observer(lambda spec, result, s: observed.append((len(written), result)))

    def write_now(line: bytes) -> bool:
        written.append(line)
        return True

    def typed_late(name: str, result: types.CallToolResult) -> ToolExecutionResult:
        raise RuntimeError("typing failed")

    unused = cast(Any, None)
    lane = DirectLane(
        cast(Any, bridge), unused, unused, unused, lambda: "2025-11-25", write_now, unused
    )
    spec = ToolSpec(name="echo", description="", parameters_schema={"type": "object"})
    calls = []
    for client_id in (1, 2):
        call = _lane_call(client_id, spec, _Link(), _Tap(), registry)
        call.client, call.calling = client, _Caller()
        bridge.calls.__enter__()
        registry.call_began()
        lane._calls[client_id] = call
        calls.append(call)
    raw = {"content": [{"type": "text", "text": "Echo: hi"}]}

    lane._settle(calls[0], raw)
    monkeypatch.setattr("plughost.mcp.direct_lane.result_from_mcp", typed_late)
    lane._settle(calls[1], raw)

    answers = [json.loads(line) for line in written]
    assert answers == [
        {"jsonrpc": "2.0", "id": i, "result": {**raw, "isError": False}} for i in (1, 2)
    ]
    # each call was counted after its answer was written: the first a success, the second
    # the registry's failure for the fault, as run_call records one
    assert [(seen, result.success) for seen, result in observed] == [(1, True), (2, False)]
    assert "typing failed" in (observed[1][1].error_message or "")
    assert registry.inflight == 0
    await asyncio.wait_for(bridge.calls.quiet(), 5)


class _LostSession(_Session):
    """The connection closes while the SDK lists the tools again for the check."""

    async def validate_tool_result(self, name: str, result: types.CallToolResult) -> None:
        raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed")


class _Connection:
    def __init__(self) -> None:
        self.marked: list[MCPError | None] = []

    def lost_during(self, client: object, error: MCPError | None = None) -> Exception:
        self.marked.append(error)  # the real one marks the connection lost, as here
        return _outcome_unknown("Connection closed")


async def test_a_connection_lost_during_the_waiting_check_fails_as_a_lost_connection() -> None:
    bridge, registry, written = _Bridge(), ToolRegistry(), []
    client = cast(Any, type("Client", (), {"protocol_version": "2025-11-25"}))
    client.session = _LostSession()

    def respond(request_id: types.RequestId, result: types.CallToolResult) -> Any:
        return types.JSONRPCResponse(
            jsonrpc="2.0", id=request_id, result=result.model_dump(by_alias=True, mode="json")
        )

    unused = cast(Any, None)
    lane = DirectLane(
        cast(Any, bridge), unused, unused, respond, lambda: None, written.append, unused
    )
    spec = ToolSpec(name="vanish", description="", parameters_schema={"type": "object"})
    call = _lane_call(1, spec, _Link(), _Tap(), registry)
    connection = _Connection()
    call.client, call.calling, call.connection = client, _Caller(), cast(Any, connection)
    bridge.calls.__enter__()
    registry.call_began()
    lane._calls[1] = call

    lane._settle(call, {"content": [], "structuredContent": {"gone": True}})
    await asyncio.wait_for(bridge.calls.quiet(), 5)

    (answer,) = [json.loads(line) for line in written]
    (text,) = [block["text"] for block in answer["result"]["content"]]
    # the task path's words for a server gone mid-call, not the SDK's "Connection closed"
    assert "MCP server 'up' lost the connection during 'vanish'" in text, text
    assert "may or may not have run" in text and answer["result"]["isError"] is True
    assert len(connection.marked) == 1  # the connection is known lost, as on the task path


# Answers as published servers shape them: text, media with annotations between texts,
# embedded resources, resource links, structured content with _meta, errors, unknown
# fields, audio, nothing, a block's own _meta; isError stated or left out.
ANSWERS: list[dict[str, Any]] = [
    {"content": [{"type": "text", "text": "Echo: hi"}]},
    {
        "content": [
            {"type": "text", "text": "a"},
            {
                "type": "image",
                "data": "iVBORw0KGgo=",
                "mimeType": "image/png",
                "annotations": {"audience": ["user"], "priority": 0.5},
            },
            {"type": "text", "text": "b"},
        ]
    },
    {
        "content": [
            {
                "type": "resource",
                "resource": {"uri": "test://r/1", "mimeType": "text/plain", "text": "R"},
            }
        ]
    },
    {"content": [{"type": "resource_link", "uri": "file:///x", "name": "x", "description": "d"}]},
    {"content": [{"type": "text", "text": "{}"}], "structuredContent": {"a": 1}, "_meta": {"k": 1}},
    {"content": [{"type": "text", "text": "bad"}], "isError": True},
    {"content": [{"type": "text", "text": "x"}], "isError": False, "unknown": "field"},
    {"content": [{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}]},
    {"content": []},
    {"content": [{"type": "text", "text": "x", "_meta": {"a": 1}}]},
]


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_an_answer_passed_on_as_checked_is_the_json_the_long_way_writes(version: str) -> None:
    # A client of the server's own version gets the answer as the server's check shaped it;
    # the long way types it, converts it twice and shapes it again for the client.
    for raw in ANSWERS:
        checked, shaped = _checked(cast(Any, SimpleNamespace(protocol_version=version)), raw)
        assert shaped is not None
        forwarder = cast(Any, SimpleNamespace(_version=version))
        result = result_to_mcp(result_from_mcp("t", checked))
        long_way = CallForwarder._response(forwarder, 7, result)
        assert json.loads(answer_line(7, shaped)) == json.loads(
            long_way.model_dump_json(by_alias=True, exclude_unset=True)
        ), raw


def test_an_answer_the_check_changes_is_not_passed_on_as_the_server_shaped_it() -> None:
    client = cast(Any, SimpleNamespace(protocol_version="2025-11-25"))
    content = [{"type": "text", "text": "x"}]
    assert _checked(client, {"content": content, "ttlMs": -5})[1] is None
    assert _checked(client, {"content": content, "resultType": "complete"})[1] is None
    assert _checked(client, {"content": content})[1] is not None
