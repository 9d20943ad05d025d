"""The runner protocol: envelope, method table, error shape and codec. No sockets here.

The readable spec is docs/protocol.md; this module is its single source of truth.
Every message is one ZeroMQ frame holding one msgpack map (the envelope)::

    {"v": 1, "kind": "request" | "response" | "event", "id": int, "method": str,
     "plugin": str | None, "deadline_ms": int | None, "body": any, "error": Error | None}

A response carries the id and method of its request. Events carry the id of the
request they belong to, or 0. Binary payloads (media) are msgpack ``bin``, never
base64 text. The envelope is plain msgpack on purpose: frames are checked with a
few ``isinstance`` tests, not a pydantic model, because this is the hot path.

Changelog:
    1: first version.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypedDict, get_args

import msgpack

from plughost_sdk.errors import ProtocolError
from plughost_sdk.models import ContentItem, ToolExecutionResult

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "ERROR_CODES",
    "PROTOCOL_VERSION",
    "Envelope",
    "ErrorCode",
    "Kind",
    "Method",
    "WireError",
    "decode",
    "encode",
    "error_body",
    "event",
    "request",
    "response",
    "result_from_wire",
    "result_to_wire",
]

PROTOCOL_VERSION: Final = 1
DEFAULT_MAX_MESSAGE_BYTES: Final = 32 * 1024 * 1024

Kind = Literal["request", "response", "event"]

Method = Literal[
    # host -> runner
    "plugins.load",
    "tool.invoke",
    "config.update",
    "runner.health",
    "runner.shutdown",
    "call.cancel",
    # runner -> host
    "runner.hello",
    "runner.ready",
    "runner.heartbeat",
    "capability.call",
    "log.batch",
    "progress",
]

ErrorCode = Literal[
    "timeout",
    "plugin_crashed",
    "plugin_not_found",
    "tool_not_found",
    "bad_payload",
    "protocol_mismatch",
    "unauthorized",
    "shutting_down",
    "overloaded",
    "capability_denied",
    "capability_not_provided",
    "capability_failed",
    "message_too_large",
    "cancelled",
    "internal",
]

METHODS: Final = frozenset(get_args(Method))
ERROR_CODES: Final = frozenset(get_args(ErrorCode))
_KINDS: Final = frozenset(get_args(Kind))


class WireError(TypedDict):
    """The one error shape of the protocol."""

    code: str
    message: str
    details: dict[str, Any]


class Envelope(TypedDict):
    """A decoded message."""

    v: int
    kind: Kind
    id: int
    method: str
    plugin: str | None
    deadline_ms: int | None
    body: Any
    error: WireError | None


def request(
    request_id: int,
    method: Method,
    body: Any = None,
    *,
    plugin: str | None = None,
    deadline_ms: int | None = None,
) -> Envelope:
    """Build a request envelope; ``deadline_ms`` is the remaining budget in milliseconds."""
    return {
        "v": PROTOCOL_VERSION,
        "kind": "request",
        "id": request_id,
        "method": method,
        "plugin": plugin,
        "deadline_ms": deadline_ms,
        "body": body,
        "error": None,
    }


def response(to: Envelope, body: Any = None, error: WireError | None = None) -> Envelope:
    """Build the response to request ``to``: same id, same method, same plugin."""
    return {
        "v": PROTOCOL_VERSION,
        "kind": "response",
        "id": to["id"],
        "method": to["method"],
        "plugin": to["plugin"],
        "deadline_ms": None,
        "body": body,
        "error": error,
    }


def event(
    method: Method, body: Any = None, *, request_id: int = 0, plugin: str | None = None
) -> Envelope:
    """Build an event; ``request_id`` ties it to a request (0 for none)."""
    return {
        "v": PROTOCOL_VERSION,
        "kind": "event",
        "id": request_id,
        "method": method,
        "plugin": plugin,
        "deadline_ms": None,
        "body": body,
        "error": None,
    }


def error_body(code: ErrorCode, message: str, **details: Any) -> WireError:
    """Build the error shape; ``message`` should say what happened and what to do."""
    return {"code": code, "message": message, "details": details}


def encode(envelope: Envelope) -> bytes:
    """Encode an envelope to one frame.

    Raises:
        ProtocolError: the body holds something msgpack cannot encode.
    """
    try:
        frame: bytes = msgpack.packb(envelope, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ProtocolError(f"cannot encode {envelope.get('method')!r} message: {exc}") from exc
    return frame


def decode(frame: bytes | memoryview) -> Envelope:
    """Decode and check one frame.

    Raises:
        ProtocolError: the frame is not msgpack, not an envelope, or of another version.
    """
    try:
        data = msgpack.unpackb(frame, raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises several unrelated types on garbage
        raise ProtocolError(f"frame is not valid msgpack ({type(exc).__name__})") from exc
    if not isinstance(data, dict):
        raise ProtocolError("frame is not an envelope (expected a map)")
    version = data.get("v")
    if type(version) is not int or version != PROTOCOL_VERSION:  # True == 1 must not pass
        raise ProtocolError(
            f"protocol version {version!r} is not supported (this side speaks {PROTOCOL_VERSION}); "
            "install matching plughost and plughost-runner versions"
        )
    kind, request_id = data.get("kind"), data.get("id")
    if (
        not isinstance(kind, str)
        or kind not in _KINDS
        or type(request_id) is not int
        or not isinstance(data.get("method"), str)
    ):
        raise ProtocolError("frame is not an envelope (bad kind, id or method)")
    data.setdefault("plugin", None)
    data.setdefault("deadline_ms", None)
    data.setdefault("body", None)
    data.setdefault("error", None)
    return data  # type: ignore[return-value]


def result_to_wire(result: ToolExecutionResult) -> dict[str, Any]:
    """Turn a result into a msgpack-ready dict; media stay raw bytes."""
    return {
        "tool_name": result.tool_name,
        "success": result.success,
        "content": result.content,
        "error_message": result.error_message,
        "error_code": result.error_code,
        "structured_content": result.structured_content,
        "content_items": [item.model_dump(exclude_defaults=True) for item in result.content_items],
        "post_history_messages": result.post_history_messages,
        "metadata": result.metadata,
    }


def result_from_wire(data: Any) -> ToolExecutionResult:
    """Rebuild a result sent by a runner.

    Raises:
        ProtocolError: the data is not a result.
    """
    if not isinstance(data, dict):
        raise ProtocolError("tool result is not a map")
    try:
        items = [ContentItem.model_validate(item) for item in data.get("content_items") or ()]
        return ToolExecutionResult.model_validate({**data, "content_items": items})
    except ValueError as exc:
        raise ProtocolError(f"tool result does not match the result schema: {exc}") from exc
