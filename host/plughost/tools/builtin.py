"""Built-in tools: trusted handlers that run in the host process.

An embedding runtime adds its own capabilities (``reply``, ``wait``,
``finish``, memory queries...) as :class:`BuiltinTool` entries of a
:class:`BuiltinToolProvider` and registers the provider with the
:class:`~plughost.tools.registry.ToolRegistry` like any other source. Because they
are trusted code, built-ins skip the runner: the handler is awaited directly
and its return value or exception is normalized by
:mod:`plughost_sdk.results`, exactly as a plugin's would be.

Each tool carries the facts a reasoning loop filters by:

- ``phase``: ``timing`` (pacing decisions), ``action`` (the main loop) or
  ``both``; copied into ``spec.metadata["phase"]`` and used by
  :meth:`BuiltinToolProvider.tools`;
- ``visibility``: ``visible``, ``deferred`` or ``hidden``, copied into
  ``spec.metadata["visibility"]``;
- ``enabled_when``: a predicate over the provider's configuration; a tool
  whose predicate is false (or raises) is not listed;
- ``chat_scope``: ``group`` tools are listed only in group chats, ``private``
  tools only outside them; with no availability context, every tool is listed.

What does not live here: plugin tools (they run in runners) and the
reasoning loop that decides which phase is current.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from plughost.tools.arguments import ArgumentErrors, prepare_arguments
from plughost_sdk.errors import ToolError
from plughost_sdk.models import (
    ToolAvailabilityContext,
    ToolExecutionContext,
    ToolExecutionResult,
    ToolInvocation,
    ToolSpec,
)
from plughost_sdk.results import normalize_exception, normalize_result

if TYPE_CHECKING:
    from plughost.tools.registry import ToolRegistry

__all__ = ["BuiltinHandler", "BuiltinTool", "BuiltinToolProvider"]

log = logging.getLogger(__name__)

BuiltinHandler = Callable[[dict[str, Any], ToolExecutionContext], Awaitable[Any]]
"""A built-in's handler: the checked arguments and the call's context."""

_PHASES = ("timing", "action", "both")


@dataclass(frozen=True, slots=True)
class BuiltinTool:
    """One built-in tool: its spec, its handler and the facts the engine filters by."""

    spec: ToolSpec
    handler: BuiltinHandler
    phase: Literal["timing", "action", "both"] = "action"
    visibility: Literal["visible", "deferred", "hidden"] = "visible"
    enabled_when: Callable[[Mapping[str, Any]], bool] | None = None
    chat_scope: Literal["all", "group", "private"] = "all"

    @property
    def name(self) -> str:
        """The tool's model-facing name."""
        return self.spec.name


