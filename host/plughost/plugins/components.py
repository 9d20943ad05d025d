"""ComponentRegistry: every plugin's components, registered and replaced one plugin at a time.

Tools are :class:`ToolComponent`; commands, event handlers, hook handlers, APIs
and home cards are :class:`~plughost.plugins.component_info.PluginComponent`.
A plugin's components, tools and the rest together, are swapped as one set
under one version bump, so a reader never sees half a plugin (a reload shows
the old set or the new one: old commands with old hooks, or new with new).
Each plugin has an explicit owner (the runner serving it), swapped in the same
step. Operator state (a tool disabled globally or for a session) survives a
reload for tools that still exist and is pruned for tools that are gone; a
whole plugin disabled stays disabled through reloads and restarts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from plughost.plugins.component_info import ComponentKind, PluginComponent
from plughost_sdk.models import ToolAvailabilityContext, ToolExecutionResult

__all__ = ["ComponentRegistry", "ToolComponent", "ToolInvoker"]

log = logging.getLogger(__name__)

ChatScope = Literal["all", "group", "private"]


class ToolInvoker(Protocol):
    """Whatever executes a plugin's tools (a runner supervisor)."""

    async def invoke(
        self, plugin_id: str, tool: str, arguments: dict[str, Any], timeout: float
    ) -> ToolExecutionResult:
        """Run one tool call and return its result; never raises."""
        ...


@dataclass(frozen=True, slots=True)
class ToolComponent:
    """One tool of one plugin, as its runner declared it."""

    plugin_id: str
    name: str
    description: str
    brief_description: str
    parameters_schema: dict[str, Any]
    visibility: str = "deferred"
    metadata: dict[str, Any] = field(default_factory=dict)
    legacy_action: bool = False
    detailed_description: str = ""
    """The SDK's detailed text, parameter list included; part of ``description``
    for a plughost plugin, kept apart (never sent to the model) for a MaiBot one."""

    @property
    def full_name(self) -> str:
        """``plugin_id.tool``: unique across the host."""
        return f"{self.plugin_id}.{self.name}"

    @property
    def component_type(self) -> Literal["tool", "action"]:
        """``action`` for a legacy action converted to a tool."""
        return "action" if self.legacy_action else "tool"

    @property
    def chat_scope(self) -> ChatScope:
        """Where the tool is offered: all chats, group chats or private chats."""
        scope = self.metadata.get("chat_scope", "all")
        return scope if scope in ("group", "private") else "all"

    @classmethod
    def from_wire(cls, plugin_id: str, data: dict[str, Any]) -> ToolComponent:
        """Build from a declaration as the runner reported it."""
        return cls(
            plugin_id=plugin_id,
            name=str(data["name"]),
            description=str(data.get("description", "")),
            brief_description=str(data.get("brief_description", "")),
            parameters_schema=dict(data.get("parameters_schema") or {}),
            visibility=str(data.get("visibility", "deferred")),
            metadata=dict(data.get("metadata") or {}),
            legacy_action=bool(data.get("legacy_action", False)),
            detailed_description=str(data.get("detailed_description", "")),
        )


