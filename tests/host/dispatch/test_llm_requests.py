"""``llm.*`` arguments become MaiBot provider requests, and provider answers are read back."""

from __future__ import annotations

import pytest

from plughost.dispatch.llm_requests import ProviderReplyError, build_request, read_reply


def test_a_chat_prompt_becomes_context_items_by_role() -> None:
    prompt = [
        {"role": "system", "content": "简短回答"},
        {"role": "user", "content": [{"type": "text", "text": "你好"}]},
    ]

    operation, request = build_request("llm.generate", {"prompt": prompt, "model": "m"}, "p", "c")

    assert operation == "response"
    assert [(i["item_type"], i["parts"]) for i in request["context_items"]] == [
        ("SystemMessageItem", [{"type": "text", "text": "简短回答"}]),
        ("UserMessageItem", [{"type": "text", "text": "你好"}]),
    ]
    assert request["model_info"]["name"] == "m"
    assert request["api_provider"] == {"name": "p", "client_type": "c"}


def test_a_missing_prompt_is_a_value_error_naming_it() -> None:
    with pytest.raises(ValueError, match="needs 'prompt'"):
        build_request("llm.generate", {"prompt": ""}, "p", "c")


def test_output_items_are_read_into_response_reasoning_and_tool_calls() -> None:
    result = {
        "item_schema_version": 1,
        "output_items": [
            {"item_type": "ReasoningItem", "text_parts": ["想一想"]},
            {"item_type": "AssistantMessageItem", "parts": [{"type": "text", "text": "好"}]},
            {
                "item_type": "FunctionCallItem",
                "tool_call": {"call_id": "c1", "func_name": "f", "args": {"a": 1}},
            },
        ],
    }

    answer = read_reply("llm.generate_with_tools", result, "m")

    assert (answer["response"], answer["reasoning"], answer["model_name"]) == ("好", "想一想", "m")
    assert answer["tool_calls"] == [{"id": "c1", "function": {"name": "f", "arguments": {"a": 1}}}]


@pytest.mark.parametrize(
    ("result", "reason"),
    [
        ({"item_schema_version": 2, "output_items": []}, "item_schema_version 2 is not 1"),
        ({"content": 5}, "'content' must be a string, got int"),
        ({"tool_calls": [{"function": {}}]}, "a tool call needs a function name"),
    ],
)
def test_an_unreadable_answer_says_what_is_wrong(result: dict[str, object], reason: str) -> None:
    with pytest.raises(ProviderReplyError, match=reason):
        read_reply("llm.generate", result, "m")


def test_audio_transcription_is_left_to_the_embedder() -> None:
    with pytest.raises(ValueError, match=r"llm\.transcribe_audio has no LLM provider operation"):
        build_request("llm.transcribe_audio", {"audio_base64": "AAA"}, "p", "c")
