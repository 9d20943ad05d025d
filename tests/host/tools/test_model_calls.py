"""Model responses' tool calls to ToolInvocations and back, for OpenAI and Anthropic."""

from __future__ import annotations

import json

import pytest

from plughost.tools.model_calls import (
    from_anthropic_message,
    from_openai_message,
    to_anthropic_message,
    to_openai_message,
)

OPENAI_MESSAGE = {
    "role": "assistant",
    "content": "Checking the weather first.",
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Tokyo"}'},
        },
        {"id": "call_2", "type": "function", "function": {"name": "tool_search", "arguments": ""}},
    ],
}

ANTHROPIC_CONTENT = [
    {"type": "text", "text": "Let me find a tool."},
    {
        "type": "server_tool_use",
        "id": "srvtoolu_1",
        "name": "tool_search_tool_regex",
        "input": {"query": "weather"},
    },
    {
        "type": "tool_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": "get_weather"}],
        },
    },
    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Tokyo"}},
]


def test_openai_tool_calls_become_invocations_with_the_conversation_and_reasoning() -> None:
    calls = from_openai_message(OPENAI_MESSAGE, session_id="s1", stream_id="chat")
    first, second = calls.invocations
    assert (first.tool_name, first.call_id, first.arguments) == (
        "get_weather",
        "call_1",
        '{"city": "Tokyo"}',
    )
    assert (first.session_id, first.stream_id) == ("s1", "chat")
    assert first.reasoning == "Checking the weather first."
    assert second.arguments == ""
    back = to_openai_message(calls)
    assert back == OPENAI_MESSAGE


def test_anthropic_tool_use_runs_and_server_tool_search_is_kept_and_reported() -> None:
    calls = from_anthropic_message({"role": "assistant", "content": ANTHROPIC_CONTENT})
    (invocation,) = calls.invocations
    assert (invocation.tool_name, invocation.call_id) == ("get_weather", "toolu_1")
    assert invocation.arguments == {"city": "Tokyo"}
    assert invocation.reasoning == "Let me find a tool."
    (server,) = calls.server_calls
    assert server.tool_name == "tool_search_tool_regex"
    assert server.metadata["server_tool"] is True
    assert server.metadata["result"]["type"] == "tool_search_tool_result"
    assert calls.discovered == ("get_weather",)
    assert to_anthropic_message(calls) == {"role": "assistant", "content": ANTHROPIC_CONTENT}


def test_invocations_alone_render_back_in_both_shapes() -> None:
    calls = from_openai_message(OPENAI_MESSAGE)
    anthropic = to_anthropic_message(calls.invocations)
    assert anthropic["content"][0] == {
        "type": "tool_use",
        "id": "call_1",
        "name": "get_weather",
        "input": {"city": "Tokyo"},
    }
    openai = to_openai_message(from_anthropic_message(ANTHROPIC_CONTENT).invocations)
    assert json.loads(openai["tool_calls"][0]["function"]["arguments"]) == {"city": "Tokyo"}
    assert openai["content"] is None


def test_a_call_without_a_name_is_refused_with_its_id() -> None:
    with pytest.raises(ValueError, match="call_9"):
        from_openai_message({"tool_calls": [{"id": "call_9", "function": {"arguments": "{}"}}]})
