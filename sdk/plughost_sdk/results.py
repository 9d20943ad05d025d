"""Turn whatever a tool handler returned or raised into a ToolExecutionResult.

A pure function with one promise: it never raises. A value it cannot make
sense of becomes a failed result that says why, naming the content item at
fault where there is one. This is the single edge where base64 is decoded.

Accepted return shapes:

- ``dict``: ``success`` (default True), ``content`` or ``message`` (text for the
  model), ``error``, ``content_items`` (media), ``post_history_messages`` (a
  list of message dicts the embedder appends to the history after the
  result), anything else kept as structured content;
- ``(bool, str)``: success and message, the legacy action convention;
- ``str``; ``None``; ``bytes`` (one binary item);
- any JSON-serializable value, a pydantic model or a dataclass (structured content);
- a raised :class:`~plughost_sdk.errors.ToolError` (its message is for the model),
  or any other exception (failed, with the exception type and message).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from collections.abc import Mapping
from typing import Any, get_args
from urllib.parse import unquote_to_bytes

from pydantic import BaseModel, ValidationError

from plughost_sdk.errors import ToolError
from plughost_sdk.models import ContentItem, ContentType, ToolExecutionResult

__all__ = [
    "ResultFields",
    "normalize_exception",
    "normalize_result",
    "normalized_fields",
    "parse_content_items",
    "result_fields",
]

CONTENT_TYPES: frozenset[str] = frozenset(get_args(ContentType))
_ENVELOPE_KEYS = frozenset({"success", "content", "message", "error", "content_items"})
_SEPARATE_KEYS = frozenset({"content_items", "post_history_messages"})


ResultFields = dict[str, Any]
"""The fields of a :class:`ToolExecutionResult` by name, already of the model's types.

What :func:`normalized_fields` returns: the runner encodes a result from its
fields for the wire and never needs the model, whose construction would be a
third of what normalizing a small result costs. Fields left out take the
model's defaults.
"""


class _ItemError(ValueError):
    """A malformed content item; carries the message that names it."""


def normalize_result(tool_name: str, value: Any) -> ToolExecutionResult:
    """Normalize a handler's return value; never raises.

    Args:
        tool_name: The tool that produced the value, recorded on the result.
        value: Whatever the handler returned.

    Returns:
        The normalized result; a failed one if the value was malformed.
    """
    if isinstance(value, ToolExecutionResult):
        return value.model_copy(update={"tool_name": value.tool_name or tool_name})
    try:
        return ToolExecutionResult(**normalized_fields(tool_name, value))
    except ValidationError as exc:  # not expected: the fields are built to the model's types
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        message = (
            f"tool returned a value that could not be read ({where}: {first['msg']}); return "
            "a dict, a str, a list, or a (bool, str) tuple instead"
        )
        return ToolExecutionResult.failure(tool_name, message, "invalid_result")


def normalized_fields(tool_name: str, value: Any) -> ResultFields:
    """:func:`normalize_result` without building the model: the result's fields; never raises."""
    try:
        return _normalize(tool_name, value)
    except _ItemError as exc:
        return _failure(tool_name, str(exc))
    except Exception as exc:  # the promise is "never raises", whatever the value does
        message = f"tool returned a value that could not be read ({type(exc).__name__}: {exc})"
        return _failure(tool_name, message)


def result_fields(result: ToolExecutionResult) -> ResultFields:
    """The fields of a result that already is a model (a failure built by the runner)."""
    return {name: getattr(result, name) for name in ToolExecutionResult.model_fields}


def _failure(tool_name: str, message: str) -> ResultFields:
    return {
        "tool_name": tool_name,
        "success": False,
        "error_message": message,
        "error_code": "invalid_result",
    }


def normalize_exception(tool_name: str, exc: BaseException) -> ToolExecutionResult:
    """Turn an exception raised by a handler into a failed result.

    A :class:`ToolError` keeps its message as is (it was written for the model);
    any other exception is reported with its type, as a plugin bug.
    """
    if isinstance(exc, ToolError):
        return ToolExecutionResult.failure(
            tool_name, str(exc), "tool_error", metadata={"details": exc.details}
        )
    text = str(exc)
    message = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return ToolExecutionResult.failure(
        tool_name, message, "plugin_exception", metadata={"exception_type": type(exc).__name__}
    )


