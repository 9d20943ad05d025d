"""``maibot_sdk.types`` for MaiBot plugins: enums, tool parameters, component infos.

The names, member values, defaults and dumped shapes are MaiBot SDK 2.16's, so a
plugin's declarations come out exactly as MaiBot's own SDK reports them. The
component enums are plughost's own (:mod:`plughost_sdk.types`); only what is
MaiBot-specific (its tool parameter schema, which always carries a
``description``, and its Chinese parameter section) is defined here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from plughost_sdk.types import (
    ActivationType,
    ChatMode,
    ComponentType,
    ErrorPolicy,
    EventType,
    HookMode,
    HookOrder,
    MessageGatewayRouteType,
    ModifyFlag,
    ToolParamType,
)
from plughost_sdk.types import ToolParameterInfo as PlughostParameter

__all__ = [
    "CONFIG_RELOAD_SCOPE_SELF",
    "ON_BOT_CONFIG_RELOAD",
    "ON_MODEL_CONFIG_RELOAD",
    "APIComponentInfo",
    "ActionComponentInfo",
    "ActivationType",
    "CapabilityResult",
    "ChatMode",
    "CommandComponentInfo",
    "ComponentInfo",
    "ComponentType",
    "ErrorPolicy",
    "EventHandlerComponentInfo",
    "EventType",
    "HomeCardComponentInfo",
    "HookHandlerComponentInfo",
    "HookMode",
    "HookOrder",
    "LLMProviderInfo",
    "MessageGatewayComponentInfo",
    "MessageGatewayRouteType",
    "ModifyFlag",
    "ReplyExtensionComponentInfo",
    "ToolComponentInfo",
    "ToolParamType",
    "ToolParameterInfo",
    "build_tool_detailed_description",
    "normalize_component_type_name",
    "normalize_config_reload_subscription",
]

CONFIG_RELOAD_SCOPE_SELF = "self"
ON_BOT_CONFIG_RELOAD = "bot"
ON_MODEL_CONFIG_RELOAD = "model"
_RELOAD_SCOPES = {"bot": ON_BOT_CONFIG_RELOAD, "model": ON_MODEL_CONFIG_RELOAD}
_COMPONENT_TYPES = {
    "ACTION",
    "API",
    "COMMAND",
    "EVENT_HANDLER",
    "HOOK_HANDLER",
    "HOME_CARD",
    "MESSAGE_GATEWAY",
    "TOOL",
    "REPLY_EXTENSION",
}


def normalize_component_type_name(component_type: Any) -> str:
    """Return the upper-case protocol name of a component type (``"tool"`` -> ``"TOOL"``).

    Raises:
        ValueError: empty, unknown, or the removed ``WORKFLOW_STEP``.
    """
    text = str(getattr(component_type, "value", component_type) or "").strip()
    if not text:
        raise ValueError("component type must not be empty")
    if text.upper() == "WORKFLOW_STEP":
        raise ValueError("WorkflowStep was removed in SDK 2.0; use HookHandler / HOOK_HANDLER")
    if text.upper() not in _COMPONENT_TYPES or not (text.isupper() or text.islower()):
        raise ValueError(f"unsupported component type: {text}")
    return text.upper()


def normalize_config_reload_subscription(subscription: Any) -> str:
    """Return ``"bot"`` or ``"model"`` for a ``config_reload_subscriptions`` entry.

    Raises:
        ValueError: any other scope (a plugin's own config always reaches ``on_config_update``).
    """
    name = _RELOAD_SCOPES.get(str(subscription or "").strip().lower())
    if name is None:
        raise ValueError(f"unsupported config reload subscription: {subscription}")
    return name


def build_tool_detailed_description(
    parameters_schema: dict[str, Any] | None, fallback_description: str = ""
) -> str:
    """MaiBot's detailed tool description: a ``参数说明：`` list, then the author's text.

    Without parameters it is the author's text alone. MaiBot does not look for a
    list the author already wrote, and neither does this (the text must match).
    """
    fallback = fallback_description.strip()
    properties = (parameters_schema or {}).get("properties")
    if not isinstance(properties, dict) or not properties:
        return fallback
    required = {str(n).strip() for n in (parameters_schema or {}).get("required", [])}
    lines = ["参数说明："]
    for raw_name, schema in properties.items():
        if not isinstance(schema, dict):
            continue
        name = str(raw_name).strip()
        kind = str(schema.get("type") or "").strip().lower() or "string"
        text = str(schema.get("description", "") or "").strip() or "无额外说明"
        line = f"- {name}：{kind}，{'必填' if name in required else '可选'}。{text}"
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            line += f" 可选值：{'、'.join(str(v) for v in enum)}。"
        if "default" in schema:
            line += f" 默认值：{schema['default']}。"
        lines.append(line)
    if len(lines) == 1:
        return fallback
    if fallback:
        lines += ["", fallback]
    return "\n".join(lines).strip()


class ToolParameterInfo(BaseModel):
    """One tool parameter, MaiBot-style (its schema always has a ``description``)."""

    name: str = Field(description="parameter name")
    param_type: ToolParamType = Field(default=ToolParamType.STRING)
    description: str = ""
    required: bool = True
    enum_values: list[Any] | None = None
    items_schema: dict[str, Any] | None = None
    properties: dict[str, dict[str, Any]] | None = None
    required_properties: list[str] = Field(default_factory=list)
    additional_properties: bool | dict[str, Any] | None = None
    default: Any = None

    def to_parameter_schema(self) -> dict[str, Any]:
        """This parameter's JSON Schema fragment: plughost's, with ``description`` always set."""
        fields = self.model_dump(exclude={"param_type"})
        schema = PlughostParameter(param_type=self.param_type, **fields).to_schema()
        schema["description"] = self.description
        return schema


ChatScope = Literal["all", "group", "private"]


class ComponentInfo(BaseModel):
    """What a decorator declares about one component (MaiBot's field names)."""

    name: str
    type: ComponentType
    description: str = ""
    enabled: bool = True
    metadata: dict[str, Any] = Field(default_factory=dict)


class ToolComponentInfo(ComponentInfo):
    """A ``@Tool`` (or converted ``@Action``) as MaiBot's SDK reports it."""

    type: ComponentType = ComponentType.TOOL
    platforms: list[str] = Field(default_factory=list)
    brief_description: str = ""
    detailed_description: str = ""
    parameters: list[ToolParameterInfo] = Field(default_factory=list)
    parameters_raw: dict[str, Any] = Field(default_factory=dict)
    invoke_method: str = "plugin.invoke_tool"


class ActionComponentInfo(ComponentInfo):
    """A legacy action (kept for imports; ``@Action`` registers a tool)."""

    type: ComponentType = ComponentType.ACTION
    activation_type: ActivationType = ActivationType.ALWAYS
    activation_keywords: list[str] = Field(default_factory=list)
    activation_probability: float = 1.0
    chat_mode: ChatMode = ChatMode.NORMAL
    action_parameters: dict[str, Any] = Field(default_factory=dict)
    action_require: list[str] = Field(default_factory=list)
    associated_types: list[str] = Field(default_factory=list)
    parallel_action: bool = False
    action_prompt: str = ""


class APIComponentInfo(ComponentInfo):
    """An ``@API``."""

    type: ComponentType = ComponentType.API
    version: str = "1"
    public: bool = False


class CommandComponentInfo(ComponentInfo):
    """A ``@Command``."""

    type: ComponentType = ComponentType.COMMAND
    command_pattern: str = ""
    aliases: list[str] = Field(default_factory=list)


class EventHandlerComponentInfo(ComponentInfo):
    """An ``@EventHandler``."""

    type: ComponentType = ComponentType.EVENT_HANDLER
    event_type: EventType = EventType.ON_MESSAGE
    intercept_message: bool = False
    weight: int = 0


class HookHandlerComponentInfo(ComponentInfo):
    """A ``@HookHandler``."""

    type: ComponentType = ComponentType.HOOK_HANDLER
    hook: str
    mode: HookMode = HookMode.BLOCKING
    order: HookOrder = HookOrder.NORMAL
    timeout_ms: int = 0
    error_policy: ErrorPolicy = ErrorPolicy.SKIP


class MessageGatewayComponentInfo(ComponentInfo):
    """A ``@MessageGateway``: the plugin's link to one chat platform."""

    type: ComponentType = ComponentType.MESSAGE_GATEWAY
    route_type: MessageGatewayRouteType
    platform: str = ""
    protocol: str = ""
    account_id: str = ""
    scope: str = ""


class HomeCardComponentInfo(ComponentInfo):
    """A ``@HomeCard``."""

    type: ComponentType = ComponentType.HOME_CARD
    title: str
    content: Any = ""
    link_url: str = ""
    link_label: str = ""
    icon: str = ""
    width: str = "medium"
    order: int = 1000


class ReplyExtensionComponentInfo(ComponentInfo):
    """A ``@ReplyExtension`` (importable; declaring one is refused)."""

    type: ComponentType = ComponentType.REPLY_EXTENSION
    platforms: list[str] = Field(default_factory=list)
    parameters_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    priority: int = 0
    timeout_ms: int = Field(default=60000, gt=0)
    chat_scope: ChatScope = "all"
    allowed_session: list[str] = Field(default_factory=list)


class LLMProviderInfo(BaseModel):
    """An ``@LLMProvider``: a model client the operator may choose to answer ``llm.*``."""

    client_type: str
    name: str = ""
    description: str = ""
    version: str = "1.0.0"
    metadata: dict[str, Any] = Field(default_factory=dict)


class CapabilityResult(BaseModel):
    """The envelope MaiBot's host wraps a capability result in."""

    success: bool
    result: Any = None
    error: str = ""
