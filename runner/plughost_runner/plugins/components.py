"""Commands, event handlers, hook handlers and APIs inside the runner: find them, call them.

At load the runner asks the plugin instance for ``get_components()`` (so an
override written for MaiBot is honoured), keeps the entries of the types the
host serves, and binds each to its method (``metadata["handler_name"]``), or,
for a plugin without that method but with ``invoke_component(name, **args)``,
to that. A component whose method is missing, or of a type plughost refuses,
fails the load naming the component.

On ``component.invoke`` the handler's return value is turned into one reply
shape per type, the same reading MaiBot's runner gives it, so the host never
sees a plugin's raw value:

- COMMAND ``{"success", "response", "intercept", "error"}``: ``(ok, text, intercept)``
  is read as is; ``(ok, text)`` takes ``intercept`` from the ``intercept_message_level``
  metadata; any other value is the response text. A command that raises stops
  later processing (``intercept``). A MaiBot plugin's command is read as MaiBot
  reads it instead (:mod:`plughost_runner.maibot.commands`).
- EVENT_HANDLER ``{"success", "continue_processing", "modified_message", "custom_result",
  "error"}``: a dict return is read for those keys (``blocked: true`` means stop).
- HOOK_HANDLER ``{"success", "action", "modified_kwargs", "custom_result", "error"}``.
- API ``{"success", "result", "error"}``.
- MESSAGE_GATEWAY ``{"success", "result", "error"}``: called with ``message``,
  ``route`` and ``metadata`` for one outbound message; the value is the receipt.

LLM providers are not components in MaiBot's SDK; they are bound and called
by :mod:`plughost_runner.plugins.llm_providers`.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from plughost_runner.maibot import commands as maibot_commands
from plughost_runner.maibot.imports import as_maibot_plugin
from plughost_runner.process.limits import describe_limit_error
from plughost_sdk.components import (
    REFUSED_COMPONENT_TYPES,
    SERVED_COMPONENT_TYPES,
    TOOL_COMPONENT_TYPES,
    ComponentDeclaration,
    normalize_component_type,
)
from plughost_sdk.types import ComponentType

if TYPE_CHECKING:
    from plughost_runner.plugins.invoker import Invoker

__all__ = [
    "INVOKABLE_TYPES",
    "ComponentHandler",
    "call_component",
    "call_shape",
    "component_handlers",
    "dynamic_handler",
]

log = logging.getLogger("plughost_runner")


@dataclass(frozen=True, slots=True)
class ComponentHandler:
    """A component's bound method and how to call it."""

    declaration: ComponentDeclaration
    function: Callable[..., Any]
    is_async: bool
    accepts_any: bool
    accepted: frozenset[str]
    maibot: bool = False
    """The plugin is written for MaiBot's SDK: its command results are read as MaiBot does."""


def component_handlers(instance: Any) -> dict[tuple[str, str], ComponentHandler]:
    """Bind every served component of ``instance`` to its method, keyed by (type, name).

    Raises:
        ValueError: ``get_components()`` failed or returned something unusable, a
            component's type is refused, or its method is missing; the message
            names the component.
    """
    getter = getattr(instance, "get_components", None)
    raw = getter() if callable(getter) else []
    if not isinstance(raw, list):
        raise ValueError(f"get_components() returned {type(raw).__name__}; return a list of dicts")
    handlers: dict[tuple[str, str], ComponentHandler] = {}
    for entry in raw:
        if not isinstance(entry, dict):
            raise ValueError(f"get_components() returned an entry that is not a dict: {entry!r}")
        kind = normalize_component_type(entry.get("type"))
        if kind in TOOL_COMPONENT_TYPES:
            continue  # tools are declared with @Tool and travel as tool declarations
        name = entry.get("name")
        if kind in REFUSED_COMPONENT_TYPES:
            raise ValueError(
                f"component {name!r} of type {kind} is not supported by plughost: "
                f"{REFUSED_COMPONENT_TYPES[kind]}; remove it to run the rest of the plugin here"
            )
        declaration = ComponentDeclaration.from_wire(entry)
        if declaration.type not in SERVED_COMPONENT_TYPES:
            raise ValueError(f"component {name!r} has a type plughost does not serve: {kind}")
        key = (kind, declaration.name)
        if key in handlers:
            raise ValueError(f"two components of type {kind} are named {declaration.name!r}")
        handlers[key] = _bind(instance, declaration)
    return handlers


def call_shape(function: Callable[..., Any]) -> tuple[bool, bool, frozenset[str]]:
    """How to call a plugin method: is it async, does it take ``**kwargs``, which names it takes."""
    params = inspect.signature(function).parameters.values()
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return (
        inspect.iscoroutinefunction(function),
        any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params),
        frozenset(p.name for p in params if p.kind in named),
    )