class BuiltinToolProvider:
    """A ToolProvider over in-process handlers, in the order they were added."""

    provider_type = "builtin"

    def __init__(
        self,
        tools: Iterable[BuiltinTool] = (),
        *,
        provider_name: str = "builtin",
        config: Mapping[str, Any] | None = None,
    ) -> None:
        """Create the provider.

        Args:
            tools: The initial tools; names must be distinct.
            provider_name: The provider's name in the registry.
            config: What ``enabled_when`` predicates are evaluated against.

        Raises:
            ValueError: If two initial tools share a name.
        """
        self.provider_name = provider_name
        self._config: Mapping[str, Any] = MappingProxyType(dict(config or {}))
        self._tools: dict[str, tuple[BuiltinTool, ToolSpec]] = {}
        self._registry: ToolRegistry | None = None
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"built-in tool {tool.name!r} is given twice")
            self._tools[tool.name] = (tool, self._listed_spec(tool))

    @property
    def config(self) -> Mapping[str, Any]:
        """The configuration ``enabled_when`` predicates see (read-only)."""
        return self._config

    def set_config(self, config: Mapping[str, Any]) -> None:
        """Replace the configuration and tell the registry the tool set may have changed."""
        self._config = MappingProxyType(dict(config))
        self._notify()

    def bind_registry(self, registry: ToolRegistry) -> None:
        """Remember the registry to notify when tools are added or removed."""
        self._registry = registry

    def add(self, tool: BuiltinTool) -> None:
        """Add a tool; one with the same name is replaced at its position."""
        self._tools[tool.name] = (tool, self._listed_spec(tool))
        self._notify()

    def remove(self, name: str) -> bool:
        """Remove a tool by name; False if there was none."""
        if self._tools.pop(name, None) is None:
            return False
        self._notify()
        return True

    def tools(self, phase: str | None = None) -> list[BuiltinTool]:
        """Return the tools in order; with ``phase``, those usable in it.

        ``timing`` and ``action`` include tools marked ``both``; ``both``
        returns only the tools marked ``both``.

        Raises:
            ValueError: If ``phase`` is not ``timing``, ``action`` or ``both``.
        """
        if phase is not None and phase not in _PHASES:
            raise ValueError(f"unknown phase {phase!r}; use one of {', '.join(_PHASES)}")
        return [
            tool
            for tool, _ in self._tools.values()
            if phase is None or tool.phase == phase or (tool.phase == "both" and phase != "both")
        ]

    def held_names(self) -> list[str]:
        """Every tool's name, listed or not: no plugin tool may take one, or a look-alike."""
        return list(self._tools)

    async def list_tools(self, context: ToolAvailabilityContext | None = None) -> list[ToolSpec]:
        """Return the specs of the tools enabled by the config and in scope for ``context``."""
        return [
            spec
            for tool, spec in self._tools.values()
            if self._enabled(tool) and _in_scope(tool, context)
        ]

    async def invoke(
        self, invocation: ToolInvocation, context: ToolExecutionContext | None = None
    ) -> ToolExecutionResult:
        """Await the tool's handler and normalize what it returned or raised."""
        name = invocation.tool_name
        entry = self._tools.get(name)
        if entry is None:
            message = f"Tool not found: {name} (provider {self.provider_name} has no such tool)"
            return ToolExecutionResult.failure(name, message, "tool_not_found")
        # The registry merged them already; a direct call gets the same rule here.
        context = invocation.execution_context(context) or ToolExecutionContext()
        arguments = _arguments(invocation, entry[1])
        if isinstance(arguments, ToolExecutionResult):
            return arguments
        try:
            value = await entry[0].handler(arguments, context)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if not isinstance(exc, ToolError):
                log.exception("built-in tool raised tool=%s", name)
            return normalize_exception(name, exc)
        return normalize_result(name, value)

    async def close(self) -> None:
        """Nothing to release: built-ins hold no connections or processes."""

    def _listed_spec(self, tool: BuiltinTool) -> ToolSpec:
        """The spec as listed: built once per add, so the registry sees a stable object."""
        metadata = {**tool.spec.metadata, "visibility": tool.visibility, "phase": tool.phase}
        return tool.spec.model_copy(
            update={
                "provider_name": self.provider_name,
                "provider_type": self.provider_type,
                "tool_id": tool.spec.tool_id or f"builtin:{self.provider_name}:{tool.name}",
                "metadata": metadata,
            }
        )

    def _enabled(self, tool: BuiltinTool) -> bool:
        if tool.enabled_when is None:
            return True
        try:
            return bool(tool.enabled_when(self._config))
        except Exception:
            log.exception("enabled_when failed; tool hidden tool=%s", tool.name)
            return False

    def _notify(self) -> None:
        if self._registry is not None:
            self._registry.notify_changed(self.provider_name)


def _arguments(invocation: ToolInvocation, spec: ToolSpec) -> dict[str, Any] | ToolExecutionResult:
    """The handler's arguments: a copy of the registry's checked dict, or parsed here.

    A JSON string only arrives when the provider is called directly, not
    through the registry, so it is checked here the same way.
    """
    if not isinstance(invocation.arguments, str):
        return dict(invocation.arguments)
    prepared = prepare_arguments(invocation.arguments, spec.parameters_schema)
    if isinstance(prepared, ArgumentErrors):
        return prepared.failure(spec.name)
    return prepared.values


def _in_scope(tool: BuiltinTool, context: ToolAvailabilityContext | None) -> bool:
    if context is None or tool.chat_scope == "all":
        return True
    return context.is_group_chat == (tool.chat_scope == "group")