class ComponentRegistry:
    """Plugins' tool components, indexed by full name, by plugin and by type."""

    def __init__(self) -> None:
        self._by_plugin: dict[str, tuple[ToolComponent, ...]] = {}
        self._others: dict[str, tuple[PluginComponent, ...]] = {}
        self._by_full_name: dict[str, ToolComponent] = {}
        self._owners: dict[str, ToolInvoker] = {}
        self._content: dict[str, dict[str, Any]] = {}
        self._disabled: set[str] = set()
        self._disabled_plugins: set[str] = set()
        self._session_disabled: dict[str, set[str]] = {}
        self._listeners: list[Callable[[], None]] = []
        self.version = 0

    def replace_plugin(
        self,
        plugin_id: str,
        components: Iterable[ToolComponent],
        owner: ToolInvoker,
        others: Iterable[PluginComponent] = (),
        content: dict[str, Any] | None = None,
    ) -> None:
        """Register ``plugin_id``'s tools, other components and owner, replacing all at once.

        ``content`` is the plugin's load report, whose ``resources`` and ``prompts``
        are swapped in the same step (see :mod:`plughost.plugins.content`).

        Raises:
            ValueError: two components of one kind share a name, or one belongs to
                another plugin.
        """
        new = tuple(components)
        new_others = tuple(others)
        names = [c.name for c in new]
        if len(set(names)) != len(names):
            raise ValueError(f"plugin {plugin_id} declares a tool name twice: {names}")
        keys = [c.key for c in new_others]
        if len(set(keys)) != len(keys):
            raise ValueError(f"plugin {plugin_id} declares a component twice: {keys}")
        owners = {c.plugin_id for c in new} | {c.plugin_id for c in new_others}
        if owners - {plugin_id}:
            raise ValueError(f"components passed for {plugin_id} belong to another plugin")
        by_full_name = {k: v for k, v in self._by_full_name.items() if v.plugin_id != plugin_id}
        by_full_name.update((c.full_name, c) for c in new)
        by_plugin = dict(self._by_plugin)
        by_plugin[plugin_id] = new
        others_by_plugin = dict(self._others)
        others_by_plugin[plugin_id] = new_others
        # Three plain assignments with no await between them: no reader sees a mix.
        self._by_plugin, self._by_full_name = by_plugin, by_full_name
        self._others = others_by_plugin
        self._owners[plugin_id] = owner
        self._content[plugin_id] = dict(content or {})
        self._prune_state()
        self._changed()

    def remove_plugin(self, plugin_id: str) -> bool:
        """Remove every component and the owner of ``plugin_id``; idempotent."""
        if plugin_id not in self._by_plugin:
            return False
        self._by_plugin = {k: v for k, v in self._by_plugin.items() if k != plugin_id}
        self._by_full_name = {
            k: v for k, v in self._by_full_name.items() if v.plugin_id != plugin_id
        }
        self._others = {k: v for k, v in self._others.items() if k != plugin_id}
        self._owners.pop(plugin_id, None)
        self._content.pop(plugin_id, None)
        self._prune_state()
        self._changed()
        return True

    def _prune_state(self) -> None:
        live = set(self._by_full_name) | {c.key for group in self._others.values() for c in group}
        self._disabled &= live
        self._session_disabled = {k: v for k, v in self._session_disabled.items() if k in live}

    def get(self, full_name: str) -> ToolComponent | None:
        """The component called ``plugin_id.tool``, if registered."""
        return self._by_full_name.get(full_name)

    def by_plugin(self, plugin_id: str) -> tuple[ToolComponent, ...]:
        """A plugin's components in declaration order."""
        return self._by_plugin.get(plugin_id, ())

    def by_type(self, component_type: Literal["tool", "action"]) -> list[ToolComponent]:
        """All components of one type, in :meth:`all` order."""
        return [c for c in self.all() if c.component_type == component_type]

    def all(self) -> list[ToolComponent]:
        """Every component, ordered by plugin id then declaration order (stable)."""
        by_plugin = self._by_plugin
        return [c for plugin_id in sorted(by_plugin) for c in by_plugin[plugin_id]]

    def components(self, kind: ComponentKind | None = None) -> list[PluginComponent]:
        """Non-tool components (of one kind), by plugin id then the order the plugin reported."""
        others = self._others
        return [
            c
            for plugin_id in sorted(others)
            for c in others[plugin_id]
            if kind is None or c.kind == kind
        ]

    def components_of(self, plugin_id: str) -> tuple[PluginComponent, ...]:
        """A plugin's non-tool components."""
        return self._others.get(plugin_id, ())

    def replace_dynamic(self, plugin_id: str, components: Iterable[PluginComponent]) -> None:
        """Replace a loaded plugin's dynamic components (``metadata.dynamic``), keeping the rest.

        Raises:
            KeyError: the plugin is not loaded.
            ValueError: a component of another plugin, or a key used twice.
        """
        if plugin_id not in self._others:
            raise KeyError(f"plugin {plugin_id} is not loaded")
        dynamic = tuple(components)
        kept = tuple(c for c in self._others[plugin_id] if not c.metadata.get("dynamic"))
        keys = [c.key for c in (*kept, *dynamic)]
        if len(set(keys)) != len(keys):
            raise ValueError(f"plugin {plugin_id} would declare a component twice: {keys}")
        if any(c.plugin_id != plugin_id for c in dynamic):
            raise ValueError(f"components passed for {plugin_id} belong to another plugin")
        self._others = {**self._others, plugin_id: kept + dynamic}
        self._prune_state()
        self._changed()

    def set_component_enabled(self, key: str, enabled: bool) -> None:
        """Enable or disable one non-tool component; ``key`` is ``KIND:plugin_id.name``.

        Raises:
            KeyError: no such component.
        """
        if not any(c.key == key for group in self._others.values() for c in group):
            raise KeyError(f"no component {key!r}; keys look like 'COMMAND:plugin_id.name'")
        if enabled:
            self._disabled.discard(key)
        else:
            self._disabled.add(key)
        self._changed()

    def set_component_enabled_for_session(self, key: str, session_id: str, enabled: bool) -> None:
        """Enable or disable one non-tool component in one chat session only.

        Raises:
            KeyError: no such component.
        """
        if not any(c.key == key for group in self._others.values() for c in group):
            raise KeyError(f"no component {key!r}; keys look like 'COMMAND:plugin_id.name'")
        sessions = self._session_disabled.setdefault(key, set())
        if enabled:
            sessions.discard(session_id)
        else:
            sessions.add(session_id)
        self._changed()

    def disabled_in_session(self, component: PluginComponent, session_id: str) -> bool:
        """Whether the operator switched ``component`` off in chat session ``session_id``."""
        return bool(session_id) and session_id in self._session_disabled.get(component.key, ())

    def component_enabled(self, component: PluginComponent) -> bool:
        """Whether the plugin declared it enabled and the operator has not disabled it."""
        return (
            component.declared_enabled
            and component.key not in self._disabled
            and component.plugin_id not in self._disabled_plugins
        )

    def plugins(self) -> list[str]:
        """Ids of the registered plugins, sorted."""
        return sorted(self._by_plugin)

    def owner(self, plugin_id: str) -> ToolInvoker | None:
        """What executes ``plugin_id``'s tools."""
        return self._owners.get(plugin_id)

    def content(self, plugin_id: str) -> dict[str, Any]:
        """The load report of ``plugin_id`` (its ``resources`` and ``prompts``), or ``{}``."""
        return self._content.get(plugin_id, {})

    def set_enabled(self, full_name: str, enabled: bool) -> None:
        """Enable or disable one tool everywhere.

        Raises:
            KeyError: no such component.
        """
        if full_name not in self._by_full_name:
            raise KeyError(f"no tool {full_name!r}; full names look like 'plugin_id.tool'")
        if enabled:
            self._disabled.discard(full_name)
        else:
            self._disabled.add(full_name)
        self._changed()

    def set_enabled_for_session(self, full_name: str, session_id: str, enabled: bool) -> None:
        """Enable or disable one tool in one session only.

        Raises:
            KeyError: no such component.
        """
        if full_name not in self._by_full_name:
            raise KeyError(f"no tool {full_name!r}; full names look like 'plugin_id.tool'")
        sessions = self._session_disabled.setdefault(full_name, set())
        if enabled:
            sessions.discard(session_id)
        else:
            sessions.add(session_id)
        self._changed()

    def set_plugin_enabled(self, plugin_id: str, enabled: bool) -> None:
        """Enable or disable every tool of one plugin, now and after its reloads and restarts.

        Raises:
            KeyError: no such plugin is registered.
        """
        if plugin_id not in self._by_plugin:
            raise KeyError(f"no plugin {plugin_id!r} is loaded")
        if enabled:
            self._disabled_plugins.discard(plugin_id)
        else:
            self._disabled_plugins.add(plugin_id)
        self._changed()

    def is_plugin_enabled(self, plugin_id: str) -> bool:
        """Whether the operator left ``plugin_id`` enabled (loaded or not)."""
        return plugin_id not in self._disabled_plugins

    def is_enabled(self, full_name: str) -> bool:
        """Whether the tool is enabled globally."""
        return full_name in self._by_full_name and full_name not in self._disabled

    def is_available(
        self, component: ToolComponent, context: ToolAvailabilityContext | None
    ) -> bool:
        """Whether ``component`` may be offered and called in ``context``."""
        if component.full_name in self._disabled or component.plugin_id in self._disabled_plugins:
            return False
        platforms = component.metadata.get("platforms")
        if platforms and (context is None or context.platform.strip().lower() not in platforms):
            return False  # MaiBot's @Tool(platforms=...): only where the chat's platform is known
        if not _session_allowed(component.metadata.get("allowed_session"), context):
            return False
        if context is None:
            return True
        if context.session_id and context.session_id in self._session_disabled.get(
            component.full_name, ()
        ):
            return False
        scope = component.chat_scope
        return scope == "all" or (scope == "group") == context.is_group_chat

    def add_listener(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` after every change."""
        self._listeners.append(listener)

    def _changed(self) -> None:
        self.version += 1
        for listener in list(self._listeners):
            try:
                listener()
            except Exception:
                log.exception("component registry listener failed")


def _session_allowed(allowed: Any, context: ToolAvailabilityContext | None) -> bool:
    """MaiBot's ``allowed_session``: a non-empty list limits a tool to those chats.

    A chat matches by its session or stream id, its group id, or ``platform:group_id``.
    """
    if not allowed:
        return True
    if context is None:
        return False
    candidates = {context.session_id, context.stream_id, context.group_id}
    if context.platform and context.group_id:
        candidates.add(f"{context.platform}:{context.group_id}")
    return bool({str(a).strip() for a in allowed} & (candidates - {""}))
