"""Names the host keeps for its own tools: no plugin tool takes one, or a look-alike of one.

A model picks a tool by its name. A plugin tool called ``tool_search`` (or
``Tool-Search``, or ``tooI_search``) would receive the searches the model
meant for the host's own tool search, and one called like a built-in would
receive what the model meant for the bot. So the host's names win, whatever
order the providers were registered in:

- **Whose names.** A provider whose ``provider_type`` is ``plugin`` brings
  names chosen by third parties; every other provider (built-ins, MCP servers,
  an embedder's own) is the host's.
- **Which names.** :data:`RESERVED_NAMES` always, whether or not their tool is
  registered yet; every name a host provider holds (``held_names()``, when it
  has one: a :class:`~plughost.tools.builtin.BuiltinToolProvider` holds each of
  its tools, whatever the chat or the configuration lists); every name that
  begins as a host provider's held prefix does (``held_prefixes()``: an MCP
  server's ``mcp_SERVER_``, so a plugin cannot take the name of a tool of a
  server that is down and lists nothing); and every name a host provider lists.
  A prefix ends at a separator: it holds the names whose first words, read as
  look-alikes, are its words (``mcp_a_`` holds ``MCP-A-x`` and ``mcpa_x``, not
  ``mcp_analyze``, whose first word after ``mcp`` is another).
- **What happens.** A plugin tool whose name has the
  :func:`~plughost.tools.naming.lookalike_key` of a host name is refused: it
  is neither listed nor routed (:class:`~plughost.tools.registry.ToolRegistry`
  and the search catalogs apply the same :class:`HostNames`), and
  :class:`NameGuard` reports it once, as a :class:`NameConflict`, to its
  listeners (the host turns it into a ``tool.name_conflict`` event).

Between two plugins the first keeps a contested name and the later one is
offered under a qualified name (:func:`~plughost.tools.naming.resolve_names`);
the same :class:`NameConflict` reports it, with ``offered_as`` set.
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from plughost.events import EventKind, LifecycleEvent
from plughost.tools.naming import lookalike_key
from plughost.tools.provider import ToolProvider
from plughost_sdk.models import ToolSpec

__all__ = [
    "RESERVED_NAMES",
    "TOOL_SEARCH_NAME",
    "HostNames",
    "NameConflict",
    "NameGuard",
    "is_third_party",
    "reserved_name",
]

log = logging.getLogger(__name__)

TOOL_SEARCH_NAME: Final = "tool_search"
"""The name of the host's tool search built-in (:mod:`plughost.search.service`)."""
RESERVED_NAMES: Final = frozenset({TOOL_SEARCH_NAME})
"""Names kept for the host even before (or without) the tool that answers to them."""

_THIRD_PARTY = "plugin"
_RESERVED_HOLDER = "the host's tool search"
_MAX_REPORTED = 4096


def is_third_party(provider: ToolProvider) -> bool:
    """Whether ``provider`` brings names chosen by third parties (plugins)."""
    return provider.provider_type == _THIRD_PARTY


def reserved_name(name: str) -> str | None:
    """The entry of :data:`RESERVED_NAMES` that ``name`` is or looks like, else None."""
    key = lookalike_key(name)
    return next((held for held in sorted(RESERVED_NAMES) if lookalike_key(held) == key), None)


@dataclass(frozen=True, slots=True)
class NameConflict:
    """A plugin tool that did not get the name it asked for.

    Attributes:
        name: The name the tool asked for.
        tool_id: The tool's stable identity.
        plugin_id: The plugin that declared it.
        held: The name it is, or looks like, that someone else keeps.
        holder: Who keeps ``held``: a plugin id or a provider's description.
        offered_as: The name the tool is offered under instead; None when it is
            refused altogether (a name the host keeps).
    """

    name: str
    tool_id: str
    plugin_id: str
    held: str
    holder: str
    offered_as: str | None = None

    @property
    def message(self) -> str:
        """One sentence for the operator: the plugin, the tool, what happened, the fix."""
        alike = "is" if self.name == self.held else "looks like"
        what = f"tool {self.name} of plugin {self.plugin_id}"
        fix = f"rename the tool in plugin {self.plugin_id} (its @Tool name)"
        if self.offered_as is None:
            return (
                f"{what} is refused: its name {alike} {self.held}, which the host keeps "
                f"for {self.holder}; the model never sees it. To offer it, {fix}"
            )
        return (
            f"{what} is offered as {self.offered_as}: its name {alike} {self.held}, which "
            f"{self.holder} had first. To offer it under its own name, {fix}"
        )

    def to_event(self) -> LifecycleEvent:
        """The ``tool.name_conflict`` event that tells the operator."""
        details: dict[str, Any] = {
            "tool": self.name,
            "tool_id": self.tool_id,
            "held": self.held,
            "holder": self.holder,
            "offered_as": self.offered_as,
        }
        return LifecycleEvent(
            EventKind.TOOL_NAME_CONFLICT,
            self.message,
            plugin_id=self.plugin_id or None,
            details=details,
        )


