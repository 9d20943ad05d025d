"""Who answers ``llm.*``: the embedder, then the operator's plugin provider, then the client.

A plugin's ``llm.generate`` (``ctx.llm.generate``) is answered by the first of:

1. the embedder's own handler, ``llm.generate`` or ``llm.*``
   (:meth:`~plughost.host.PluginHost.register_capability`): the host registers
   everything of its own as a fallback, so whatever the embedder registers wins;
2. the ``@LLMProvider`` the operator chose (``[host.llm]``: ``models`` by the
   model the call names, else ``provider``), run in its plugin's runner like any
   component, under the host's ``call_timeout``;
3. for ``llm.generate`` only, the sampling of the MCP client behind the call
   (:mod:`plughost.runners.client_requests`).

The embedder asks the chosen provider itself with :meth:`LLMProviders.call`
(``host.dispatcher.llm``). A provider's answer is the plugin's word: it is read
as MaiBot's response dict (:mod:`plughost.dispatch.llm_requests`) and anything
else is a failed reply naming the plugin, never an exception in the caller.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from plughost.dispatch.calls import ComponentCaller
from plughost.dispatch.llm_requests import (
    ProviderReplyError,
    build_request,
    read_reply,
    requested_model,
)
from plughost.plugins.component_info import PluginComponent
from plughost.plugins.components import ComponentRegistry
from plughost.runners import client_requests
from plughost.runners.capabilities import CapabilityCall
from plughost.runners.channel import RemoteError
from plughost.settings import HostSettings
from plughost_sdk import wire
from plughost_sdk.context import LLM_GENERATE

__all__ = ["LLMProviders", "NoProviderError"]

log = logging.getLogger(__name__)


class NoProviderError(LookupError):
    """No plugin provider serves the call: none chosen, or the chosen one is not there."""


@dataclass(frozen=True, slots=True)
class LLMProviders:
    """The host's fallback ``llm.*`` handler and the embedder's way to the chosen provider.

    ``settings()`` is read at every call, so a changed choice applies at once.
    """

    registry: ComponentRegistry
    caller: ComponentCaller
    settings: Callable[[], HostSettings]

    def providers(self) -> list[PluginComponent]:
        """Every enabled LLM provider of the loaded plugins."""
        return [
            c
            for c in self.registry.components("LLM_PROVIDER")
            if self.registry.component_enabled(c)
        ]

    def chosen(self, model: str = "") -> PluginComponent | None:
        """The provider serving a call that names ``model``; None when the operator chose none.

        Raises:
            NoProviderError: the operator's choice names a plugin or client type
                that is not loaded, or a plugin with several providers without
                saying which.
        """
        choices = self.settings().llm
        reference = choices.models.get(model, "") if model else ""
        reference = reference or choices.provider
        if not reference:
            return None
        plugin_id, _, client_type = reference.partition(":")
        found = [
            c
            for c in self.providers()
            if c.plugin_id == plugin_id and (not client_type or c.name == client_type)
        ]
        if len(found) == 1:
            return found[0]
        if not found:
            raise NoProviderError(
                f"the LLM provider {reference!r} chosen in [host.llm] is not loaded: plugin "
                f"{plugin_id} is not running or declares no @LLMProvider"
                + (f" with client_type {client_type!r}" if client_type else "")
            )
        names = ", ".join(f"'{plugin_id}:{c.name}'" for c in found)
        raise NoProviderError(
            f"plugin {plugin_id} has several LLM providers; choose one in [host.llm] as {names}"
        )

    async def call(
        self, capability: str, args: dict[str, Any], *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Ask the chosen provider, as a plugin's ``capability`` call would.

        Returns:
            MaiBot's capability answer: ``{"success": True, "response": ...}``, or
            ``{"success": False, "error": ...}`` when the provider failed.

        Raises:
            NoProviderError: no provider is chosen, or the chosen one is not loaded.
            ValueError: ``args`` lack what ``capability`` needs.
        """
        component = self.chosen(requested_model(args))
        if component is None:
            raise NoProviderError(
                f"{capability}: no LLM provider is chosen; set [host.llm] provider to a "
                "plugin that declares an @LLMProvider"
            )
        return await self.ask(component, capability, args, timeout)

    async def ask(
        self,
        component: PluginComponent,
        capability: str,
        args: dict[str, Any],
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Run one ``llm.*`` call through ``component``; a failure is a reply, never raised.

        Raises:
            ValueError: ``args`` lack what ``capability`` needs.
        """
        operation, request = build_request(capability, args, component.plugin_id, component.name)
        seconds = timeout if timeout is not None else self.settings().call_timeout
        reply = await self.caller.call(
            component, {"operation": operation, "request": request}, seconds
        )
        where = f"LLM provider {component.name} of plugin {component.plugin_id}"
        if not reply.get("success", False):
            error = reply.get("error") or reply.get("result") or "it failed"
            return {"success": False, "error": f"{where} failed: {error}"}
        try:
            return read_reply(capability, reply.get("result"), requested_model(args))
        except ProviderReplyError as exc:
            log.warning("%s answered %s unreadably: %s", where, capability, exc)
            return {"success": False, "error": f"{where} {exc}"}

    async def __call__(self, call: CapabilityCall) -> Any:
        """Answer a plugin's ``llm.*`` call when the embedder registered no handler for it."""
        try:
            component = self.chosen(requested_model(call.args))
        except NoProviderError as exc:
            raise _not_provided(f"{call.capability}: {exc}") from None
        if component is None:
            if call.capability == LLM_GENERATE:
                return await client_requests.generate(call)
            raise _not_provided(
                f"{call.capability}: no model can answer here: the embedder registered no "
                "handler for it and no LLM provider is chosen ([host.llm] provider)"
            )
        return await self.ask(component, call.capability, dict(call.args))


def _not_provided(message: str) -> RemoteError:
    return RemoteError(wire.error_body("capability_not_provided", message))
