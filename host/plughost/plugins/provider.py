"""PluginToolProvider: plugin tools as a ToolProvider, over the query service.

It holds no plugin objects: it reads the current components through the
:class:`~plughost.plugins.query.ComponentQueryService` and sends calls to the runner
that owns the plugin right now (which a reload may have just swapped). It is also
a :class:`~plughost.tools.resources.ContentProvider` for the plugins' resources and
prompts (:mod:`plughost.plugins.content`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any, Literal

from plughost.plugins.components import ComponentRegistry, ToolComponent, ToolInvoker
from plughost.plugins.content import PluginContent
from plughost.plugins.query import PLUGIN_PROVIDER_NAME, ComponentQueryService
from plughost.tools.provider import ChangeListener
from plughost.tools.registry import ToolRegistry
from plughost.tools.resources import PromptInfo, PromptResult, ResourceContent, ResourceInfo
from plughost.tracing import start_span, tracing
from plughost_sdk.models import (
    ToolAvailabilityContext,
    ToolExecutionContext,
    ToolExecutionResult,
    ToolInvocation,
    ToolSpec,
)

__all__ = ["PluginToolProvider"]


class PluginToolProvider:
    """Exposes every loaded plugin's tools to a ToolRegistry."""

    provider_name = PLUGIN_PROVIDER_NAME
    provider_type = "plugin"

    def __init__(
        self,
        components: ComponentRegistry,
        query: ComponentQueryService,
        *,
        default_timeout: float = 60.0,
    ) -> None:
        self._components = components
        self._query = query
        self._default_timeout = default_timeout
        self._listeners: list[ChangeListener] = []
        self.content = PluginContent(components, timeout=default_timeout)
        components.add_listener(self._changed)

    def bind_registry(self, registry: ToolRegistry) -> None:
        """Tell ``registry`` whenever the plugin tool set changes."""
        self._listeners.append(registry.notify_changed)

    def _changed(self) -> None:
        for listener in self._listeners:
            listener(self.provider_name)

    async def list_tools(self, context: ToolAvailabilityContext | None = None) -> list[ToolSpec]:
        """Every available plugin tool in ``context``."""
        return self._query.specs(context)

    async def invoke(
        self, invocation: ToolInvocation, context: ToolExecutionContext | None = None
    ) -> ToolExecutionResult:
        """Send the call to the plugin's runner; failures come back as results."""
        name = invocation.tool_name
        context = invocation.execution_context(context)
        component = self._query.resolve(name)
        owner = self._components.owner(component.plugin_id) if component else None
        if component is None or owner is None:
            return ToolExecutionResult.failure(name, f"Tool not found: {name}", "tool_not_found")
        if not self._components.is_available(
            component, context.availability() if context else None
        ):
            return ToolExecutionResult.failure(
                name, f"tool {name} is disabled in this conversation", "tool_disabled"
            )
        if not isinstance(invocation.arguments, dict):
            return ToolExecutionResult.failure(
                name, "arguments must be checked by the ToolRegistry first", "invalid_arguments"
            )
        kwargs = self._query.build_arguments(
            component, invocation.arguments, context, call_id=invocation.call_id
        )
        timeout_ms = component.metadata.get("timeout_ms")
        timeout = timeout_ms / 1000 if isinstance(timeout_ms, int) else self._default_timeout
        result = await _call_runner(owner, component, kwargs, timeout)
        if result.error_code == "shutting_down":
            # A reload swapped the owner between lookup and send: the new runner takes it.
            successor = self._components.owner(component.plugin_id)
            if successor is not None and successor is not owner:
                result = await _call_runner(successor, component, kwargs, timeout)
        if result.tool_name != name:  # a pydantic attribute write costs more than the check
            result.tool_name = name
        return result

    async def list_resources(self) -> list[ResourceInfo]:
        """Every plugin resource and resource template."""
        return self.content.list_resources()

    async def read_resource(self, uri: str) -> list[ResourceContent]:
        """Read a plugin resource (raises ``ContentError``)."""
        return await self.content.read_resource(uri)

    async def list_prompts(self) -> list[PromptInfo]:
        """Every plugin prompt."""
        return self.content.list_prompts()

    async def get_prompt(self, name: str, arguments: Mapping[str, str]) -> PromptResult:
        """Fill in a plugin prompt (raises ``ContentError``)."""
        return await self.content.get_prompt(name, arguments)

    async def complete(
        self,
        kind: Literal["prompt", "resource"],
        name: str,
        argument: str,
        value: str,
        context: Mapping[str, str],
    ) -> list[str]:
        """The values the plugin declared for ``argument`` that start with ``value``."""
        return self.content.complete(kind, name, argument, value)

    async def close(self) -> None:
        """Nothing to release: the host owns the runners."""


def _call_runner(
    owner: ToolInvoker, component: ToolComponent, kwargs: dict[str, Any], timeout: float
) -> Awaitable[ToolExecutionResult]:
    """One round trip to the runner, as a ``plughost.runner_call`` span when tracing.

    Untraced, the owner's own coroutine is returned: no frame of this module's
    stays between the call and its runner.
    """
    if not tracing():
        return owner.invoke(component.plugin_id, component.name, kwargs, timeout)
    return _traced_call(owner, component, kwargs, timeout)


async def _traced_call(
    owner: ToolInvoker, component: ToolComponent, kwargs: dict[str, Any], timeout: float
) -> ToolExecutionResult:
    attributes = {
        "plughost.plugin_id": component.plugin_id,
        "plughost.runner_id": str(getattr(owner, "runner_id", "")),
    }
    with start_span("plughost.runner_call", attributes) as span:
        result = await owner.invoke(component.plugin_id, component.name, kwargs, timeout)
        if span is not None:
            span.set_attribute("plughost.runner_pid", int(getattr(owner, "pid", 0) or 0))
            span.set_attribute("plughost.success", result.success)
        return result
