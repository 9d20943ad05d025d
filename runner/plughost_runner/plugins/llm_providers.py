"""A plugin's ``@LLMProvider`` methods inside the runner: find them, call them.

At load the runner asks the plugin instance for ``get_llm_providers()`` (MaiBot's
dict shape, so an override written for MaiBot is honoured; a plughost plugin's
marks are read from its class), binds each to its method by client type, and
reports it to the host as a component of type ``LLM_PROVIDER`` named by its
client type. On ``component.invoke`` of that type the method is called with
``operation`` and ``request`` and its value is read as MaiBot's runner reads it:
``{"success": True, "result": value}``, or ``{"success": False, "result": message,
"error": message}`` when it raised. Whether the value is a usable response is
the host's to judge (:mod:`plughost.dispatch.llm_providers`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from plughost_runner.plugins.components import call_shape
from plughost_runner.process.limits import describe_limit_error
from plughost_sdk.components import collect_llm_providers

if TYPE_CHECKING:
    from collections.abc import Callable

    from plughost_runner.plugins.invoker import Invoker

__all__ = ["LLM_PROVIDER", "ProviderHandler", "call_provider", "provider_handlers"]

log = logging.getLogger("plughost_runner")

LLM_PROVIDER: Final = "LLM_PROVIDER"
"""The component type an LLM provider is reported and invoked as."""


@dataclass(frozen=True, slots=True)
class ProviderHandler:
    """One LLM provider's bound method, its declaration and how to call it."""

    client_type: str
    declaration: dict[str, Any]
    function: Callable[..., Any]
    is_async: bool
    accepts_any: bool
    accepted: frozenset[str]

    def to_wire(self) -> dict[str, Any]:
        """The component entry the host registers: named by client type, MaiBot's fields kept."""
        metadata = dict(self.declaration.get("metadata") or {})
        for key in ("client_type", "description", "version"):
            metadata[key] = self.declaration.get(key, "")
        metadata["display_name"] = self.declaration.get("name") or self.client_type
        return {"name": self.client_type, "type": LLM_PROVIDER, "metadata": metadata}


def provider_handlers(instance: Any) -> dict[str, ProviderHandler]:
    """Bind every LLM provider of ``instance`` to its method, by client type.

    Raises:
        ValueError: the declarations are unusable, two share a client type, or a
            method is missing; the message names the provider.
    """
    getter = getattr(instance, "get_llm_providers", None)
    raw = getter() if callable(getter) else collect_llm_providers(type(instance))
    if not isinstance(raw, list):
        raise ValueError(
            f"get_llm_providers() returned {type(raw).__name__}; return a list of dicts"
        )
    handlers: dict[str, ProviderHandler] = {}
    for entry in raw:
        if not isinstance(entry, dict) or not str(entry.get("client_type") or "").strip():
            raise ValueError(f"an LLM provider needs a non-empty 'client_type', got {entry!r}")
        client_type = str(entry["client_type"]).strip()
        if client_type in handlers:
            raise ValueError(f"two LLM providers have the client_type {client_type!r}")
        metadata = entry.get("metadata")
        method_name = str(metadata.get("handler_name", "")) if isinstance(metadata, dict) else ""
        method = getattr(instance, method_name, None) if method_name else None
        if not callable(method):
            raise ValueError(
                f"LLM provider {client_type!r} names method {method_name!r}, which the plugin "
                "does not have; declare providers with @LLMProvider"
            )
        is_async, accepts_any, accepted = call_shape(method)
        handlers[client_type] = ProviderHandler(
            client_type, dict(entry), method, is_async, accepts_any, accepted
        )
    return handlers


async def call_provider(
    invoker: Invoker,
    plugin_id: str,
    handler: ProviderHandler,
    arguments: dict[str, Any],
    timeout: float,
) -> dict[str, Any]:
    """Call a provider with ``operation`` and ``request`` and read its value.

    Raises:
        TimeoutError: the call passed its deadline.
    """
    kwargs = {"operation": arguments.get("operation", ""), "request": arguments.get("request")}
    try:
        value = await invoker.call(plugin_id, handler, kwargs, timeout)
    except TimeoutError:
        raise
    except Exception as exc:
        log.exception("LLM provider %s of plugin %s raised", handler.client_type, plugin_id)
        error = describe_limit_error(exc, plugin_id) or f"{type(exc).__name__}: {exc}"
        return {"success": False, "result": error, "error": error}
    return {"success": True, "result": value, "error": ""}
