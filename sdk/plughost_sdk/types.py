"""Types a plugin author declares with: tool parameters and the component enums.

Each parameter becomes one property of the tool's JSON Schema. The mapping is a
public contract (see docs/plugin-authors.md): STRING, INTEGER, NUMBER, BOOLEAN,
ARRAY and OBJECT map to the JSON Schema type of the same name; FLOAT is an
alias of NUMBER.

The component enums (:class:`EventType`, :class:`HookMode`, :class:`HookOrder`,
:class:`ErrorPolicy`, ...) have the member names and values of MaiBot's plugin
SDK 2.16, so a plugin written for it compares and sends the same strings.
"""

from __future__ import annotations

from copy import deepcopy
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

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
    "ToolParamType",
    "ToolParameterInfo",
]


class ToolParamType(StrEnum):
    """The type of one tool parameter."""

    STRING = "string"
    INTEGER = "integer"
    NUMBER = "number"
    FLOAT = "float"
    BOOLEAN = "boolean"
    ARRAY = "array"
    OBJECT = "object"

    @property
    def json_type(self) -> str:
        """The JSON Schema ``type`` this parameter type maps to."""
        return "number" if self is ToolParamType.FLOAT else self.value


class ToolParameterInfo(BaseModel):
    """One parameter of a tool, as a plugin author declares it.

    Args:
        name: The parameter name; must be a Python identifier (it becomes a kwarg).
        param_type: Its type.
        description: What the model should put here.
        required: Whether the model must supply it.
        enum_values: The only values allowed, if any.
        default: The value the handler uses when the model leaves it out.
        items_schema: JSON Schema of each element, for ARRAY.
        properties: JSON Schemas of the fields, for OBJECT.
        required_properties: Required fields, for OBJECT.
        additional_properties: Whether (or how) extra fields are allowed, for OBJECT.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    param_type: ToolParamType = ToolParamType.STRING
    description: str = ""
    required: bool = True
    enum_values: list[Any] | None = None
    default: Any = None
    items_schema: dict[str, Any] | None = None
    properties: dict[str, dict[str, Any]] | None = None
    required_properties: list[str] = Field(default_factory=list)
    additional_properties: bool | dict[str, Any] | None = None

    def to_schema(self) -> dict[str, Any]:
        """Return this parameter's JSON Schema fragment."""
        schema: dict[str, Any] = {"type": self.param_type.json_type}
        if self.description:
            schema["description"] = self.description
        if self.enum_values:
            schema["enum"] = list(self.enum_values)
        if self.default is not None:
            schema["default"] = deepcopy(self.default)
        if self.param_type is ToolParamType.ARRAY and self.items_schema is not None:
            schema["items"] = deepcopy(self.items_schema)
        if self.param_type is ToolParamType.OBJECT:
            schema["properties"] = deepcopy(self.properties or {})
            if self.required_properties:
                schema["required"] = list(self.required_properties)
            if self.additional_properties is not None:
                schema["additionalProperties"] = deepcopy(self.additional_properties)
        return schema


# --- component enums: same member names and values as maibot_sdk.types (SDK 2.16) ---


class ComponentType(StrEnum):
    """The kinds of component a plugin can declare; the value is the wire name."""

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
    """When a legacy ``@Action`` was offered (kept as tool metadata)."""

    NEVER = "never"
    ALWAYS = "always"
    RANDOM = "random"
    KEYWORD = "keyword"


class ChatMode(StrEnum):
    """The chat mode a legacy ``@Action`` was meant for (kept as tool metadata)."""

    FOCUS = "focus"
    NORMAL = "normal"
    PRIORITY = "priority"
    ALL = "all"


class EventType(StrEnum):
    """The events a bot emits to ``@EventHandler`` components."""

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
    """Direction of a ``@MessageGateway``: outbound, inbound or both."""

    SEND = "send"
    RECEIVE = "receive"
    DUPLEX = "duplex"


class HookMode(StrEnum):
    """``blocking`` handlers run in turn and steer the chain; ``observe`` ones only watch."""

    BLOCKING = "blocking"
    OBSERVE = "observe"


class HookOrder(StrEnum):
    """The slot of a hook handler within its mode: early, then normal, then late."""

    EARLY = "early"
    NORMAL = "normal"
    LATE = "late"


class ModifyFlag(StrEnum):
    """What an event handler may change (kept for compatibility)."""

    CAN_MODIFY_PROMPT = "can_modify_prompt"
    CAN_MODIFY_RESPONSE = "can_modify_response"
    CAN_MODIFY_MESSAGE = "can_modify_message"


class ErrorPolicy(StrEnum):
    """What a failing blocking hook handler does to its chain.

    ``abort`` stops the chain; ``skip`` and ``log`` both drop the handler's
    output and go on (``skip`` logs a warning, ``log`` an error).
    """

    ABORT = "abort"
    SKIP = "skip"
    LOG = "log"
