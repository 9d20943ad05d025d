"""Messages across a message gateway: inbound ones checked, outbound ones built, MaiBot's shape.

A gateway plugin hands the host messages in MaiBot's message dict::

    {"message_id": "m1", "platform": "qq", "timestamp": "1700000000.0",
     "message_info": {"user_info": {"user_id": "9", "user_nickname": "小明"},
                      "group_info": {"group_id": "123", "group_name": "..."} | None,
                      "additional_config": {...}},
     "raw_message": [{"type": "text", "data": "/roll 6"}, ...],
     "processed_plain_text": "/roll 6", "session_id": "..."}

The plugin is untrusted, so :func:`read_inbound` checks the shape (pydantic),
bounds the whole message (:data:`MAX_INBOUND_BYTES`) and its identifiers,
refuses the application's own console platform (whose messages may carry
operator rights) and drops any operator claim. :func:`outbound_message` builds
the dict a gateway's method gets for one ``send.*`` call. Nothing here calls a
runner: see :mod:`plughost.dispatch.gateways`.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "MAX_INBOUND_BYTES",
    "OUTBOUND_SEGMENTS",
    "InboundMessage",
    "outbound_message",
    "read_inbound",
    "with_origin",
]

MAX_INBOUND_BYTES: Final = 1024 * 1024
"""An inbound message's JSON size, at most (media travel inline as base64)."""
RESERVED_PLATFORM: Final = "bot_console"
"""The application's own console: its messages may say they come from the operator."""
OUTBOUND_SEGMENTS: Final = {
    "send.text": ("text", "text"),
    "send.image": ("image", "image_base64"),
    "send.emoji": ("emoji", "emoji_base64"),
}
"""``send.*`` capability -> (segment type, the argument holding its data)."""

Ident = Annotated[str, Field(min_length=1, max_length=256)]
Name = Annotated[str, Field(max_length=256)]


class _UserInfo(BaseModel):
    model_config = ConfigDict(extra="allow")
    user_id: Ident
    user_nickname: Name = ""
    user_cardname: Name | None = None


class _GroupInfo(BaseModel):
    model_config = ConfigDict(extra="allow")
    group_id: Ident
    group_name: Name = ""


class _MessageInfo(BaseModel):
    model_config = ConfigDict(extra="allow")
    user_info: _UserInfo
    group_info: _GroupInfo | None = None
    additional_config: dict[str, Any] = Field(default_factory=dict)


class _Segment(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Annotated[str, Field(min_length=1, max_length=64)]
    data: Any = None


class _Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    message_id: Ident
    platform: Ident
    timestamp: str | float = ""
    message_info: _MessageInfo
    raw_message: list[_Segment] = Field(default_factory=list, max_length=256)
    processed_plain_text: str | None = None


@dataclass(frozen=True, slots=True)
class InboundMessage:
    """A checked inbound message: the dict handlers get, its text and where it came from."""

    message: dict[str, Any]
    text: str
    platform: str
    stream_id: str
    user_id: str
    group_id: str


def read_inbound(raw: Any) -> InboundMessage:
    """Check a gateway's inbound message and read what routing needs from it.

    Raises:
        ValueError: it is not a MaiBot message dict, is too large, or claims the
            application's console platform; the message says which.
    """
    if not isinstance(raw, dict):
        raise ValueError(f"'message' must be a MaiBot message dict, got {type(raw).__name__}")
    try:
        size = len(json.dumps(raw, ensure_ascii=False, default=str))
    except (ValueError, RecursionError):
        raise ValueError("'message' is nested too deeply") from None
    if size > MAX_INBOUND_BYTES:
        raise ValueError(f"'message' is {size:,} bytes of JSON, over {MAX_INBOUND_BYTES:,}")
    try:
        checked = _Message.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5]
        )
        raise ValueError(f"'message' is not a MaiBot message dict: {problems}") from None
    if checked.platform == RESERVED_PLATFORM:
        raise ValueError(
            f"platform {RESERVED_PLATFORM!r} is the application's own console; a gateway "
            "cannot speak for it"
        )
    message = with_origin(raw, checked.platform)
    text = checked.processed_plain_text
    if text is None:
        text = "".join(s.data for s in checked.raw_message if s.type == "text" and _is_str(s.data))
        message["processed_plain_text"] = text
    user_id = checked.message_info.user_info.user_id
    group = checked.message_info.group_info
    group_id = group.group_id if group is not None else ""
    where = group_id or f"private:{user_id}"
    stream_id = f"{checked.platform}:{where}"
    message["session_id"] = stream_id
    return InboundMessage(message, text, checked.platform, stream_id, user_id, group_id)


def with_origin(message: dict[str, Any], platform: str) -> dict[str, Any]:
    """A copy of ``message`` on ``platform``, with any operator claim dropped.

    Applied to what a gateway routed in and again to what an
    ``on_message_pre_process`` handler rewrote it into: no plugin may move a
    message to another platform (the console's among them) or mark it as the
    operator's, since operator rights are the application's to give.
    """
    copied = dict(message)
    copied["platform"] = platform
    info = copied.get("message_info")
    info = dict(info) if isinstance(info, dict) else {}
    extra = info.get("additional_config")
    extra = dict(extra) if isinstance(extra, dict) else {}
    extra.pop("is_local_operator", None)
    info["additional_config"] = extra
    copied["message_info"] = info
    return copied


def outbound_message(
    capability: str, args: dict[str, Any], platform: str, group_id: str, user_id: str
) -> dict[str, Any]:
    """The MaiBot message dict a gateway gets for one ``send.*`` call to a stream.

    Raises:
        ValueError: ``capability`` is not one a gateway carries, or its data is missing.
    """
    if capability not in OUTBOUND_SEGMENTS:
        carried = ", ".join(OUTBOUND_SEGMENTS)
        raise ValueError(f"a message gateway carries {carried}, not {capability}")
    kind, key = OUTBOUND_SEGMENTS[capability]
    data = args.get(key)
    if not isinstance(data, str) or not data:
        raise ValueError(f"{capability} needs '{key}', a non-empty string")
    group_info = {"group_id": group_id, "group_name": ""} if group_id else None
    return {
        "message_id": uuid.uuid4().hex,
        "timestamp": str(time.time()),
        "platform": platform,
        "message_info": {
            "user_info": {"user_id": user_id, "user_nickname": "", "user_cardname": None},
            "group_info": group_info,
            "additional_config": {},
        },
        "raw_message": [{"type": kind, "data": data}],
        "processed_plain_text": data if kind == "text" else "",
        "session_id": str(args.get("stream_id") or ""),
        "is_mentioned": False,
        "is_at": False,
        "is_emoji": kind == "emoji",
        "is_picture": kind == "image",
        "is_command": False,
        "is_notify": False,
    }


def _is_str(value: Any) -> bool:
    return isinstance(value, str)
