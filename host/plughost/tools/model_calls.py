"""A model response's tool calls as ToolInvocations, and back, for OpenAI and Anthropic.

The registry runs :class:`~plughost_sdk.models.ToolInvocation` s; model APIs
answer with their own shapes. These helpers translate at that one edge:

- **OpenAI** (Chat Completions): the assistant message's ``tool_calls``
  (``{"id", "type": "function", "function": {"name", "arguments"}}``) become
  invocations; ``arguments`` stays the JSON string the model wrote, which the
  registry parses, casts and checks. The message's text (``content``, or a
  ``reasoning_content`` field where a gateway sends one) becomes each
  invocation's ``reasoning``.
- **Anthropic** (Messages): ``tool_use`` blocks become invocations, the text
  blocks their ``reasoning``. ``server_tool_use`` blocks were already run by
  the API (its own tool search, say): they become *server calls*, never to be
  run again, each holding its result block (``tool_search_tool_result``...)
  in ``metadata["result"]``; the tools a server-side tool search loaded (its
  ``tool_reference`` s) are listed in :attr:`ModelToolCalls.discovered`, for
  the embedder to record as discovered. Every block that is not a
  ``tool_use`` (text, thinking, server blocks) is kept verbatim, so the
  assistant message can be sent back exactly as the API requires.

The way back (:func:`to_openai_message`, :func:`to_anthropic_message`)
rebuilds the assistant message from a :class:`ModelToolCalls`, for a history
kept as invocations. Inputs may be plain dicts or the provider SDKs' response
objects (anything with ``model_dump()``).

What does not live here: tool results going back to the model
(:mod:`plughost.tools.history`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from plughost_sdk.models import ToolInvocation

__all__ = [
    "ModelToolCalls",
    "from_anthropic_message",
    "from_openai_message",
    "to_anthropic_message",
    "to_openai_message",
]

_SERVER_USE = "server_tool_use"


@dataclass(frozen=True, slots=True)
class ModelToolCalls:
    """The tool calls of one model response.

    Attributes:
        invocations: The calls for the client to run, in the model's order.
        server_calls: Calls the API ran itself (Anthropic server tools); their
            result block is in ``metadata["result"]``. Never run them.
        discovered: Tools a server-side tool search loaded, in order.
        text: The model's text around the calls.
        kept_blocks: Anthropic: every block but ``tool_use``, verbatim, in order.
    """

    invocations: tuple[ToolInvocation, ...]
    server_calls: tuple[ToolInvocation, ...] = ()
    discovered: tuple[str, ...] = ()
    text: str = ""
    kept_blocks: tuple[dict[str, Any], ...] = field(default=())


# --- OpenAI ------------------------------------------------------------------------------


def from_openai_message(
    message: Any, *, session_id: str = "", stream_id: str = ""
) -> ModelToolCalls:
    """The tool calls of a Chat Completions assistant message.

    Args:
        message: The assistant message (``choices[0].message``), a dict or an
            SDK object.
        session_id: Put on every invocation (the conversation).
        stream_id: Put on every invocation (the chat).

    Raises:
        ValueError: If a tool call has no function name.
    """
    data = _plain(message)
    text = _text(data.get("reasoning_content")) or _text(data.get("content"))
    invocations = []
    for call in data.get("tool_calls") or ():
        call = _plain(call)
        if call.get("type", "function") != "function":
            continue  # custom tool kinds carry no function to route
        function = _plain(call.get("function") or {})
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"tool call {call.get('id')!r} has no function name")
        invocations.append(
            ToolInvocation(
                tool_name=name,
                arguments=_arguments(function.get("arguments")),
                call_id=str(call.get("id") or ""),
                session_id=session_id,
                stream_id=stream_id,
                reasoning=text,
            )
        )
    return ModelToolCalls(tuple(invocations), text=text)


def to_openai_message(calls: ModelToolCalls | Iterable[ToolInvocation]) -> dict[str, Any]:
    """The Chat Completions assistant message that made these calls."""
    if not isinstance(calls, ModelToolCalls):
        calls = ModelToolCalls(tuple(calls))
    tool_calls = [
        {
            "id": invocation.call_id,
            "type": "function",
            "function": {
                "name": invocation.tool_name,
                "arguments": _json_text(invocation.arguments),
            },
        }
        for invocation in calls.invocations
    ]
    return {"role": "assistant", "content": calls.text or None, "tool_calls": tool_calls}


# --- Anthropic ---------------------------------------------------------------------------


def from_anthropic_message(
    message: Any, *, session_id: str = "", stream_id: str = ""
) -> ModelToolCalls:
    """The tool calls of a Messages API response (or its ``content`` list).

    Raises:
        ValueError: If a ``tool_use`` block has no name.
    """
    data = _plain(message)
    raw_blocks = data.get("content") if isinstance(data, Mapping) else data
    blocks = [_plain(block) for block in raw_blocks or ()]
    text = "\n".join(
        b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)
    )
    results = {
        str(b.get("tool_use_id")): b
        for b in blocks
        if b.get("type", "").endswith("_tool_result") and b.get("type") != "tool_result"
    }
    invocations: list[ToolInvocation] = []
    server: list[ToolInvocation] = []
    discovered: list[str] = []
    for block in blocks:
        kind = block.get("type")
        if kind not in ("tool_use", _SERVER_USE):
            continue
        name = block.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"{kind} block {block.get('id')!r} has no name")
        call_id = str(block.get("id") or "")
        invocation = ToolInvocation(
            tool_name=name,
            arguments=dict(block.get("input") or {}),
            call_id=call_id,
            session_id=session_id,
            stream_id=stream_id,
            reasoning=text,
        )
        if kind == "tool_use":
            invocations.append(invocation)
            continue
        result = results.get(call_id)
        discovered.extend(n for n in _references(result) if n not in discovered)
        metadata = {"server_tool": True, "result": result}
        server.append(invocation.model_copy(update={"metadata": metadata}))
    kept = tuple(b for b in blocks if b.get("type") != "tool_use")
    return ModelToolCalls(tuple(invocations), tuple(server), tuple(discovered), text, kept)


def to_anthropic_message(calls: ModelToolCalls | Iterable[ToolInvocation]) -> dict[str, Any]:
    """The Messages API assistant message: kept blocks (or the text), then ``tool_use`` blocks."""
    if not isinstance(calls, ModelToolCalls):
        calls = ModelToolCalls(tuple(calls))
    content: list[dict[str, Any]] = [dict(block) for block in calls.kept_blocks]
    if not content and calls.text:
        content.append({"type": "text", "text": calls.text})
    content.extend(
        {
            "type": "tool_use",
            "id": invocation.call_id,
            "name": invocation.tool_name,
            "input": _json_object(invocation.arguments),
        }
        for invocation in calls.invocations
    )
    return {"role": "assistant", "content": content}


# --- helpers -----------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(exclude_none=True)
    return value


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts
        return "\n".join(
            str(part.get("text", ""))
            for part in map(_plain, value)
            if isinstance(part, Mapping) and part.get("type") == "text"
        )
    return ""


def _arguments(raw: Any) -> dict[str, Any] | str:
    if raw is None:
        return {}
    if isinstance(raw, str | dict):
        return raw
    return str(raw)


def _json_text(arguments: dict[str, Any] | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def _json_object(arguments: dict[str, Any] | str) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _references(result: Mapping[str, Any] | None) -> list[str]:
    """Tool names in a tool search result's ``tool_reference`` blocks."""
    if result is None:
        return []
    content = _plain(result.get("content"))
    if isinstance(content, Mapping):
        content = content.get("tool_references") or []
    if not isinstance(content, list):
        return []
    return [
        str(ref["tool_name"])
        for ref in map(_plain, content)
        if isinstance(ref, Mapping) and ref.get("type") == "tool_reference" and ref.get("tool_name")
    ]
