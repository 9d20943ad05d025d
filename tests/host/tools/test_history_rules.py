"""History held to the seeds: empty results, tagged media messages, compaction of old results."""

from __future__ import annotations

import json
from typing import Any

import pytest

from plughost.tools.compaction import compact_tool_results
from plughost.tools.history import (
    to_anthropic_messages,
    to_anthropic_turn,
    to_openai_messages,
    to_openai_turn,
)
from plughost.tools.messages import Tagged, drop_tool_media, tag_of
from plughost_sdk.models import ToolExecutionResult
from tests.host.tools.test_history import _draw_result


def test_an_empty_result_becomes_a_placeholder_naming_the_tool_in_both_shapes() -> None:
    empty = ToolExecutionResult(tool_name="clear_cache")
    (openai,) = to_openai_messages(empty, "c1")
    assert openai["content"] == "(clear_cache completed with no output)"
    (anthropic,) = to_anthropic_messages(empty, "c1")
    assert anthropic["content"][0]["content"] == "(clear_cache completed with no output)"


def test_split_out_media_are_tagged_with_their_source_and_index_in_both_shapes() -> None:
    result = _draw_result()
    tool, media = to_openai_messages(result, "call_1")
    assert not isinstance(tool, Tagged)
    assert isinstance(media, Tagged)
    assert (media.source, media.message_id) == ("tool_result_media", "tool_result:call_1:1")
    assert json.loads(json.dumps(media)) == dict(media)  # the API sees a plain message

    _, anthropic_media = to_anthropic_messages(result, "call_1")
    assert isinstance(anthropic_media, Tagged)
    assert anthropic_media.message_id == "tool_result:call_1:1"
    (turn,) = to_anthropic_turn([("call_1", result), ("call_2", result)])
    tagged = [block.message_id for block in turn["content"] if isinstance(block, Tagged)]
    assert tagged == ["tool_result:call_1:1"] * 2 + ["tool_result:call_2:1"] * 2


def test_tool_media_can_be_dropped_even_after_a_json_round_trip() -> None:
    result = _draw_result()
    openai = to_openai_turn([("call_1", result)])
    (anthropic,) = to_anthropic_turn([("call_1", result)])
    for history in (openai, [anthropic]):
        reloaded = json.loads(json.dumps(history))
        last = reloaded[-1]
        candidates = [last, *last["content"]] if isinstance(last["content"], list) else [last]
        tags = [tag_of(item) for item in candidates if tag_of(item) is not None]
        assert tags and tags[0] is not None and tags[0].message_id == "tool_result:call_1:1"
        for messages in (history, reloaded):
            kept = drop_tool_media(messages)
            text = json.dumps(kept)
            assert "image_url" not in text and '"image"' not in text
            assert "tool_result:call_1:1" in text  # the index line in the result stays


def _openai_history(sizes: list[int]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for number, size in enumerate(sizes):
        call = {"id": f"c{number}", "type": "function", "function": {"name": f"t{number}"}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{number}", "content": "x" * size})
    return messages


def test_compaction_is_off_by_default_and_keeps_the_newest_results_within_the_budget() -> None:
    history = _openai_history([100, 100, 100, 100])
    assert compact_tool_results(history) == history

    by_count = compact_tool_results(history, max_results=2)
    contents = [m["content"] for m in by_count if m["role"] == "tool"]
    assert contents[:2] == ["[t0 result omitted from context]", "[t1 result omitted from context]"]
    assert contents[2:] == ["x" * 100, "x" * 100]
    assert history[2]["content"] == "x" * 100  # the input is not changed

    by_chars = compact_tool_results(history, max_chars=250)
    assert [m["content"][:3] for m in by_chars if m["role"] == "tool"] == [
        "[t0",
        "[t1",
        "xxx",
        "xxx",
    ]
    huge = compact_tool_results(_openai_history([10, 5000]), max_chars=100)
    assert huge[-1]["content"] == "x" * 5000  # the newest result is never compacted
    assert huge[2]["content"] == "[t0 result omitted from context]"


def test_compaction_reads_the_anthropic_shape_and_names_the_tool_from_its_tool_use() -> None:
    history = [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "grep"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "1"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "b", "name": "grep"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": "2"}]},
    ]
    compacted = compact_tool_results(history, max_results=1)
    assert compacted[1]["content"][0]["content"] == "[grep result omitted from context]"
    assert compacted[3] is history[3]
    with pytest.raises(ValueError, match="max_chars"):
        compact_tool_results(history, max_chars=-1)
