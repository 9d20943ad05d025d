"""What a MaiBot plugin's command returned, read as MaiBot reads it.

MaiBot's runner answers a command call with ``success`` true whenever the
handler returned, and with the handler's value as the result; the value
crosses MaiBot's msgpack link, so a tuple arrives as a list. Its host then
reads that result:

- a list of three or more: the second item is the reply text (None stays None),
  the third says whether the message is intercepted; the first is ignored;
- anything else: ``str()`` of the value is the reply text (None stays None),
  so ``(True, "done")`` replies ``"[True, 'done']"``; interception comes from
  the command's ``intercept_message_level`` metadata.

A handler that raised is a failure whose reply text is ``str()`` of the
exception; interception still comes from the metadata. plughost's own commands
keep their ``(ok, reply[, intercept])`` reading
(:mod:`plughost_runner.plugins.components`); this module serves only plugins
written for MaiBot's SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any

__all__ = ["command_failure", "command_reply"]


def command_reply(value: Any, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The reply for a command that returned ``value``: always a success."""
    received = _as_received(value)
    intercept = _metadata_intercept(metadata)
    if isinstance(received, list) and len(received) >= 3:
        response = None if received[1] is None else str(received[1])
        intercept = bool(received[2])
    else:
        response = None if received is None else str(received)
    return {"success": True, "response": response, "intercept": intercept, "error": ""}


def command_failure(exc: BaseException, error: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The reply for a command that raised ``exc``; ``error`` is plughost's description of it."""
    return {
        "success": False,
        "response": str(exc),
        "intercept": _metadata_intercept(metadata),
        "error": error,
    }


def _metadata_intercept(metadata: Mapping[str, Any]) -> bool:
    return bool(metadata.get("intercept_message_level", 0))


def _as_received(value: Any) -> Any:
    """``value`` as it reads after MaiBot's msgpack link: tuples become lists, enums values."""
    if isinstance(value, Enum):
        return _as_received(value.value)
    if isinstance(value, list | tuple):
        return [_as_received(item) for item in value]
    if isinstance(value, dict):
        return {key: _as_received(item) for key, item in value.items()}
    return value
