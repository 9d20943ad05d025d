"""Decorators for the components beside tools: commands, event handlers, hooks, APIs, ...

Their names, signatures and defaults are those of MaiBot's plugin SDK 2.16, so a
plugin written for it declares the same things here. Like ``@Tool`` they only
mark the method; the plugin class collects and checks the marks when it is
defined (:mod:`plughost_sdk.components`). The few checks MaiBot's SDK makes at
decoration time (an empty hook name, an unknown gateway direction) are made
here too, with the same exception type.

``@MessageGateway`` marks a method that carries the host's outbound messages
to a chat platform (the plugin routes inbound ones with ``ctx.gateway``);
``@LLMProvider`` marks a method that answers the host's ``llm.*`` calls when the
operator chooses its plugin. ``@ReplyExtension`` exists so that a plugin using it
imports; the plugin class then refuses it with a message naming the component
(plughost hosts no reply composer for it to plug into). ``@WorkflowStep`` was removed from
MaiBot's SDK in 2.0 and raises as it does there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from plughost_sdk.types import (
    ComponentType,
    ErrorPolicy,
    EventType,
    HookMode,
    HookOrder,
    MessageGatewayRouteType,
    ToolParameterInfo,
)

__all__ = [
    "API",
    "COMPONENT_ATTRIBUTE",
    "LLM_PROVIDER",
    "Command",
    "ComponentMark",
    "EventHandler",
    "HomeCard",
    "HookHandler",
    "LLMProvider",
    "MessageGateway",
    "ReplyExtension",
    "WorkflowStep",
]

COMPONENT_ATTRIBUTE = "__plughost_component__"
LLM_PROVIDER = "LLM_PROVIDER"
"""The kind of an ``@LLMProvider`` mark: not a component type in MaiBot's SDK either."""

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class ComponentMark:
    """What a component decorator recorded on a method, before the class checks it.

    ``fields`` are the declared fields in MaiBot's order (enum values as strings);
    ``name`` is empty when the component takes the method's name.
    """

    kind: str
    name: str
    decorator: str
    fields: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)


def Command(  # noqa: N802 - a decorator named like the component it declares
    name: str,
    description: str = "",
    pattern: str = "",
    aliases: list[str] | None = None,
    **metadata: Any,
) -> Callable[[F], F]:
    """Declare a chat command: the host runs it when a message's text matches.

    Args:
        name: The command's name, unique among the plugin's commands.
        description: What it does, for listings.
        pattern: A regular expression searched in the message text; named groups
            reach the handler as ``matched_groups``.
        aliases: Prefixes that also trigger the command (``"/w"``).
        **metadata: Kept on the component. Known keys: ``intercept_message_level``
            (non-zero: a handler returning ``(ok, text)`` stops later processing),
            ``timeout_ms``.

    Returns:
        A decorator that marks the method and returns it unchanged.
    """
    fields = {
        "description": description,
        "enabled": True,
        "command_pattern": pattern,
        "aliases": [str(a) for a in aliases or []],
    }
    return _marker(ComponentMark(ComponentType.COMMAND, name, "Command", fields, dict(metadata)))


def API(  # noqa: N802
    name: str,
    description: str = "",
    version: str = "1",
    public: bool = False,
    **metadata: Any,
) -> Callable[[F], F]:
    """Declare an API other plugins call through ``ctx.api.call``.

    Args:
        name: The API's name; callers use ``plugin_id.name`` or the name alone.
        description: What it does.
        version: Its version; a caller may ask for one.
        public: Whether other plugins may call it at all (they also need the
            operator's grant); a plugin may always call its own.
        **metadata: Kept on the component (``timeout_ms`` is honoured).
    """
    fields = {
        "description": description,
        "enabled": True,
        "version": str(version or "1").strip() or "1",
        "public": bool(public),
    }
    return _marker(ComponentMark(ComponentType.API, name, "API", fields, dict(metadata)))


def EventHandler(  # noqa: N802
    name: str,
    description: str = "",
    event_type: EventType = EventType.ON_MESSAGE,
    intercept_message: bool = False,
    weight: int = 0,
    **metadata: Any,
) -> Callable[[F], F]:
    """Declare a handler of one bot event.

    Args:
        name: The handler's name, unique among the plugin's event handlers.
        description: What it does.
        event_type: The event it handles (:class:`EventType` or its value).
        intercept_message: True: the bot waits for it, in weight order, and it may
            stop or modify the message. False: it runs in the background and its
            failures are only logged.
        weight: Higher runs first.
        **metadata: Kept on the component (``timeout_ms`` is honoured).
    """
    fields = {
        "description": description,
        "enabled": True,
        "event_type": _enum(EventType, event_type, "EventHandler", "event_type").value,
        "intercept_message": bool(intercept_message),
        "weight": int(weight),
    }
    mark = ComponentMark(ComponentType.EVENT_HANDLER, name, "EventHandler", fields, dict(metadata))
    return _marker(mark)