def _bind(instance: Any, declaration: ComponentDeclaration) -> ComponentHandler:
    maibot = as_maibot_plugin(instance) is not None
    method = getattr(instance, declaration.handler_name, None) if declaration.handler_name else None
    if callable(method):
        is_async, accepts_any, accepted = call_shape(method)
        return ComponentHandler(declaration, method, is_async, accepts_any, accepted, maibot)
    dispatcher = getattr(instance, "invoke_component", None)
    if callable(dispatcher):  # MaiBot plugins' dynamic components
        return ComponentHandler(
            declaration=declaration,
            function=functools.partial(dispatcher, declaration.name),
            is_async=inspect.iscoroutinefunction(dispatcher),
            accepts_any=True,
            accepted=frozenset(),
            maibot=maibot,
        )
    where = f"{declaration.type.value} component {declaration.name!r}"
    raise ValueError(
        f"{where} names method {declaration.handler_name!r}, which the plugin does not have; "
        "declare components with their decorators, or give get_components() entries a "
        "metadata.handler_name that exists"
    )


def dynamic_handler(instance: Any, kind: str, name: str) -> ComponentHandler | None:
    """A handler for an API the plugin published after load, through ``invoke_component``.

    The host only sends calls for APIs in its registry, and the plugin put this
    one there itself (``api.replace_dynamic``); None when the plugin cannot
    dispatch by name.
    """
    dispatcher = getattr(instance, "invoke_component", None)
    if kind != "API" or not callable(dispatcher):
        return None
    declaration = ComponentDeclaration(name, ComponentType.API, "", {"dynamic": True})
    return _bind(instance, declaration)


async def call_component(
    invoker: Invoker,
    plugin_id: str,
    handler: ComponentHandler,
    arguments: dict[str, Any],
    timeout: float,
) -> dict[str, Any]:
    """Call a component and read its value into the reply shape of its type.

    Raises:
        TimeoutError: the call passed its deadline.
    """
    kind = handler.declaration.type.value
    metadata = handler.declaration.metadata
    as_maibot = handler.maibot and kind == "COMMAND"
    try:
        value = await invoker.call(plugin_id, handler, arguments, timeout)
    except TimeoutError:
        raise
    except Exception as exc:
        log.exception("%s %s of plugin %s raised", kind, handler.declaration.name, plugin_id)
        error = describe_limit_error(exc, plugin_id) or f"{type(exc).__name__}: {exc}"
        if as_maibot:
            return maibot_commands.command_failure(exc, error, metadata)
        return _failed(kind, error)
    if as_maibot:
        return maibot_commands.command_reply(value, metadata)
    return _READERS[kind](value, metadata)


def _failed(kind: str, error: str) -> dict[str, Any]:
    if kind == "COMMAND":
        return {"success": False, "response": error, "intercept": True, "error": error}
    if kind == "EVENT_HANDLER":
        return {"success": False, "continue_processing": True, "error": error}
    if kind == "HOOK_HANDLER":
        return {"success": False, "action": "continue", "error": error}
    return {"success": False, "result": None, "error": error}


def _command(value: Any, metadata: dict[str, Any]) -> dict[str, Any]:
    intercept = bool(metadata.get("intercept_message_level", 0))
    success, response = True, value
    if isinstance(value, tuple | list) and len(value) >= 2:
        success, response = bool(value[0]), value[1]
        if len(value) >= 3:
            intercept = bool(value[2])
    text = None if response is None else str(response)
    return {"success": success, "response": text, "intercept": intercept, "error": ""}


def _event(value: Any, metadata: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(value, dict):
        custom = None if value is None else value
        return {"success": True, "continue_processing": True, "custom_result": custom, "error": ""}
    if "blocked" in value:
        go_on = not bool(value["blocked"])
    else:
        go_on = bool(value.get("continue_processing", True))
    modified = value.get("modified_message")
    return {
        "success": True,
        "continue_processing": go_on,
        "modified_message": modified if isinstance(modified, dict) else None,
        "custom_result": value.get("custom_result"),
        "error": "",
    }


def _hook(value: Any, metadata: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(value, dict):
        custom = None if value is None else value
        return {"success": True, "action": "continue", "custom_result": custom, "error": ""}
    action = str(value.get("action", "continue") or "continue").strip().lower()
    modified = value.get("modified_kwargs")
    return {
        "success": True,
        "action": action if action in ("continue", "abort") else "continue",
        "modified_kwargs": modified if isinstance(modified, dict) else None,
        "custom_result": value.get("custom_result"),
        "error": "",
    }


def _api(value: Any, metadata: dict[str, Any]) -> dict[str, Any]:
    return {"success": True, "result": value, "error": ""}


_READERS: dict[str, Callable[[Any, dict[str, Any]], dict[str, Any]]] = {
    "COMMAND": _command,
    "EVENT_HANDLER": _event,
    "HOOK_HANDLER": _hook,
    "API": _api,
    "MESSAGE_GATEWAY": _api,  # MaiBot's runner reads a gateway's value as any component's
}
INVOKABLE_TYPES = frozenset(_READERS)
"""The types ``component.invoke`` calls; a home card is declarative and never called."""
