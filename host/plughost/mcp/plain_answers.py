"""The commonest upstream answer, checked and shaped for its client without the SDK's models.

The direct lane (:mod:`plughost.mcp.direct_lane`) checks an upstream's
``tools/call`` result as the SDK's client checks it
(:func:`plughost.mcp.upstream_tap.checked_result`): validated against the
protocol version's wire model, dumped in that model's shape for the client,
and validated again as the SDK's ``CallToolResult``. Those two pydantic
validations are most of what the lane does between the upstream's answer and
the client's: measured in a running gateway, whose caches are cold each time
its turn comes between the client's and the upstream's, about 130 µs of the
190 µs, against 20 µs for the same two in a warm loop.

Most answers are text and nothing else: ``{"content": [{"type": "text",
"text": ...}, ...]}``, perhaps with a boolean ``isError``. For exactly that
shape the check cannot fail and its dump only reorders each block's keys, so
:func:`plain_answer` gives the client's answer from a few type tests. Anything
else (another key, another block type, a block's annotations or ``_meta``, a
text that is not a string, an ``isError`` that is not a boolean, a tool with an
output schema) returns None, and the full check decides. The shape is not
written down here from the specification: for each protocol version it is taken
from the SDK's own dump of a sample the first time that version is seen, and
where the two ever differ (another SDK release) that version always takes the
full check. ``tests/host/mcp/test_plain_answers.py`` compares the two on
generated answers.

After the answer is written the lane types it as the SDK's ``CallToolResult``
(one validation, which such an answer passes), for the registry's record of
the call; the version's wire check and dump, already answered, are not run again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp import Client
from mcp_types.methods import serialize_server_result
from pydantic_core import to_json

__all__ = ["plain_answer"]

_TEXT_BLOCK = frozenset({"type", "text"})
_ANSWER = frozenset({"content"})
_ANSWER_WITH_ERROR = frozenset({"content", "isError"})
_SAMPLES: tuple[dict[str, Any], ...] = (
    {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": ""}], "isError": False},
    {"content": [{"text": "b", "type": "text"}]},
    {"isError": True, "content": []},
)

_SHAPE_HOLDS: dict[str, bool] = {}
"""Per protocol version: whether the SDK shapes the samples as :func:`_shaped` does."""


def plain_answer(client: Client, tool: str, raw: Mapping[str, Any]) -> dict[str, Any] | None:
    """``raw`` shaped as the SDK's check shapes it, if it is a plain text answer; else None.

    None also when ``tool`` has an output schema (its structured content must be
    checked), is not in the session's list, or its connection's protocol version
    shapes answers otherwise than the SDK did when first asked.
    """
    schemas: dict[str, Any] = client.session._tool_output_schemas  # the SDK session's own cache
    if tool not in schemas or schemas[tool] is not None:
        return None
    shaped = _shaped(raw)
    if shaped is None:
        return None
    version = client.protocol_version
    holds = _SHAPE_HOLDS.get(version)
    if holds is None:
        holds = _SHAPE_HOLDS[version] = _shape_holds(version)
    return shaped if holds else None


def _shaped(raw: Mapping[str, Any]) -> dict[str, Any] | None:
    keys = raw.keys()
    if keys != _ANSWER and keys != _ANSWER_WITH_ERROR:
        return None
    content = raw["content"]
    if type(content) is not list:
        return None
    blocks = []
    for block in content:
        if type(block) is not dict or block.keys() != _TEXT_BLOCK or block["type"] != "text":
            return None
        text = block["text"]
        if type(text) is not str:
            return None
        blocks.append({"text": text, "type": "text"})
    if "isError" not in raw:
        return {"content": blocks}
    failed = raw["isError"]
    if type(failed) is not bool:
        return None
    return {"content": blocks, "isError": failed}


def _shape_holds(version: str) -> bool:
    """Whether the SDK shapes plain answers for ``version`` byte for byte as :func:`_shaped`."""
    try:
        theirs = [serialize_server_result("tools/call", version, s) for s in _SAMPLES]
    except Exception:  # a version the SDK does not know, or shapes otherwise: the full check
        return False
    return all(to_json(t) == to_json(_shaped(s)) for t, s in zip(theirs, _SAMPLES, strict=True))
