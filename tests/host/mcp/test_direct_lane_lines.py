"""DirectLane.take_line: a client's line the session's parser refuses is never taken.

The session answers such a line with its parse error; the lane, reading the
line first, must leave it to the session rather than relay it upstream.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import mcp_types as types
import pytest

from plughost.mcp.direct_lane import DirectLane


def _lane(seen: list[Mapping[str, Any]]) -> DirectLane:
    def takes(params: Mapping[str, Any]) -> bool:
        seen.append(params)
        return False  # stop there: only whether the line got this far matters

    unused = cast(Any, None)
    return DirectLane(unused, unused, takes, unused, unused, unused)


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
