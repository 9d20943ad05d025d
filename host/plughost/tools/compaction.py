"""Compaction of old tool results: keep a long conversation's history within a budget.

As a conversation goes on, old tool results pile up in the history the model
is sent again every turn. :func:`compact_tool_results` replaces the oldest of
them with one line, ``[<tool> result omitted from context]``, until the
results left fit a budget:

- ``max_results``: at most this many tool results keep their content;
- ``max_chars``: the results that keep their content hold at most this many
  characters of text between them.

Both are off (None) by default, and then nothing changes: compaction is
something an embedder opts into. The newest result is never compacted (the
model has just asked for it), already compacted results stay compacted, and
the call/result pairing is untouched, so the history stays valid for the API.
The tool's name is read from the assistant message that made the call.

It reads both history shapes the history helpers write: Chat Completions
(``{"role": "tool", "tool_call_id": ..., "content": ...}`` after an assistant
message with ``tool_calls``) and Messages (``tool_result`` blocks in a user
message after an assistant message with ``tool_use`` blocks). The input is not
changed; compacted messages are copies, every other message is passed through
as the same object.

What does not live here: bounding one fresh result
(:class:`~plughost.tools.history.ResultLimiter`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["compact_tool_results", "omitted_text"]


def omitted_text(tool_name: str) -> str:
    """The line that replaces a compacted result of ``tool_name``."""
    return f"[{tool_name or 'tool'} result omitted from context]"


@dataclass(frozen=True, slots=True)
class _Result:
    message: int  # index of the message holding the result
    block: int | None  # index of the tool_result block (Messages shape), None for OpenAI
    call_id: str
    size: int


def compact_tool_results(
    messages: Sequence[Mapping[str, Any]],
    *,
    max_chars: int | None = None,
    max_results: int | None = None,
) -> list[Mapping[str, Any]]:
    """Replace the oldest tool results until the others fit the budget.

    Args:
        messages: A history in Chat Completions or Messages shape.
        max_chars: Text the kept results may hold in all; None for no limit.
        max_results: How many results may keep their content; None for no limit.

    Returns:
        The history with old results compacted (a new list).

    Raises:
        ValueError: If a limit is negative.
    """
    for label, limit in (("max_chars", max_chars), ("max_results", max_results)):
        if limit is not None and limit < 0:
            raise ValueError(f"{label} must be 0 or more, got {limit}")
    out = list(messages)
    if max_chars is None and max_results is None:
        return out
    names = _call_names(messages)
    stale = _stale(_results(messages), max_chars, max_results)
    for result in stale:
        out[result.message] = _compacted(out[result.message], result, names.get(result.call_id))
    return out


def _stale(results: list[_Result], max_chars: int | None, max_results: int | None) -> list[_Result]:
    """The results to compact: everything older than what fits, newest kept always."""
    kept_chars = 0
    newest_first = list(reversed(results))
    for kept, result in enumerate(newest_first):
        fits = (max_results is None or kept < max_results) and (
            max_chars is None or kept_chars + result.size <= max_chars
        )
        if not fits and kept > 0:
            return results[: len(results) - kept]
        kept_chars += result.size
    return []


def _call_names(messages: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    names: dict[str, str] = {}
    for message in messages:
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            names[str(call.get("id", ""))] = str(function.get("name", ""))
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, Mapping) and block.get("type") == "tool_use":
                    names[str(block.get("id", ""))] = str(block.get("name", ""))
    return names


def _results(messages: Sequence[Mapping[str, Any]]) -> list[_Result]:
    found: list[_Result] = []
    for index, message in enumerate(messages):
        if message.get("role") == "tool":
            call_id = str(message.get("tool_call_id", ""))
            found.append(_Result(index, None, call_id, _size(message.get("content"))))
            continue
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for number, block in enumerate(content):
            if isinstance(block, Mapping) and block.get("type") == "tool_result":
                call_id = str(block.get("tool_use_id", ""))
                found.append(_Result(index, number, call_id, _size(block.get("content"))))
    return found


def _size(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(
            len(str(part.get("text", "")))
            for part in content
            if isinstance(part, Mapping) and part.get("type") == "text"
        )
    return 0


def _compacted(message: Mapping[str, Any], result: _Result, name: str | None) -> Mapping[str, Any]:
    text = omitted_text(name or "tool")
    if result.block is None:
        return {**message, "content": text}
    blocks = list(message["content"])
    blocks[result.block] = {**blocks[result.block], "content": text}
    return {**message, "content": blocks}
