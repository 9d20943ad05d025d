"""``maibot_sdk.components``: the component decorators of a MaiBot plugin.

``Tool`` and ``Action`` are MaiBot's own here: the declaration they record (and
that :meth:`MaiBotPlugin.get_components` reports) is MaiBot SDK 2.16's, with its
``参数说明：`` parameter section, ``platforms`` and ``invoke_method``, because a
MaiBot plugin's tool descriptions must read as they do under MaiBot. The other
decorators (``Command``, ``EventHandler``, ``HookHandler``, ``API``...) are
plughost's, which already have MaiBot's names, signatures and dict shape.

Like every plughost decorator these only mark the method; nothing runs until
the plugin is loaded.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from plughost_sdk._components import (
    API,
    Command,
    EventHandler,
    HomeCard,
    HookHandler,
    LLMProvider,
    MessageGateway,
    ReplyExtension,
    WorkflowStep,
)
from plughost_sdk.components import collect_llm_providers as collect_provider_declarations
from plughost_sdk.maibot.types import (
    ActivationType,
    ChatMode,
    ErrorPolicy,
    EventType,
    HookMode,
    HookOrder,
    MessageGatewayRouteType,
    ToolComponentInfo,
    ToolParameterInfo,
    build_tool_detailed_description,
)

__all__ = [
    "API",
    "TOOL_INFO_ATTRIBUTE",
    "Action",
    "Command",
    "ErrorPolicy",
    "EventHandler",
    "EventType",
    "HomeCard",
    "HookHandler",
    "HookMode",
    "HookOrder",
    "LLMProvider",
    "MessageGateway",
    "MessageGatewayRouteType",
    "ReplyExtension",
    "Tool",
    "WorkflowStep",
    "collect_components",
    "collect_llm_providers",
    "collect_tool_components",
]

TOOL_INFO_ATTRIBUTE = "__maibot_tool_info__"
F = TypeVar("F", bound=Callable[..., Any])


def _platforms(platforms: str | list[str] | None, what: str) -> list[str]:
    raw = [platforms] if isinstance(platforms, str) else platforms
    if raw is None:
        return []
    if not isinstance(raw, list) or any(not isinstance(p, str) or not p.strip() for p in raw):
        raise ValueError(
            f"{what} platforms must be a platform name or a list of names; None or [] means all"
        )
    return list(dict.fromkeys(p.strip().lower() for p in raw))


def _schema(parameters: list[ToolParameterInfo] | dict[str, Any] | None) -> dict[str, Any] | None:
    """The object schema of either parameter form, as MaiBot builds it."""
    if isinstance(parameters, dict):
        if parameters.get("type") == "object" or "properties" in parameters:
            return dict(parameters)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for name, fragment in parameters.items():
            if not isinstance(fragment, dict):
                continue
            fragment = dict(fragment)
            if bool(fragment.pop("required", False)):
                required.append(str(name))
            properties[str(name)] = fragment
        return _object(properties, required)
    if isinstance(parameters, list) and parameters:
        properties = {p.name: p.to_parameter_schema() for p in parameters}
        return _object(properties, [p.name for p in parameters if p.required])
    return None


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def Tool(  # noqa: N802 - MaiBot's decorator name
    name: str,
    description: str = "",
    brief_description: str = "",
    detailed_description: str = "",
    parameters: list[ToolParameterInfo] | dict[str, Any] | None = None,
    *,
    platforms: str | list[str] | None = None,
    **metadata: Any,
) -> Callable[[F], F]:
    """Declare a tool the model can call (MaiBot SDK 2.16 semantics).

    In the dict form a parameter is required only when its fragment says
    ``"required": True`` (MaiBot's rule; plughost's own ``@Tool`` differs).
    """
    scoped = _platforms(platforms, "Tool")
    brief = str(brief_description or description or f"工具 {name}").strip()
    detailed = str(detailed_description or "").strip()

    def decorate(func: F) -> F:
        info = ToolComponentInfo(
            name=name,
            description=brief,
            brief_description=brief,
            detailed_description=build_tool_detailed_description(
                _schema(parameters), fallback_description=detailed
            ),
            parameters=parameters if isinstance(parameters, list) else [],
            platforms=scoped,
            parameters_raw=parameters if isinstance(parameters, dict) else {},
            invoke_method="plugin.invoke_tool",
            metadata=metadata,
        )
        setattr(func, TOOL_INFO_ATTRIBUTE, info)
        return func

    return decorate


def Action(  # noqa: N802 - MaiBot's decorator name
    name: str,
    description: str = "",
    activation_type: ActivationType = ActivationType.ALWAYS,
    activation_keywords: list[str] | None = None,
    activation_probability: float = 1.0,
    chat_mode: ChatMode = ChatMode.NORMAL,
    action_parameters: dict[str, Any] | None = None,
    action_require: list[str] | None = None,
    associated_types: list[str] | None = None,
    parallel_action: bool = False,
    action_prompt: str = "",
    **metadata: Any,
) -> Callable[[F], F]:
    """Declare a legacy action; deprecated, registered as a tool as MaiBot does.

    Each action parameter becomes an optional string parameter; the handler gets
    them as keyword arguments plus ``action_data``, ``reasoning`` and ``stream_id``.
    """
    brief = str(description or f"工具 {name}").strip()
    schema = _action_schema(action_parameters)

    def decorate(func: F) -> F:
        warnings.warn(
            f"@Action({name!r}) is deprecated and is registered as a tool; use @Tool",
            DeprecationWarning,
            stacklevel=2,
        )
        info = ToolComponentInfo(
            name=name,
            description=brief,
            brief_description=brief,
            detailed_description=_action_description(
                schema,
                action_require,
                associated_types,
                activation_type,
                activation_keywords,
                action_prompt,
            ),
            parameters_raw=schema or {},
            invoke_method="plugin.invoke_action",
            metadata={
                **metadata,
                "legacy_action": True,
                "legacy_component_type": "ACTION",
                "activation_type": activation_type.value,
                "activation_keywords": list(activation_keywords or []),
                "activation_probability": activation_probability,
                "chat_mode": chat_mode.value,
                "action_parameters": dict(action_parameters or {}),
                "action_require": list(action_require or []),
                "associated_types": list(associated_types or []),
                "parallel_action": parallel_action,
                "action_prompt": action_prompt,
            },
        )
        setattr(func, TOOL_INFO_ATTRIBUTE, info)
        return func

    return decorate


def _action_schema(action_parameters: dict[str, Any] | None) -> dict[str, Any] | None:
    if not isinstance(action_parameters, dict):
        return None
    properties = {
        str(key).strip(): {
            "type": "string",
            "description": str(text or "").strip() or "兼容旧 Action 参数",
        }
        for key, text in action_parameters.items()
        if str(key or "").strip()
    }
    return {"type": "object", "properties": properties} if properties else None


def _action_description(
    schema: dict[str, Any] | None,
    requirements: list[str] | None,
    associated_types: list[str] | None,
    activation_type: ActivationType,
    keywords: list[str] | None,
    prompt: str,
) -> str:
    """MaiBot's text for a converted action: parameters, advice, message types, activation."""
    parts = [build_tool_detailed_description(schema)]
    needs = [str(r).strip() for r in requirements or [] if str(r).strip()]
    if needs:
        parts.append("使用建议：\n" + "\n".join(f"- {item}" for item in needs))
    types = [str(t).strip() for t in associated_types or [] if str(t).strip()]
    if types:
        parts.append(f"适用消息类型：{'、'.join(types)}。")
    activation = [f"兼容旧 Action 激活方式：{activation_type.value}。"]
    words = [str(k).strip() for k in keywords or [] if str(k).strip()]
    if words:
        activation.append(f"激活关键词：{'、'.join(words)}。")
    if str(prompt or "").strip():
        activation.append(f"原始 Action 提示语：{str(prompt).strip()}。")
    parts.append("\n".join(activation))
    return "\n\n".join(part for part in parts if part).strip()


