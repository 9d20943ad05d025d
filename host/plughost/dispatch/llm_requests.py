"""``llm.*`` capability arguments turned into MaiBot's provider requests, and replies read back.

A MaiBot ``@LLMProvider`` method is called with ``operation`` and ``request``,
the request serialized as MaiBot's host serializes it (``request_kind``,
``context_items`` of ``SystemMessageItem``/``UserMessageItem``/``AssistantMessageItem``
with text parts, ``model_info``, ``tool_options`` as OpenAI function schemas,
``api_provider``). It answers with the legacy scalar fields (``content``,
``reasoning_content``, ``tool_calls``, ``usage``), with ``output_items`` of
``item_schema_version`` 1, or with ``embedding``. What comes back is read into
the dict MaiBot's host returns from the capability (``success``, ``response``,
``reasoning``, ``model_name``, token counts, ``tool_calls``). Nothing here
calls a runner: see :mod:`plughost.dispatch.llm_providers`.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, Final

__all__ = [
    "CONTEXT_ITEM_SCHEMA_VERSION",
    "ProviderReplyError",
    "build_request",
    "read_reply",
    "requested_model",
]

CONTEXT_ITEM_SCHEMA_VERSION: Final = 1
"""The context item schema MaiBot's providers speak."""

_ROLE_ITEMS: Final = {
    "system": "SystemMessageItem",
    "assistant": "AssistantMessageItem",
    "user": "UserMessageItem",
}
_USAGE_FIELDS: Final = (
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "prompt_cache_hit_tokens",
    "prompt_cache_miss_tokens",
)


class ProviderReplyError(ValueError):
    """A provider's answer cannot be read as MaiBot's response dict."""


def requested_model(args: dict[str, Any]) -> str:
    """The model or task a call names (``model_name``, ``model``, then ``task_name``)."""
    for key in ("model_name", "model", "task_name"):
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def build_request(
    capability: str, args: dict[str, Any], plugin_id: str, client_type: str
) -> tuple[str, dict[str, Any]]:
    """The provider's ``(operation, request)`` for one ``llm.*`` call.

    Raises:
        ValueError: the arguments lack what the capability needs (a prompt, a
            text), or the capability has no provider operation.
    """
    model = requested_model(args)
    model_info: dict[str, Any] = {
        "api_provider": plugin_id,
        "extra_params": {},
        "force_stream_mode": False,
        "max_tokens": args.get("max_tokens"),
        "model_identifier": model,
        "name": model,
        "temperature": args.get("temperature"),
        "visual": False,
    }
    common = {
        "extra_params": {},
        "model_info": model_info,
        "api_provider": {"name": plugin_id, "client_type": client_type},
    }
    if capability in ("llm.generate", "llm.generate_with_tools"):
        tools = args.get("tools") if capability == "llm.generate_with_tools" else None
        if tools is not None and not isinstance(tools, list):
            raise ValueError(f"{capability}: 'tools' must be a list of tool definitions")
        request = {
            **common,
            "request_kind": "response",
            "item_schema_version": CONTEXT_ITEM_SCHEMA_VERSION,
            "context_items": _context_items(args.get("prompt")),
            "logical_turn_id": uuid.uuid4().hex,
            "max_tokens": args.get("max_tokens"),
            "temperature": args.get("temperature"),
            "response_format": None,
            "tool_options": list(tools or []),
        }
        return "response", request
    if capability == "llm.embed":
        text = args.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ValueError("llm.embed needs 'text', a non-empty string")
        return "embedding", {**common, "request_kind": "embedding", "embedding_input": text}
    raise ValueError(
        f"{capability} has no LLM provider operation; providers answer llm.generate, "
        "llm.generate_with_tools and llm.embed"
    )