def HookHandler(  # noqa: N802
    hook: str,
    *,
    name: str = "",
    description: str = "",
    mode: HookMode = HookMode.BLOCKING,
    order: HookOrder = HookOrder.NORMAL,
    timeout_ms: int = 0,
    error_policy: ErrorPolicy = ErrorPolicy.SKIP,
    **metadata: Any,
) -> Callable[[F], F]:
    """Declare a handler of a named hook (``maisaka.planner.before_request``).

    Args:
        hook: The hook's name.
        name: The component's name; the method's name when empty.
        description: What it does.
        mode: ``blocking`` handlers run one after another and may return
            ``{"action": "continue" | "abort", "modified_kwargs": {...}}``;
            ``observe`` handlers get a copy of the payload and cannot change it.
        order: The slot within the mode: early, normal, late.
        timeout_ms: Its time limit; 0 uses the hook's default.
        error_policy: What its failure does to the chain (:class:`ErrorPolicy`).
        **metadata: Kept on the component.

    Raises:
        ValueError: the hook name is empty.
    """
    normalized_hook = str(hook or "").strip()
    if not normalized_hook:
        raise ValueError("HookHandler needs a hook name, such as 'maisaka.planner.before_request'")
    fields = {
        "description": description,
        "enabled": True,
        "hook": normalized_hook,
        "mode": _enum(HookMode, mode, "HookHandler", "mode").value,
        "order": _enum(HookOrder, order, "HookHandler", "order").value,
        "timeout_ms": int(timeout_ms),
        "error_policy": _enum(ErrorPolicy, error_policy, "HookHandler", "error_policy").value,
    }
    mark = ComponentMark(
        ComponentType.HOOK_HANDLER, str(name or "").strip(), "HookHandler", fields, dict(metadata)
    )
    return _marker(mark)


def HomeCard(  # noqa: N802
    name: str,
    title: str,
    content: Any = "",
    *,
    description: str = "",
    link_url: str = "",
    link_label: str = "",
    icon: str = "",
    width: str = "medium",
    order: int = 1000,
    **metadata: Any,
) -> Callable[[F], F]:
    """Declare a card for a dashboard's home page: declarative data, never called.

    The host registers and lists it (``plughost components``); an embedder with
    a dashboard reads it from the component registry.

    Raises:
        ValueError: the name or the title is empty.
    """
    normalized_name, normalized_title = str(name or "").strip(), str(title or "").strip()
    if not normalized_name:
        raise ValueError("HomeCard needs a name")
    if not normalized_title:
        raise ValueError(f"HomeCard {normalized_name!r} needs a title")
    fields = {
        "description": description,
        "enabled": True,
        "title": normalized_title,
        "content": content,
        "link_url": str(link_url or "").strip(),
        "link_label": str(link_label or "").strip(),
        "icon": str(icon or "").strip(),
        "width": str(width or "medium").strip().lower() or "medium",
        "order": int(order),
    }
    mark = ComponentMark(
        ComponentType.HOME_CARD, normalized_name, "HomeCard", fields, dict(metadata)
    )
    return _marker(mark)


def MessageGateway(  # noqa: N802
    route_type: str,
    *,
    name: str = "",
    description: str = "",
    platform: str = "",
    protocol: str = "",
    account_id: str = "",
    scope: str = "",
    **metadata: Any,
) -> Callable[[F], F]:
    """Declare a message gateway: the plugin's link to one chat platform.

    A ``send`` or ``duplex`` gateway's method is called with ``message`` (MaiBot's
    message dict), ``route`` (``platform``, ``account_id``, ``scope``) and
    ``metadata`` for each outbound message the host routes to it; a ``receive``
    or ``duplex`` gateway hands inbound messages to the host with
    ``ctx.gateway.route_message(name, message)`` once it said it is ready
    (``ctx.gateway.update_state(name, ready=True)``).

    Args:
        route_type: ``send``, ``receive`` (or ``recv``) or ``duplex``.
        name: The component's name; the method's name when empty.
        description: What it connects.
        platform: The platform it serves (``qq``); may be reported at run time instead.
        protocol: The protocol or dialect (``onebot-v11``).
        account_id: The bot's account on the platform.
        scope: An extra routing scope.
        **metadata: Kept on the component (``timeout_ms`` is honoured).

    Raises:
        ValueError: ``route_type`` is not send, receive (recv) or duplex.
    """
    aliases = {"recv": "receive", "recive": "receive"}
    raw = str(route_type or "").strip().lower()
    try:
        route = MessageGatewayRouteType(aliases.get(raw, raw))
    except ValueError:
        raise ValueError(
            f"MessageGateway route_type {route_type!r} is not one of send, receive, duplex"
        ) from None
    fields = {
        "description": description,
        "enabled": True,
        "route_type": route.value,
        "platform": str(platform or "").strip(),
        "protocol": str(protocol or "").strip(),
        "account_id": str(account_id or "").strip(),
        "scope": str(scope or "").strip(),
    }
    mark = ComponentMark(
        ComponentType.MESSAGE_GATEWAY, str(name or ""), "MessageGateway", fields, dict(metadata)
    )
    return _marker(mark)


