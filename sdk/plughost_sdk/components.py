"""Collect and check a plugin's non-tool components; their wire form is MaiBot's.

A :class:`ComponentDeclaration` is one command, event handler, hook handler,
API, home card or message gateway of a plugin. Its wire form is exactly the dict MaiBot's
plugin SDK 2.16 reports from ``get_components()``::

    {"name": "weather", "type": "COMMAND",
     "metadata": {**decorator_metadata, "description": ..., "enabled": True,
                  "command_pattern": ..., "aliases": [...], "handler_name": "handle_weather"}}

so a plugin's own ``get_components()`` override, written for MaiBot, keeps
working, and the host reads the same fields MaiBot's host reads.

What does not live here: tools (:mod:`plughost_sdk.declarations`) and the
decorators (:mod:`plughost_sdk._components`).
"""

from __future__ import annotations

from collections.abc import Mapping
from copy import deepcopy
from dataclasses import dataclass
from typing import Any, Final

from plughost_sdk._components import COMPONENT_ATTRIBUTE, LLM_PROVIDER, ComponentMark
from plughost_sdk.errors import PluginDeclarationError
from plughost_sdk.types import ComponentType

__all__ = [
    "REFUSED_COMPONENT_TYPES",
    "SERVED_COMPONENT_TYPES",
    "TOOL_COMPONENT_TYPES",
    "ComponentDeclaration",
    "collect_components",
    "collect_llm_providers",
    "normalize_component_type",
]

SERVED_COMPONENT_TYPES: Final = frozenset(
    {
        ComponentType.COMMAND,
        ComponentType.EVENT_HANDLER,
        ComponentType.HOOK_HANDLER,
        ComponentType.API,
        ComponentType.HOME_CARD,
        ComponentType.MESSAGE_GATEWAY,
    }
)
"""Component types the host registers (tools and actions travel as tool declarations)."""

REFUSED_COMPONENT_TYPES: Final = {
    ComponentType.REPLY_EXTENSION.value: (
        "reply extensions plug into MaiBot's reply composer, which plughost does not host"
    ),
}
"""Component kinds a plugin may import but not declare, with the reason."""

TOOL_COMPONENT_TYPES: Final = frozenset({ComponentType.TOOL.value, ComponentType.ACTION.value})
"""Types reported by ``get_components()`` that travel as tool declarations instead."""


@dataclass(frozen=True, slots=True)
class ComponentDeclaration:
    """One non-tool component of a plugin."""

    name: str
    type: ComponentType
    handler_name: str
    metadata: dict[str, Any]

    def to_wire(self) -> dict[str, Any]:
        """The dict MaiBot's SDK reports for this component (a deep copy)."""
        return {"name": self.name, "type": self.type.value, "metadata": deepcopy(self.metadata)}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> ComponentDeclaration:
        """Read a component dict (from ``get_components()`` or the wire).

        Raises:
            ValueError: it is not a component dict, or of an unknown type.
        """
        name = data.get("name")
        metadata = data.get("metadata")
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"a component needs a non-empty 'name', got {name!r}")
        if not isinstance(metadata, Mapping):
            raise ValueError(f"component {name!r} needs a 'metadata' dict")
        kind = normalize_component_type(data.get("type"))
        handler = metadata.get("handler_name", "")
        return cls(name, ComponentType(kind), str(handler or ""), dict(metadata))


def normalize_component_type(value: Any) -> str:
    """The upper-case wire name of a component type; lower case is accepted, as MaiBot does.

    Raises:
        ValueError: an unknown type.
    """
    text = str(getattr(value, "value", value) or "").strip()
    upper = text.upper()
    if upper == "WORKFLOW_STEP":
        raise ValueError("component type WORKFLOW_STEP was removed; use HOOK_HANDLER")
    if upper not in ComponentType.__members__:
        raise ValueError(f"unknown component type {text!r}")
    return upper


def collect_components(cls: type) -> list[ComponentDeclaration]:
    """Collect every non-tool component declared on a plugin class (and its bases).

    Ordered by method name, as MaiBot's SDK reports them.

    Raises:
        PluginDeclarationError: a refused component type, or two components of
            one type sharing a name; the message names the class, the decorator,
            the component and the method.
    """
    found: list[ComponentDeclaration] = []
    seen: dict[tuple[str, str], str] = {}
    for attr_name, mark in sorted(_marks(cls).items()):
        if mark.kind == LLM_PROVIDER:
            continue  # not a component in MaiBot's SDK either: see collect_llm_providers
        where = f"plugin {cls.__name__}: @{mark.decorator}({mark.name!r}) on method {attr_name!r}"
        reason = REFUSED_COMPONENT_TYPES.get(str(mark.kind))
        if reason is not None:
            raise PluginDeclarationError(
                f"{where} is not supported by plughost: {reason}; remove it to run the rest of "
                "the plugin here"
            )
        if not mark.name:
            raise PluginDeclarationError(f"{where}: the component needs a name")
        key = (str(mark.kind), mark.name)
        if key in seen:
            raise PluginDeclarationError(
                f"{where}: the name {mark.name!r} is already used by method {seen[key]!r}; "
                "give each component of one kind its own name"
            )
        seen[key] = attr_name
        metadata = {**deepcopy(mark.metadata), **deepcopy(mark.fields), "handler_name": attr_name}
        found.append(ComponentDeclaration(mark.name, ComponentType(mark.kind), attr_name, metadata))
    return found


def collect_llm_providers(cls: type) -> list[dict[str, Any]]:
    """Every ``@LLMProvider`` of a plugin class, in the dict shape MaiBot's SDK reports.

    ``{"client_type", "name", "description", "version", "metadata": {..., "handler_name"}}``,
    ordered by method name.

    Raises:
        PluginDeclarationError: two providers share a client type.
    """
    found: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for attr_name, mark in sorted(_marks(cls).items()):
        if mark.kind != LLM_PROVIDER:
            continue
        client_type = str(mark.fields["client_type"])
        if client_type in seen:
            raise PluginDeclarationError(
                f"plugin {cls.__name__}: @LLMProvider({client_type!r}) on method {attr_name!r}: "
                f"method {seen[client_type]!r} already provides that client type; give each "
                "provider its own client_type"
            )
        seen[client_type] = attr_name
        metadata = {**deepcopy(mark.metadata), "handler_name": attr_name}
        found.append({**deepcopy(mark.fields), "name": mark.name, "metadata": metadata})
    return found


def _marks(cls: type) -> dict[str, ComponentMark]:
    found: dict[str, ComponentMark] = {}
    for klass in reversed(cls.__mro__):
        for attr_name, member in vars(klass).items():
            target = member.__func__ if isinstance(member, staticmethod | classmethod) else member
            mark = getattr(target, COMPONENT_ATTRIBUTE, None)
            if isinstance(mark, ComponentMark):
                found[attr_name] = mark
            else:
                found.pop(attr_name, None)
    return found
