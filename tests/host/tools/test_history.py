"""Tests for history messages built from tool results: media split, turns and size limits."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from plughost.tools.history import (
    ResultLimiter,
    media_index,
    to_anthropic_messages,
    to_anthropic_turn,
    to_openai_messages,
    to_openai_turn,
)
from plughost_sdk.models import ContentItem, ToolExecutionResult
from plughost_sdk.results import normalize_result

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
PNG_B64 = base64.b64encode(PNG).decode("ascii")
WAV = b"RIFF" + b"\x01" * 60
WAV_B64 = base64.b64encode(WAV).decode("ascii")


def _draw_result() -> ToolExecutionResult:
    return normalize_result(
        "draw",
        {
            "content": "The image has been generated.",
            "content_items": [
                {
                    "type": "image",
                    "data": PNG_B64,
                    "mime_type": "image/png",
                    "name": "result.png",
                    "description": "a red square",
                }
            ],
        },
    )


def _mixed_result() -> ToolExecutionResult:
    return ToolExecutionResult(
        tool_name="mixed",
        content="Here you go.",
        content_items=[
            ContentItem(content_type="image", data=PNG, mime_type="image/png", name="a.png"),
            ContentItem(content_type="text", text="a caption"),
            ContentItem(content_type="binary", data=b"\x00\x01", name="blob.bin"),
            ContentItem(content_type="audio", data=WAV, mime_type="audio/wav", name="hi.wav"),
        ],
    )


def _texts(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else repr(content)


# --- OpenAI ------------------------------------------------------------------------------


def test_openai_messages_split_an_image_into_a_tool_message_and_a_user_message() -> None:
    tool, user = to_openai_messages(_draw_result(), "call_1")
    assert tool == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "The image has been generated.\n"
        "[image tool_result:call_1:1 result.png image/png — a red square]",
    }
    assert user == {
        "role": "user",
        "content": [
            {
                "type": "text",
                "text": "Media from tool result tool_result:call_1:1 (not a user message): "
                "result.png image/png — a red square",
            },
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
        ],
    }


def test_openai_messages_attach_wav_audio_as_input_audio() -> None:
    messages = to_openai_messages(_mixed_result(), "c9")
    audio = messages[-1]["content"]
    assert audio[0]["text"].startswith(
        "Media from tool result tool_result:c9:3 (not a user message)"
    )
    assert audio[1] == {"type": "input_audio", "input_audio": {"data": WAV_B64, "format": "wav"}}


def test_openai_messages_name_an_unsupported_audio_format_instead_of_attaching_it() -> None:
    result = ToolExecutionResult(
        content_items=[ContentItem(content_type="audio", data=b"Ogg", mime_type="audio/ogg")]
    )
    messages = to_openai_messages(result, "c1")
    assert len(messages) == 1
    assert "not attached: audio/ogg audio cannot be attached" in messages[0]["content"]


def test_media_items_are_numbered_from_one_and_text_items_take_no_number() -> None:
    tool = to_openai_messages(_mixed_result(), "c9")[0]["content"]
    assert "[image tool_result:c9:1 a.png image/png]" in tool
    assert "a caption" in tool
    assert "[binary tool_result:c9:2 blob.bin (not attached:" in tool
    assert "[audio tool_result:c9:3 hi.wav audio/wav]" in tool
    assert "tool_result:c9:4" not in tool
    assert media_index("c9", 3) == "tool_result:c9:3"


def test_binary_items_never_get_a_media_message() -> None:
    messages = to_openai_messages(_mixed_result(), "c9")
    assert [m["role"] for m in messages] == ["tool", "user", "user"]
    assert "tool_result:c9:2" not in repr(messages[1:])


def test_tool_result_text_never_holds_media_base64() -> None:
    for messages in (
        to_openai_messages(_mixed_result(), "c"),
        to_anthropic_messages(_mixed_result(), "c"),
    ):
        assert PNG_B64 not in _texts(messages[0])
        assert WAV_B64 not in _texts(messages[0])


def test_a_data_url_written_into_the_text_is_replaced() -> None:
    result = ToolExecutionResult(content=f"see data:image/png;base64,{PNG_B64} above")
    (tool,) = to_openai_messages(result, "c")
    assert tool["content"] == "see [inline data omitted] above"


def test_an_image_given_by_web_url_is_attached_by_url() -> None:
    result = ToolExecutionResult(
        content_items=[ContentItem(content_type="image", uri="https://example.com/a.png")]
    )
    user = to_openai_messages(result, "c")[1]
    assert user["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "https://example.com/a.png"},
    }
    anthropic_user = to_anthropic_messages(result, "c")[1]
    assert anthropic_user["content"][1]["source"] == {
        "type": "url",
        "url": "https://example.com/a.png",
    }


def test_openai_turn_puts_every_tool_message_before_the_media_messages() -> None:
    messages = to_openai_turn([("a", _draw_result()), ("b", _draw_result())])
    assert [(m["role"], m.get("tool_call_id")) for m in messages] == [
        ("tool", "a"),
        ("tool", "b"),
        ("user", None),
        ("user", None),
    ]
    assert "tool_result:a:1" in messages[2]["content"][0]["text"]
    assert "tool_result:b:1" in messages[3]["content"][0]["text"]


# --- Anthropic ---------------------------------------------------------------------------


def test_anthropic_messages_split_an_image_into_a_tool_result_and_a_user_message() -> None:
    result_message, media_message = to_anthropic_messages(_draw_result(), "toolu_1")
    assert result_message == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": "The image has been generated.\n"
                "[image tool_result:toolu_1:1 result.png image/png — a red square]",
            }
        ],
    }
    assert media_message == {
        "role": "user",
        "content": [
            {
                "type": "text",
                "text": "Media from tool result tool_result:toolu_1:1 (not a user message): "
                "result.png image/png — a red square",
            },
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
            },
        ],
    }


def test_anthropic_messages_keep_audio_as_an_index_line_only() -> None:
    messages = to_anthropic_messages(_mixed_result(), "t")
    assert len(messages) == 2  # the tool result and the image; no audio message
    text = messages[0]["content"][0]["content"]
    assert "[audio tool_result:t:3 hi.wav audio/wav (not attached: audio cannot be attached" in text


def test_anthropic_messages_mark_a_failed_result_as_an_error() -> None:
    failed = ToolExecutionResult.failure("t", "it broke", "tool_error")
    (message,) = to_anthropic_messages(failed, "t1")
    block = message["content"][0]
    assert block["is_error"] is True
    assert block["content"] == "Error: it broke"


def test_anthropic_turn_puts_every_tool_result_block_first_in_one_user_message() -> None:
    (message,) = to_anthropic_turn([("a", _draw_result()), ("b", ToolExecutionResult())])
    kinds = [block["type"] for block in message["content"]]
    assert kinds == ["tool_result", "tool_result", "text", "image"]
    assert to_anthropic_turn([]) == []


# --- size limits -------------------------------------------------------------------------


def test_result_limiter_leaves_short_text_alone(tmp_path: Path) -> None:
    limiter = ResultLimiter(max_chars=1000, persist_dir=tmp_path)
    assert limiter.limit("short", call_id="c") == "short"
    assert list(tmp_path.iterdir()) == []


def test_result_limiter_truncates_with_a_marker_when_there_is_nowhere_to_save() -> None:
    limiter = ResultLimiter(max_chars=1000)
    text = "x" * 5000
    limited = limiter.limit(text, call_id="c")
    assert len(limited) <= 1000
    assert limited.endswith(
        "[... truncated 4100 characters; narrow the request to see the rest ...]"
    )
    assert limited.startswith("x" * 900 + "\n")


def test_result_limiter_saves_the_full_text_and_returns_a_preview(tmp_path: Path) -> None:
    limiter = ResultLimiter(max_chars=1000, persist_dir=tmp_path, preview_chars=100)
    text = "".join(f"line {i}\n" for i in range(1000))
    limited = limiter.limit(text, call_id="call_7", session_id="s1")
    path = tmp_path / "s1" / "call_7.txt"
    assert path.read_text(encoding="utf-8") == text
    assert str(path) in limited
    assert f"{len(text)} characters" in limited
    assert text[:100] in limited
    assert text[100:200] not in limited
    assert len(limited) < 1000


def test_result_limiter_keeps_saved_files_inside_its_directory(tmp_path: Path) -> None:
    limiter = ResultLimiter(max_chars=200, persist_dir=tmp_path / "results", preview_chars=10)
    limiter.limit("y" * 500, call_id="../../escape", session_id="../..")
    saved = list((tmp_path / "results").rglob("*.txt"))
    assert len(saved) == 1
    assert saved[0].resolve().is_relative_to((tmp_path / "results").resolve())


def test_result_limiter_falls_back_to_truncation_when_saving_fails(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("", encoding="utf-8")
    limiter = ResultLimiter(max_chars=300, persist_dir=blocker)
    limited = limiter.limit("z" * 1000, call_id="c")
    assert "truncated" in limited
    assert any("not saved" in record.getMessage() for record in caplog.records)


def test_result_limiter_keeps_the_preview_within_the_limit(tmp_path: Path) -> None:
    limiter = ResultLimiter(max_chars=400, persist_dir=tmp_path, preview_chars=5000)
    limited = limiter.limit("".join(str(i % 10) for i in range(2000)), call_id="c")
    assert len(limited) < 400 + len(str(tmp_path)) * 2 + 200
    assert "First 200 characters" in limited


def test_result_limiter_rejects_a_tiny_limit() -> None:
    with pytest.raises(ValueError, match="max_chars must be at least 200"):
        ResultLimiter(max_chars=10)


def test_history_messages_apply_the_limiter_to_the_tool_text(tmp_path: Path) -> None:
    result = ToolExecutionResult(content="w" * 3000)
    limiter = ResultLimiter(max_chars=500, persist_dir=tmp_path, preview_chars=50)
    (tool,) = to_openai_messages(result, "c1", limiter=limiter, session_id="s")
    assert len(tool["content"]) < 500
    assert (tmp_path / "s" / "c1.txt").read_text(encoding="utf-8") == "w" * 3000