def read_reply(capability: str, result: Any, model: str) -> dict[str, Any]:
    """The capability's answer from a provider's response dict.

    Raises:
        ProviderReplyError: ``result`` is not a dict, or its fields have the wrong types.
    """
    if not isinstance(result, dict):
        raise ProviderReplyError(f"returned {type(result).__name__}, not a response dict")
    model_name = str(result.get("model_name") or model)
    if capability == "llm.embed":
        vector = result.get("embedding")
        if not isinstance(vector, list) or not all(isinstance(x, int | float) for x in vector):
            raise ProviderReplyError("an embedding response needs 'embedding', a list of numbers")
        return {"success": True, "embedding": [float(x) for x in vector], "model_name": model_name}
    if "output_items" in result:
        content, reasoning, calls = _from_output_items(result)
    else:
        content = _text(result.get("content"), "content")
        reasoning = _text(result.get("reasoning_content"), "reasoning_content")
        calls = _tool_calls(result.get("tool_calls"))
    raw_usage = result.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    payload: dict[str, Any] = {
        "success": True,
        "response": content,
        "reasoning": reasoning,
        "model_name": model_name,
        **{field: _count(usage.get(field)) for field in _USAGE_FIELDS},
    }
    if calls is not None:
        payload["tool_calls"] = calls
    return payload


def _context_items(prompt: Any) -> list[dict[str, Any]]:
    stamp = {"logical_turn_id": "", "timestamp": datetime.now(UTC).isoformat()}
    if isinstance(prompt, str) and prompt.strip():
        messages: list[Any] = [{"role": "user", "content": prompt}]
    elif isinstance(prompt, list) and prompt:
        messages = prompt
    else:
        raise ValueError("llm.generate needs 'prompt', a non-empty string or a list of messages")
    items: list[dict[str, Any]] = []
    for index, message in enumerate(messages, start=1):
        if not isinstance(message, dict):
            raise ValueError(f"prompt message {index} must be a dict with 'role' and 'content'")
        role = str(message.get("role") or "user").lower()
        items.append(
            {
                "item_type": _ROLE_ITEMS.get(role, "UserMessageItem"),
                "meta": {"item_id": uuid.uuid4().hex, **stamp},
                "parts": _parts(message.get("content")),
            }
        )
    return items


def _parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    parts: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append({"type": "text", "text": part["text"]})
    return parts


def _from_output_items(result: dict[str, Any]) -> tuple[str, str, list[dict[str, Any]] | None]:
    items = result.get("output_items")
    if not isinstance(items, list):
        raise ProviderReplyError("'output_items' must be a list")
    version = result.get("item_schema_version")
    if version != CONTEXT_ITEM_SCHEMA_VERSION:
        raise ProviderReplyError(
            f"item_schema_version {version!r} is not {CONTEXT_ITEM_SCHEMA_VERSION}"
        )
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[dict[str, Any]] = []
    for item in items:
        if not isinstance(item, dict):
            raise ProviderReplyError("each of 'output_items' must be a dict")
        kind = item.get("item_type")
        if kind == "AssistantMessageItem":
            texts += [p["text"] for p in item.get("parts") or () if _is_text_part(p)]
        elif kind == "ReasoningItem":
            reasoning += [str(t) for t in item.get("text_parts") or ()]
        elif kind == "FunctionCallItem" and isinstance(item.get("tool_call"), dict):
            calls += _tool_calls([item["tool_call"]]) or []
    return "".join(texts), "".join(reasoning), calls or None


def _is_text_part(part: Any) -> bool:
    return isinstance(part, dict) and isinstance(part.get("text"), str)


def _tool_calls(raw: Any) -> list[dict[str, Any]] | None:
    """Tool calls in the capability's shape, from either of MaiBot's provider shapes."""
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise ProviderReplyError("'tool_calls' must be a list")
    calls: list[dict[str, Any]] = []
    for call in raw:
        if not isinstance(call, dict):
            raise ProviderReplyError("each tool call must be a dict")
        raw_function = call.get("function")
        function: dict[str, Any] = raw_function if isinstance(raw_function, dict) else {}
        name = function.get("name") or call.get("func_name") or call.get("name")
        arguments = function.get("arguments", call.get("args", {}))
        if not isinstance(name, str) or not name:
            raise ProviderReplyError("a tool call needs a function name")
        calls.append(
            {
                "id": str(call.get("id") or call.get("call_id") or ""),
                "function": {"name": name, "arguments": arguments or {}},
            }
        )
    return calls


def _text(value: Any, field: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ProviderReplyError(f"'{field}' must be a string, got {type(value).__name__}")
    return value


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
