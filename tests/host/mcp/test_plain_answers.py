"""plain_answer: a text-only upstream answer, shaped without the SDK's models, as the SDK shapes it.

Differential: on generated answers, plain and nearly plain, :func:`plain_answer`
either declines or gives byte for byte what the full check
(:func:`plughost.mcp.upstream_tap.checked_result`, the SDK's validation and
dump) gives, and the full check then passes too.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import mcp_types as types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp_types.methods import serialize_server_result
from pydantic_core import to_json

from plughost.mcp.plain_answers import plain_answer
from plughost.mcp.upstream_tap import checked_result

HANDSHAKE_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]


class _Session:
    def __init__(self, schemas: dict[str, Any]) -> None:
        self._tool_output_schemas = schemas

    async def validate_tool_result(self, name: str, result: types.CallToolResult) -> None:
        return None


def _client(version: str, schemas: dict[str, Any] | None = None) -> Any:
    session = _Session({"t": None} if schemas is None else schemas)
    return cast(Any, SimpleNamespace(protocol_version=version, session=session))


_texts = st.text(st.characters(exclude_categories=["Cs"]), max_size=8)
_values = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), _texts, st.just({}), st.just([]))
_blocks = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": _texts}),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "TEXT", "image", ""]), "text": _values},
        optional={
            "annotations": st.just({"audience": ["user"]}),
            "_meta": st.just({"k": 1}),
            "data": st.just("AAAA"),
            "mimeType": st.just("image/png"),
            "extra": _values,
        },
    ),
    _values,
)
_plain_blocks = st.fixed_dictionaries({"type": st.just("text"), "text": _texts})
_plain = st.fixed_dictionaries(
    {"content": st.lists(_plain_blocks, max_size=4)}, optional={"isError": st.booleans()}
)
_noisy = st.fixed_dictionaries(
    {"content": st.one_of(st.lists(_blocks, max_size=4), _values)},
    optional={
        "isError": _values,
        "structuredContent": st.just({"a": 1}),
        "_meta": st.just({"k": 1}),
        "unknown": _values,
    },
)


@st.composite
def _near_plain(draw: st.DrawFn) -> dict[str, Any]:
    """A plain answer with one thing changed: a text, a type, a key, ``isError``."""
    answer: dict[str, Any] = draw(_plain)
    blocks = answer["content"]
    change = draw(st.sampled_from(["text", "type", "block key", "isError", "answer key"]))
    if change in ("text", "type", "block key") and not blocks:
        blocks.append({"type": "text", "text": "x"})
    block = blocks[draw(st.integers(0, len(blocks) - 1))] if blocks else None
    if change == "text" and block is not None:
        block["text"] = draw(_values)
    elif change == "type" and block is not None:
        block["type"] = draw(st.sampled_from(["TEXT", "image", "", "text "]))
    elif change == "block key" and block is not None:
        block[draw(st.sampled_from(["annotations", "_meta", "extra"]))] = draw(_values)
    elif change == "isError":
        answer["isError"] = draw(_values)
    else:
        answer[draw(st.sampled_from(["structuredContent", "_meta", "unknown"]))] = draw(_values)
    return answer


# A third plain, a third one change away, a third anything: each plain one is compared.
_answers = st.one_of(_plain, _near_plain(), _noisy)


@settings(max_examples=400, deadline=None)
@given(raw=_answers, version=st.sampled_from(HANDSHAKE_VERSIONS))
def test_a_plain_answer_is_the_full_checks_answer_byte_for_byte(
    raw: dict[str, Any], version: str
) -> None:
    client = _client(version)

    plain = plain_answer(client, "t", raw)

    if plain is not None:
        checked, shaped = checked_result(client, "t", raw)  # passes: nothing to report
        assert shaped is not None and to_json(plain) == to_json(shaped)
        assert to_json(plain) == to_json(serialize_server_result("tools/call", version, raw))
        assert checked.is_error is (raw.get("isError") is True)


@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
def test_text_answers_are_plain_and_the_rest_take_the_full_check(version: str) -> None:
    texts = {"content": [{"type": "text", "text": "Echo: hi"}, {"text": "", "type": "text"}]}
    failed = {"content": [{"type": "text", "text": "no"}], "isError": True}
    annotated = {"content": [{"type": "text", "text": "x", "annotations": {"priority": 1}}]}
    image = {"content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]}
    structured = {"content": [], "structuredContent": {"a": 1}}
    loose = {"content": [{"type": "text", "text": "x"}], "isError": 1}  # the SDK casts it

    assert plain_answer(_client(version), "t", texts) == {
        "content": [{"text": "Echo: hi", "type": "text"}, {"text": "", "type": "text"}]
    }
    assert plain_answer(_client(version), "t", failed) == {
        "content": [{"text": "no", "type": "text"}],
        "isError": True,
    }
    for other in (annotated, image, structured, loose):
        assert plain_answer(_client(version), "t", other) is None, other


def test_a_tool_with_an_output_schema_or_unlisted_or_a_later_protocol_takes_the_full_check() -> (
    None
):
    texts = {"content": [{"type": "text", "text": "x"}]}
    schema = {"type": "object"}

    assert plain_answer(_client("2025-11-25", {"t": schema}), "t", texts) is None
    assert plain_answer(_client("2025-11-25", {}), "t", texts) is None  # the SDK lists first
    assert plain_answer(_client("2026-07-28"), "t", texts) is None  # shaped otherwise
    assert plain_answer(_client("1999-01-01"), "t", texts) is None  # unknown to the SDK
