"""ComponentQueryService: the read-only ToolSpec view over the ComponentRegistry.

It gives each plugin tool its model-facing name (see :mod:`plughost.tools.naming`:
unique names are kept; of the plugins that declare one name, or names a model
could mistake for one another, the one whose tool the tool layer saw first
keeps it while it stays loaded, reloads included (a neighbour's reload never
takes it), and the others are qualified with their plugin's name and reported
to the conflict listeners as a :class:`~plughost.tools.reserved.NameConflict`),
filters by availability, and builds a call: the model's arguments merged with
the execution context (``stream_id``, ``group_id``, ``user_id``, ``platform``,
``message``...) that plugin handlers receive as keyword arguments.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from plughost.plugins.components import ComponentRegistry, ToolComponent
from plughost.tools.naming import NameRequest, lookalike_key, resolve_names, sanitize_name
from plughost.tools.reserved import RESERVED_NAMES, NameConflict
from plughost_sdk.models import ToolAvailabilityContext, ToolExecutionContext, ToolSpec

__all__ = ["PLUGIN_PROVIDER_NAME", "ComponentQueryService"]

log = logging.getLogger(__name__)

PLUGIN_PROVIDER_NAME = "plugins"

_CONTEXT_FIELDS = ("session_id", "stream_id", "group_id", "user_id", "platform")
_MAX_WARNED = 4096


class ComponentQueryService:
    """Specs, name resolution and call building for plugin tools."""

    def __init__(self, components: ComponentRegistry) -> None:
        self._components = components
        self._version = -1
        self._refreshes = 0
        # tool_id -> the refresh that first saw it; kept while the tool stays registered,
        # so a reload (one atomic replace) keeps its place and a returning plugin does not.
        self._first_seen: dict[str, int] = {}
        self._warned: set[tuple[str, str]] = set()
        self._conflict_listeners: list[Callable[[NameConflict], None]] = []
        self._specs: list[tuple[ToolComponent, ToolSpec]] = []
        self._by_name: dict[str, ToolComponent] = {}

    def specs(self, context: ToolAvailabilityContext | None = None) -> list[ToolSpec]:
        """Specs of the tools available in ``context`` (hidden ones included, marked)."""
        self._refresh()
        return [
            spec
            for component, spec in self._specs
            if self._components.is_available(component, context)
        ]

    def resolve(self, name: str) -> ToolComponent | None:
        """The component behind a model-facing name (or a ``plugin_id.tool`` full name)."""
        self._refresh()
        return self._by_name.get(name) or self._components.get(name)

    def add_conflict_listener(self, listener: Callable[[NameConflict], None]) -> None:
        """Call ``listener`` once for each tool offered under another name than it asked for."""
        self._conflict_listeners.append(listener)

    def model_name(self, component: ToolComponent) -> str:
        """The model-facing name of ``component``."""
        self._refresh()
        for candidate, spec in self._specs:
            if candidate is component:
                return spec.name
        return component.name

    def _refresh(self) -> None:
        if self._version == self._components.version:
            return
        components = self._components.all()
        self._refreshes += 1
        present = {_tool_id(c) for c in components}
        self._first_seen = {k: v for k, v in self._first_seen.items() if k in present}
        for tool_id in sorted(present):
            self._first_seen.setdefault(tool_id, self._refreshes)
        # Oldest first; tools first seen together keep all()'s plugin-id order (stable sort).
        claimants = sorted(components, key=lambda c: self._first_seen[_tool_id(c)])
        names = resolve_names(
            [
                NameRequest(
                    tool_id=_tool_id(c), preferred=c.name, qualifier=c.plugin_id.rsplit(".", 1)[-1]
                )
                for c in claimants
            ],
            reserved=RESERVED_NAMES,
        )
        self._warn_renamed(claimants, names)
        previous = {id(c): spec for c, spec in self._specs}
        self._specs = [(c, _reuse(previous.get(id(c)), c, names[_tool_id(c)])) for c in components]
        self._by_name = {spec.name: c for c, spec in self._specs}
        self._version = self._components.version

    def _warn_renamed(self, components: list[ToolComponent], names: dict[str, str]) -> None:
        holders = {lookalike_key(names[_tool_id(c)]): c for c in components}
        for component in components:
            name = names[_tool_id(component)]
            wanted = sanitize_name(component.name)
            if name == wanted or (_tool_id(component), name) in self._warned:
                continue
            if len(self._warned) >= _MAX_WARNED:
                self._warned.clear()
            self._warned.add((_tool_id(component), name))
            holder = holders.get(lookalike_key(wanted))
            conflict = NameConflict(
                name=wanted,
                tool_id=_tool_id(component),
                plugin_id=component.plugin_id,
                held=names[_tool_id(holder)] if holder is not None else wanted,
                holder=f"plugin {holder.plugin_id}" if holder is not None else "another tool",
                offered_as=name,
            )
            log.warning("%s", conflict.message)
            for listener in list(self._conflict_listeners):
                try:
                    listener(conflict)
                except Exception:
                    log.exception("name conflict listener failed tool=%s", conflict.tool_id)

    def build_arguments(
        self,
        component: ToolComponent,
        arguments: dict[str, Any],
        context: ToolExecutionContext | None,
        *,
        call_id: str = "",
    ) -> dict[str, Any]:
        """The handler's kwargs: the arguments, then the execution context on top.

        Context fields that are set win over same-named arguments, because the
        host knows which conversation it is in and the model may guess wrong.
        ``stream_id`` is always there (``""`` outside a chat), and ``chat_id`` repeats it
        (MaiBot's name for it) unless an argument has that name; the context's
        ``metadata`` comes as ``metadata`` unless the tool declares an argument
        of that name. Legacy actions also get ``action_data`` (the arguments)
        and ``reasoning``.
        """
        kwargs = dict(arguments)
        kwargs.setdefault("stream_id", "")
        if context is not None:
            for name in _CONTEXT_FIELDS:
                value = getattr(context, name)
                if value:
                    kwargs[name] = value
            if context.metadata and "metadata" not in component.parameters_schema.get(
                "properties", {}
            ):
                kwargs["metadata"] = dict(context.metadata)
            if context.is_group_chat:
                kwargs["is_group_chat"] = True
            if context.message is not None:
                kwargs["message"] = context.message
            if context.reasoning:
                kwargs["reasoning"] = context.reasoning
        if kwargs.get("stream_id"):
            kwargs.setdefault("chat_id", kwargs["stream_id"])  # MaiBot's name for the stream
        if call_id:
            kwargs["call_id"] = call_id
        if component.legacy_action:
            kwargs["action_data"] = dict(arguments)
            kwargs.setdefault("reasoning", "")
        return kwargs


def _reuse(spec: ToolSpec | None, component: ToolComponent, name: str) -> ToolSpec:
    """Keep the spec object of an unchanged component, so consumers can diff by identity."""
    if spec is not None and spec.name == name:
        return spec
    return _spec(component, name)


def _tool_id(component: ToolComponent) -> str:
    return f"plugin:{component.plugin_id}:{component.name}"


def _spec(component: ToolComponent, name: str) -> ToolSpec:
    metadata = {
        **component.metadata,
        "plugin_id": component.plugin_id,
        "full_name": component.full_name,
        "visibility": component.visibility,
        "brief_description": component.brief_description,
        "detailed_description": component.detailed_description,
        "component_type": component.component_type,
    }
    return ToolSpec(
        name=name,
        description=component.description,
        parameters_schema=component.parameters_schema,
        provider_name=PLUGIN_PROVIDER_NAME,
        provider_type="plugin",
        metadata=metadata,
        tool_id=_tool_id(component),
    )