def collect_tool_components(instance: object) -> list[dict[str, Any]]:
    """The TOOL dicts of ``instance``, in attribute-name order, as MaiBot reports them."""
    found: list[dict[str, Any]] = []
    for attr in dir(instance):
        try:
            member = getattr(instance, attr)
        except Exception:  # a property that fails is not a component
            continue
        info = getattr(member, TOOL_INFO_ATTRIBUTE, None) if callable(member) else None
        if not isinstance(info, ToolComponentInfo):
            continue
        declared = info.model_dump(mode="json", exclude={"name", "type", "metadata"})
        found.append(
            {
                "name": info.name,
                "type": info.type.value,
                "metadata": {**info.metadata, **declared, "handler_name": attr},
            }
        )
    return found


def collect_components(instance: Any) -> list[dict[str, Any]]:
    """Every decorated component of ``instance`` as MaiBot lists them (by method name)."""
    found = collect_tool_components(instance)
    found += [
        declaration.to_wire()
        for declaration in type(instance).component_declarations()
        if declaration.type.value not in ("TOOL", "ACTION")
    ]
    found.sort(key=lambda c: str(c["metadata"].get("handler_name", "")))
    return found


def collect_llm_providers(instance: object) -> list[dict[str, Any]]:
    """Every ``@LLMProvider`` of ``instance`` as MaiBot lists them (by method name)."""
    return collect_provider_declarations(type(instance))