def _normalize(tool_name: str, value: Any) -> ResultFields:
    if isinstance(value, ToolExecutionResult):
        fields = result_fields(value)
        fields["tool_name"] = value.tool_name or tool_name
        return fields
    if value is None:
        return {"tool_name": tool_name}
    if isinstance(value, str):
        return {"tool_name": tool_name, "content": value}
    if isinstance(value, bytes | bytearray | memoryview):
        item = ContentItem(content_type="binary", data=bytes(value))
        return {"tool_name": tool_name, "content_items": [item]}
    if _is_status_tuple(value):
        success, message = bool(value[0]), str(value[1])
        if success:
            return {"tool_name": tool_name, "content": message}
        return {
            "tool_name": tool_name,
            "success": False,
            "content": message,
            "error_message": message,
            "error_code": "tool_error",
        }
    if isinstance(value, Mapping):
        return _from_dict(tool_name, value)
    return _from_structured(tool_name, _to_jsonable(value))


def _is_status_tuple(value: Any) -> bool:
    return (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], bool)
        and isinstance(value[1], str)
    )


def _from_structured(tool_name: str, value: Any) -> ResultFields:
    if isinstance(value, dict):
        return _from_dict(tool_name, value)
    if isinstance(value, str):
        return {"tool_name": tool_name, "content": value}
    text = json.dumps(value, ensure_ascii=False)
    structured = value if isinstance(value, list) else None
    return {"tool_name": tool_name, "content": text, "structured_content": structured}


