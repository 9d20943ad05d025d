"""Component enums with MaiBot SDK 2.16's member names and values.

These are the values MaiBot's host protocol speaks (``"on_message"``,
``"blocking"``...). Kept in one module so the component decorators and the
MaiBot layer share one definition.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "ActivationType",
    "ChatMode",
    "ComponentType",
    "ErrorPolicy",
    "EventType",
    "HookMode",
    "HookOrder",
    "MessageGatewayRouteType",
    "ModifyFlag",
]


class ComponentType(StrEnum):
    """The kind of a component, as the protocol names it."""

    ACTION = "ACTION"
    API = "API"
    COMMAND = "COMMAND"
    TOOL = "TOOL"
    REPLY_EXTENSION = "REPLY_EXTENSION"
    EVENT_HANDLER = "EVENT_HANDLER"
    HOOK_HANDLER = "HOOK_HANDLER"
    HOME_CARD = "HOME_CARD"
    MESSAGE_GATEWAY = "MESSAGE_GATEWAY"


class ActivationType(StrEnum):
    """When a legacy action may be chosen."""

    NEVER = "never"
    ALWAYS = "always"
    RANDOM = "random"
    KEYWORD = "keyword"


class ChatMode(StrEnum):
    """The chat mode a legacy action applies to."""

    FOCUS = "focus"
    NORMAL = "normal"
    PRIORITY = "priority"
    ALL = "all"


class EventType(StrEnum):
    """The events an EventHandler can subscribe to."""

    UNKNOWN = "unknown"
    ON_START = "on_start"
    ON_STOP = "on_stop"
    ON_MESSAGE_PRE_PROCESS = "on_message_pre_process"
    ON_MESSAGE = "on_message"
    ON_PLAN = "on_plan"
    POST_LLM = "post_llm"
    AFTER_LLM = "after_llm"
    POST_SEND_PRE_PROCESS = "post_send_pre_process"
    POST_SEND = "post_send"
    AFTER_SEND = "after_send"


class MessageGatewayRouteType(StrEnum):
    """Which way a message gateway carries messages."""

    SEND = "send"
    RECEIVE = "receive"
    DUPLEX = "duplex"


class HookMode(StrEnum):
    """Whether a hook handler can change the chain (blocking) or only watches it."""

    BLOCKING = "blocking"
    OBSERVE = "observe"


class HookOrder(StrEnum):
    """A hook handler's slot within its mode."""

    EARLY = "early"
    NORMAL = "normal"
    LATE = "late"


class ModifyFlag(StrEnum):
    """What an event handler may change in a message."""

    CAN_MODIFY_PROMPT = "can_modify_prompt"
    CAN_MODIFY_RESPONSE = "can_modify_response"
    CAN_MODIFY_MESSAGE = "can_modify_message"


class ErrorPolicy(StrEnum):
    """What a failing blocking hook handler does to its chain."""

    ABORT = "abort"
    SKIP = "skip"
    LOG = "log"
