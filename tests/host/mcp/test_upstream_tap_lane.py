"""UpstreamTap.send_now and take_line: what an upstream server's lines may do to a lane call.

The lines are what a hostile server could write once it has seen one of
plughost's request ids: only a well-formed response under an id the tap issued
and still waits on settles the call, once; anything else is left for the
session's parser, and nothing a line holds escapes as an exception into the
reader of the server's output.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import pytest

from plughost.mcp.upstream_tap import UpstreamTap


class _Pipe:
    """The stdio transport's writer, as the tap sees it: lines written at once."""

    def __init__(self, accepts: bool = True) -> None:
        self.lines: list[dict[str, Any]] = []
        self.raw: list[bytes] = []
        self.accepts = accepts

    def write_now(self, data: bytes, request: bool) -> bool:
        if request and not self.accepts:
            return False
        self.raw.append(data.rstrip(b"\n"))
        self.lines.append(json.loads(data))
        return True


def _tap(pipe: _Pipe) -> UpstreamTap:
    tap = UpstreamTap()
    tap._write = pipe  # what wrap() keeps of the transport
    return tap


def _line(message: Any) -> bytes:
    return json.dumps(message).encode()


def test_only_a_well_formed_answer_to_a_waiting_id_settles_the_call_once() -> None:
    pipe, outcomes = _Pipe(), []
    tap = _tap(pipe)
    sent = tap.send_now({"name": "echo", "arguments": {}}, outcomes.append)
    assert sent is not None and pipe.lines[0]["id"] == sent
    deep = b'{"jsonrpc":"2.0","id":"' + sent.encode() + b'","result":' + b"[" * 100_000

    left_alone = [
        deep + b"]" * 100_000 + b"}",  # nested past the parser's depth
        _line({"jsonrpc": "2.0", "id": [sent], "result": {}}),  # an id that is no key
        _line({"jsonrpc": "2.0", "id": sent, "result": {}, "error": {}}),  # both
        _line({"jsonrpc": "2.0", "id": sent, "error": {"code": "x"}}),  # a malformed error
        _line({"jsonrpc": "2.0", "id": sent, "result": ["content"]}),  # not an object
        _line({"jsonrpc": "1.0", "id": sent, "result": {}}),
        _line({"jsonrpc": "2.0", "id": sent + "0", "result": {}}),  # an id never issued
        b"not json " + sent.encode(),
    ]
    taken = [tap.take_line(line) for line in left_alone]
    answered = tap.take_line(_line({"jsonrpc": "2.0", "id": sent, "result": {"content": []}}))
    again = tap.take_line(_line({"jsonrpc": "2.0", "id": sent, "result": {"content": []}}))

    assert taken == [False] * len(left_alone)
    assert answered is True and again is False  # the second goes to the session, which drops it
    assert outcomes == [{"content": []}]


def test_an_error_answer_settles_the_call_with_the_servers_error() -> None:
    outcomes: list[object] = []
    tap = _tap(_Pipe())
    sent = tap.send_now({"name": "echo", "arguments": {}}, outcomes.append)
    error = {"code": -32602, "message": "no such tool"}

    assert tap.take_line(_line({"jsonrpc": "2.0", "id": sent, "error": error}))
    assert outcomes == [types.ErrorData(code=-32602, message="no such tool")]


def test_a_cancelled_call_is_told_to_the_server_and_its_late_answer_is_not_taken() -> None:
    pipe, outcomes = _Pipe(), []
    tap = _tap(pipe)
    sent = tap.send_now({"name": "echo", "arguments": {}}, outcomes.append)
    assert sent is not None

    tap.cancel_now(sent, "the caller cancelled the call")
    late = tap.take_line(_line({"jsonrpc": "2.0", "id": sent, "result": {"content": []}}))

    assert pipe.lines[1] == {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": sent, "reason": "the caller cancelled the call"},
    }
    assert late is False and outcomes == []


def test_nothing_is_sent_on_a_backed_up_pipe_and_a_closed_tap_settles_what_waits() -> None:
    outcomes: list[object] = []
    backed_up = _tap(_Pipe(accepts=False))
    refused = backed_up.send_now({"name": "echo", "arguments": {}}, outcomes.append)
    tap = _tap(_Pipe())
    sent = tap.send_now({"name": "echo", "arguments": {}}, outcomes.append)

    tap.close()

    assert refused is None and sent is not None
    assert outcomes == [types.ErrorData(code=types.CONNECTION_CLOSED, message="Connection closed")]
    assert tap.send_now({"name": "echo", "arguments": {}}, outcomes.append) is None


def test_a_line_the_sessions_parser_refuses_is_not_taken_for_a_call() -> None:
    pipe, outcomes = _Pipe(), []
    tap = _tap(pipe)
    bodies = [
        # a lone surrogate: no JSON a client could be sent, so no answer it could get
        b'[{"type":"text","text":"\\ud800"}]',
        # deeper than the session's parser goes, though not Python's json module
        b'[{"type":"text","text":"x","_meta":{"a":' + b"[" * 300 + b"]" * 300 + b"}}]",
        b'[{"type":"text","text":"\xff"}]',  # not UTF-8
    ]
    refused = []
    for body in bodies:
        sent = tap.send_now({"name": "echo", "arguments": {}}, outcomes.append)
        assert sent is not None
        line = b'{"jsonrpc":"2.0","id":"' + sent.encode() + b'","result":{"content":' + body + b"}}"
        with pytest.raises(ValueError, match="Invalid JSON"):
            types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        refused.append(line)

    assert [tap.take_line(line) for line in refused] == [False] * len(refused)
    assert outcomes == []


def test_a_call_is_written_as_the_sessions_writer_writes_it_or_not_at_all() -> None:
    pipe, outcomes = _Pipe(), []
    tap = _tap(pipe)
    arguments = {"a": float("inf"), "b": "\u00e9", "c": [1e16, None]}

    sent = tap.send_now({"name": "add", "arguments": arguments}, outcomes.append)
    unwritable = tap.send_now({"name": "add", "arguments": {"a": "\ud800"}}, outcomes.append)

    assert sent is not None
    session = types.JSONRPCRequest(
        jsonrpc="2.0", id=sent, method="tools/call", params={"name": "add", "arguments": arguments}
    )
    assert pipe.raw == [session.model_dump_json(by_alias=True, exclude_unset=True).encode()]
    assert unwritable is None  # the task's way: the session's writer says what is wrong