class HostNames:
    """The names the host's providers keep, by look-alike key; built for one merge."""

    def __init__(self) -> None:
        self._held: dict[str, tuple[str, str]] = {}  # key -> (name, holder)
        self._prefixes: dict[str, tuple[str, str]] = {}  # key, no separator -> (prefix..., holder)

    @classmethod
    def of(
        cls, providers: Sequence[ToolProvider], listed: Sequence[Iterable[str] | None]
    ) -> HostNames:
        """The host names of ``providers``, given the names each listed (None: failed)."""
        names = cls()
        for provider, listing in zip(providers, listed, strict=True):
            if is_third_party(provider):
                continue
            holder = f"its {provider.provider_type} tool (provider {provider.provider_name})"
            for name in (*_held_names(provider), *(listing or ())):
                names._held.setdefault(lookalike_key(name), (name, holder))
            for prefix in _held_names(provider, "held_prefixes"):
                names._prefixes.setdefault(lookalike_key(prefix), (f"{prefix}...", holder))
        for name in sorted(RESERVED_NAMES):
            names._held.setdefault(lookalike_key(name), (name, _RESERVED_HOLDER))
        return names

    def holder(self, name: str) -> tuple[str, str] | None:
        """``(held name, holder)`` when ``name`` is or looks like a host name."""
        key = lookalike_key(name)
        found = self._held.get(key)
        if found is None and self._prefixes:
            longest = max(map(len, self._prefixes))
            found = next(
                (self._prefixes[k] for k in _leading_keys(name, longest) if k in self._prefixes),
                None,
            )
        return found

    def conflict(self, spec: ToolSpec) -> NameConflict | None:
        """Why a plugin's tool may not have its name, or None when it may."""
        found = self.holder(spec.name)
        if found is None:
            return None
        plugin_id = spec.metadata.get("plugin_id")
        return NameConflict(
            name=spec.name,
            tool_id=spec.tool_id,
            plugin_id=plugin_id if isinstance(plugin_id, str) else spec.provider_name,
            held=found[0],
            holder=found[1],
        )


def _leading_keys(name: str, longest: int) -> Iterator[str]:
    """The look-alike keys of ``name``'s leading words, each followed by more of the name.

    ``mcp_files_read`` gives the keys of ``mcp`` and ``mcp_files``: a held prefix
    matches where a separator follows it, and only there (``mcp_a_`` does not
    hold ``mcp_analyze``). Keys stop once they could no longer be as short as
    ``longest`` (a key folds two characters into one at most), so a plugin's
    name of a hundred thousand words costs one pass over it, not one per word.
    """
    folded = unicodedata.normalize("NFKC", name).casefold()
    words = "".join(char if char.isalnum() else " " for char in folded).split()
    joined = ""
    for word in words[:-1]:
        joined += word
        if len(joined) > 2 * longest:
            return
        yield lookalike_key(joined)


def _held_names(provider: ToolProvider, method: str = "held_names") -> list[str]:
    """What ``provider.held_names()`` (or another ``method``) says; a failing one holds none."""
    held = getattr(provider, method, None)
    if not callable(held):
        return []
    try:
        return [name for name in held() if isinstance(name, str) and name]
    except Exception:
        log.exception("%s() failed provider=%s", method, provider.provider_name)
        return []


class NameGuard:
    """Refuses plugin tools that take a host name, and reports each one once."""

    def __init__(self) -> None:
        self._listeners: list[Callable[[NameConflict], None]] = []
        self._reported: set[tuple[str, str, str]] = set()

    def add_listener(self, listener: Callable[[NameConflict], None]) -> None:
        """Call ``listener`` with each conflict the first time it is found."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[NameConflict], None]) -> None:
        """Stop calling ``listener``; removing an unknown one does nothing."""
        if listener in self._listeners:
            self._listeners.remove(listener)

    def admits(self, provider: ToolProvider, spec: ToolSpec, host: HostNames) -> bool:
        """Whether ``provider`` may offer ``spec`` under its name; a refusal is reported."""
        if not is_third_party(provider):
            return True
        conflict = host.conflict(spec)
        if conflict is None:
            return True
        self.report(conflict)
        return False

    def report(self, conflict: NameConflict) -> None:
        """Tell the listeners about ``conflict``, unless it was told already."""
        seen = (conflict.tool_id, conflict.held, conflict.offered_as or "")
        if seen in self._reported:
            return
        if len(self._reported) >= _MAX_REPORTED:  # a bound, whatever plugins declare
            self._reported.clear()
        self._reported.add(seen)
        log.warning("%s", conflict.message)
        for listener in list(self._listeners):
            try:
                listener(conflict)
            except Exception:
                log.exception("name conflict listener failed tool=%s", conflict.tool_id)
