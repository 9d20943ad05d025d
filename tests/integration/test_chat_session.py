"""host.session(): one conversation's turn loop with its context given once (real runners)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from plughost import HostSettings, PluginHost, ToolSearchSettings
from tests.conftest import EXAMPLES, fast_settings

CONVERTER = EXAMPLES / "unit_converter"


def _names(definitions: list[dict[str, object]]) -> list[str]:
    return [str(d["function"]["name"]) for d in definitions]


def _settings(tmp_path: Path, **search: object) -> HostSettings:
    return fast_settings(tmp_path).model_copy(update={"tool_search": ToolSearchSettings(**search)})


def _openai_message(call_id: str, name: str, arguments: dict[str, object]) -> dict[str, object]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": call_id, "function": function}],
    }


async def test_a_turn_with_tool_search_finds_runs_and_answers_in_one_conversation(
    tmp_path: Path,
) -> None:
    settings = _settings(tmp_path, enabled=True, threshold=0)
    async with PluginHost([CONVERTER], settings=settings) as host:
        chat = host.session("s1", stream_id="chat-7", user_id="u1")
        other = host.session("s2", stream_id="chat-8")
        before = _names(await chat.tools())
        found = await chat.invoke("tool_search", {"query": "convert units of length"})
        after = _names(await chat.tools())

        calls = chat.openai_calls(
            _openai_message(
                "call_1", "unit_convert", {"value": 2, "from_unit": "km", "to_unit": "m"}
            )
        )
        results = await chat.run(calls)
        messages = chat.openai_turn(calls, results)
        elsewhere = await other.run(other.openai_calls(_openai_message("c", "unit_convert", {})))

    assert before == ["tool_search"]  # the host registered tool_search itself
    assert found.success, found.error_message
    assert [m["name"] for m in found.structured_content["matches"]] == ["unit_convert"]
    assert after == ["tool_search", "unit_convert"]
    assert [c.session_id for c in calls.invocations] == ["s1"]
    assert [c.stream_id for c in calls.invocations] == ["chat-7"]
    assert results[0].success, results[0].error_message
    assert messages == [{"role": "tool", "tool_call_id": "call_1", "content": "2 km = 2000 m"}]
    # Discoveries belong to their conversation: s2 never searched.
    assert elsewhere[0].error_code == "tool_not_discovered"


async def test_without_tool_search_a_session_sends_every_tool_and_no_search(
    tmp_path: Path,
) -> None:
    async with PluginHost([CONVERTER], settings=fast_settings(tmp_path)) as host:
        chat = host.session("s1")
        openai = await chat.tools()
        anthropic = await chat.tools(format="anthropic")
        hint = await chat.hint()

    assert host.search is None
    assert _names(openai) == ["unit_convert"]
    assert [d["name"] for d in anthropic] == ["unit_convert"]
    assert hint is None


async def test_an_anthropic_turn_records_what_the_apis_own_search_loaded(tmp_path: Path) -> None:
    settings = _settings(tmp_path, enabled=True, threshold=0, strategy="anthropic")
    response = {
        "content": [
            {
                "type": "server_tool_use",
                "id": "srv_1",
                "name": "tool_search_tool_bm25",
                "input": {"query": "units"},
            },
            {
                "type": "tool_search_tool_result",
                "tool_use_id": "srv_1",
                "content": {
                    "type": "tool_search_tool_search_result",
                    "tool_references": [{"type": "tool_reference", "tool_name": "unit_convert"}],
                },
            },
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "unit_convert",
                "input": {"value": 1, "from_unit": "kg", "to_unit": "g"},
            },
        ]
    }
    async with PluginHost([CONVERTER], settings=settings) as host:
        chat = host.session("s1")
        calls = chat.anthropic_calls(response)
        results = await chat.run(calls)
        turn = chat.anthropic_turn(calls, results)

    assert calls.discovered == ("unit_convert",)
    assert results[0].success, results[0].error_message
    assert turn[0]["content"][0]["tool_use_id"] == "toolu_1"


def test_a_session_needs_its_id_and_a_result_per_call(tmp_path: Path) -> None:
    host = PluginHost([], settings=fast_settings(tmp_path))
    with pytest.raises(ValueError, match="session_id"):
        host.session("")
    chat = host.session("s1")
    calls = chat.openai_calls(_openai_message("call_1", "unit_convert", {}))
    with pytest.raises(ValueError, match="1 calls but 0 results"):
        chat.openai_turn(calls, [])


def test_the_embedding_example_runs_a_whole_turn() -> None:
    example = Path(__file__).resolve().parents[2] / "docs" / "examples" / "embedding_turn.py"
    done = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, timeout=120, check=False
    )

    assert done.returncode == 0, done.stderr
    for line in ("get_weather: ok", "render_swatch: ok", "notify: ok"):
        assert line in done.stdout
    assert '"role": "tool", "tool_call_id": "call_2"' in done.stdout
    assert '"image_url"' in done.stdout  # the image moved to a message of its own