def ReplyExtension(  # noqa: N802
    name: str,
    description: str = "",
    parameters: list[ToolParameterInfo] | dict[str, Any] | None = None,
    *,
    platforms: str | list[str] | None = None,
    priority: int = 0,
    timeout_ms: int = 60000,
    chat_scope: Literal["all", "group", "private"] = "all",
    allowed_session: list[str] | None = None,
    enabled: bool = True,
    **metadata: Any,
) -> Callable[[F], F]:
    """Declared so plugins using MaiBot's reply extensions import; the plugin class refuses it."""
    fields = {
        "description": description,
        "enabled": enabled,
        "platforms": [platforms] if isinstance(platforms, str) else list(platforms or []),
        "priority": priority,
        "timeout_ms": timeout_ms,
        "chat_scope": chat_scope,
        "allowed_session": list(allowed_session or []),
        "parameters": parameters,
    }
    mark = ComponentMark(
        ComponentType.REPLY_EXTENSION, name, "ReplyExtension", fields, dict(metadata)
    )
    return _marker(mark)


def LLMProvider(  # noqa: N802
    client_type: str,
    *,
    name: str = "",
    description: str = "",
    version: str = "1.0.0",
    **metadata: Any,
) -> Callable[[F], F]:
    """Declare a model client: the method answers ``llm.*`` calls the host routes to it.

    The method is called with ``operation`` (``response``, ``embedding`` or
    ``audio_transcription``) and ``request`` (MaiBot's serialized request) and
    returns MaiBot's response dict (``content``, ``reasoning_content``,
    ``tool_calls``, ``usage``; ``embedding`` for embeddings). It serves only when
    the operator chooses its plugin (``[host.llm] provider``).

    Args:
        client_type: The client type it implements, unique within the plugin.
        name: A display name; ``client_type`` when empty.
        description: What it connects to.
        version: The implementation's version.
        **metadata: Kept on the provider.

    Raises:
        ValueError: ``client_type`` is empty.
    """
    normalized = str(client_type or "").strip()
    if not normalized:
        raise ValueError("LLMProvider needs a client_type")
    fields = {
        "client_type": normalized,
        "description": description,
        "version": str(version or "1.0.0").strip() or "1.0.0",
    }
    mark = ComponentMark(
        LLM_PROVIDER, str(name or normalized).strip(), "LLMProvider", fields, dict(metadata)
    )
    return _marker(mark)


def WorkflowStep(*args: Any, **kwargs: Any) -> Callable[[F], F]:  # noqa: N802
    """Removed in MaiBot's SDK 2.0; raises, as it does there.

    Raises:
        RuntimeError: always, saying what replaces it.
    """
    raise RuntimeError(
        "@WorkflowStep was removed in MaiBot's plugin SDK 2.0 and is not supported; "
        "declare a @HookHandler on the hook the step ran at instead"
    )


def _enum(kind: type[Any], value: Any, decorator: str, argument: str) -> Any:
    try:
        return kind(getattr(value, "value", value))
    except ValueError:
        allowed = ", ".join(member.value for member in kind)
        raise ValueError(f"{decorator} {argument}={value!r} is not one of: {allowed}") from None


def _marker(mark: ComponentMark) -> Callable[[F], F]:
    def decorate(func: F) -> F:
        name = mark.name or getattr(func, "__name__", "")
        setattr(func, COMPONENT_ATTRIBUTE, _named(mark, name))
        return func

    return decorate


def _named(mark: ComponentMark, name: str) -> ComponentMark:
    if mark.name == name:
        return mark
    return ComponentMark(mark.kind, name, mark.decorator, mark.fields, mark.metadata)