def _to_jsonable(value: Any) -> Any:
    """Convert pydantic models, dataclasses, tuples and sets; reject the rest clearly."""
    if type(value) in _PLAIN:  # most values: answered before the costlier checks below
        return value
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _to_jsonable(dataclasses.asdict(value))
    if isinstance(value, list | tuple | set | frozenset):
        return [_to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _to_jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise _ItemError(
        f"tool returned a value of type {type(value).__name__!r}, which cannot be sent to "
        "the model; return a dict, a str, a list, or a (bool, str) tuple instead"
    )


_PLAIN = frozenset({str, int, float, bool, type(None)})
"""Exact types :func:`_to_jsonable` returns as they are (subclasses take the full path)."""


def _from_dict(tool_name: str, data: Mapping[str, Any]) -> ResultFields:
    # Every tool call passes here: plain str and scalar values take the short way
    # past the helpers (which give the same answer for them).
    get = data.get
    success = bool(get("success", True))
    content, message, error = get("content"), get("message"), get("error")
    content = content if type(content) is str else _text_field(content)
    message = message if type(message) is str else _text_field(message)
    if not content and message and success:
        content = message
    error = error if type(error) is str else _text_field(error)
    if not success and not error:
        error = message or content or "the tool reported failure without a message"
    raw_items = get("content_items")
    items = parse_content_items(raw_items) if raw_items is not None else []
    followups = _post_history(get("post_history_messages"))
    extra = {
        k if type(k) is str else str(k): v if type(v) in _PLAIN else _to_jsonable(v)
        for k, v in data.items()
        if k not in _SEPARATE_KEYS
    }
    structured: Any = None if extra.keys() <= _ENVELOPE_KEYS else extra
    return {
        "tool_name": tool_name,
        "success": success,
        "content": content,
        "error_message": error,
        "error_code": None if success else "tool_error",
        "structured_content": structured,
        "content_items": items,
        "post_history_messages": followups,
    }


def _post_history(raw: Any) -> list[dict[str, Any]]:
    if raw is None:
        return []
    if not isinstance(raw, list | tuple) or not all(isinstance(m, Mapping) for m in raw):
        raise _ItemError(
            "post_history_messages must be a list of message dicts, like "
            '[{"role": "user", "content": "..."}]'
        )
    return [{str(k): _to_jsonable(v) for k, v in message.items()} for message in raw]


def _text_field(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(_to_jsonable(value), ensure_ascii=False)


def parse_content_items(raw: Any) -> list[ContentItem]:
    """Parse a ``content_items`` list.

    Raises:
        ValueError: A message naming the first malformed item's index and problem.
    """
    if not isinstance(raw, list | tuple):
        raise _ItemError(f"content_items must be a list, not {type(raw).__name__}")
    return [_parse_item(index, item) for index, item in enumerate(raw)]


def _parse_item(index: int, raw: Any) -> ContentItem:
    where = f"content_items[{index}]"
    if isinstance(raw, ContentItem):
        return raw
    if not isinstance(raw, Mapping):
        raise _ItemError(f"{where} must be a dict, not {type(raw).__name__}")
    kind = raw.get("type", raw.get("content_type"))
    if not isinstance(kind, str) or kind not in CONTENT_TYPES:
        expected = ", ".join(sorted(CONTENT_TYPES))
        raise _ItemError(f"{where} has unknown type {kind!r}; expected one of: {expected}")
    mime = _optional_str(raw.get("mime_type"))
    data, uri = _payload(where, raw)
    if uri is not None and uri.startswith("data:"):
        data, url_mime = _decode_data_url(where, uri)
        mime = mime or url_mime
        uri = None
    text = _optional_str(raw.get("text"))
    _require_payload(where, kind, data=data, uri=uri, text=text)
    metadata = raw.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise _ItemError(f"{where}.metadata must be a dict, not {type(metadata).__name__}")
    try:
        return ContentItem(
            content_type=kind,
            data=data,
            text=text,
            uri=uri,
            mime_type=mime or _default_mime(kind, data),
            name=_optional_str(raw.get("name")),
            description=_optional_str(raw.get("description")),
            metadata=dict(metadata),
        )
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in exc.errors()
        )
        raise _ItemError(f"{where} is invalid ({problems})") from None


def _payload(where: str, raw: Mapping[str, Any]) -> tuple[bytes | None, str | None]:
    uri = _optional_str(raw.get("uri"))
    for key in ("data", "base64", "bytes"):
        value = raw.get(key)
        if value is None:
            continue
        if isinstance(value, bytes | bytearray | memoryview):
            return bytes(value), uri
        if isinstance(value, str):
            return _decode_base64(f"{where}.{key}", value), uri
        raise _ItemError(f"{where}.{key} must be base64 text or bytes, not {type(value).__name__}")
    return None, uri


def _decode_base64(where: str, text: str) -> bytes:
    # Line breaks are legal in MIME base64 (base64.encodebytes writes them); anything
    # else outside the alphabet is an error rather than silently dropped.
    try:
        return base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise _ItemError(f"{where} is not valid base64 ({exc})") from None


def _decode_data_url(where: str, uri: str) -> tuple[bytes, str | None]:
    header, sep, body = uri[5:].partition(",")
    if not sep:
        raise _ItemError(f"{where}.uri is a data: URL without a ',' before the payload")
    params = header.split(";")
    mime = params[0] or None
    if "base64" in params[1:]:
        return _decode_base64(f"{where}.uri", body), mime
    return unquote_to_bytes(body), mime


def _require_payload(
    where: str, kind: str, *, data: bytes | None, uri: str | None, text: str | None
) -> None:
    if kind == "text" and text is None:
        raise _ItemError(f"{where} is a text item without 'text'")
    if kind == "resource_link" and uri is None:
        raise _ItemError(f"{where} is a resource_link without 'uri'")
    if kind in ("image", "audio", "binary", "resource") and data is None and uri is None:
        if kind == "resource" and text is not None:
            return
        article = "an" if kind[0] in "aeiou" else "a"
        raise _ItemError(
            f"{where} is {article} {kind} item without a payload; "
            "give 'data' (base64), 'bytes' or 'uri'"
        )


def _default_mime(kind: str, data: bytes | None) -> str | None:
    if data is None:
        return None
    if kind == "image":
        return _sniff_image(data)
    return "application/octet-stream" if kind in ("binary", "resource", "audio") else None


def _sniff_image(data: bytes) -> str:
    if data.startswith(b"\x89PNG"):
        return "image/png"
    if data.startswith(b"\xff\xd8"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return "application/octet-stream"


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)
