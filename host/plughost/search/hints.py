"""The ``tool_hint`` reminder: what this conversation could still load through ``tool_search``.

A model that only sees core tools and ``tool_search`` does not know what a
search could find, so it may give up where a deferred tool would have helped.
A :class:`ToolHint` names the deferred tools the conversation has not
discovered yet: their names while there are few, else their categories (the
plugin, MCP server or provider they come from) with how many tools each holds.

It is reference material, not a turn of the conversation: the message it
renders (:meth:`ToolHint.message`) is a
:class:`~plughost.tools.messages.Tagged` dict with ``source`` ``"tool_hint"``
and ``count_in_context`` False, so an embedder that bounds its history by a
number of messages leaves it out of the count
(:func:`~plughost.tools.messages.context_count`). Send it as the last message
before the model's turn; it changes only when discoveries or the catalog
change, and it sits after the tools, so the cached prompt prefix is kept.

What does not live here: deciding whether search is on
(:class:`~plughost.search.service.ToolSearchService`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Container
from dataclasses import dataclass
from typing import Any, Literal

from plughost.search.catalog import ToolCatalog
from plughost.tools.messages import Tagged
from plughost_sdk.models import ToolSpec

__all__ = ["MAX_HINT_NAMES", "ToolHint", "build_tool_hint"]

MAX_HINT_NAMES = 30
"""Up to this many undiscovered tools are named; beyond it, categories are listed."""


@dataclass(frozen=True, slots=True)
class ToolHint:
    """A reminder of the deferred tools a conversation has not discovered.

    Attributes:
        names: The undiscovered tools, sorted, when they are few; else empty.
        categories: ``(category, tool count)`` pairs, sorted, when there are many.
        text: The reminder as the model reads it.
    """

    names: tuple[str, ...]
    categories: tuple[tuple[str, int], ...]
    text: str

    kind = "tool_hint"
    count_in_context = False

    def message(self, shape: Literal["openai", "anthropic"] = "openai") -> Tagged:
        """The reminder as a ``user`` message of Chat Completions or Messages shape."""
        content: Any = self.text if shape == "openai" else [{"type": "text", "text": self.text}]
        return Tagged(
            {"role": "user", "content": content},
            source="tool_hint",
            message_id="tool_hint",
            count_in_context=False,
        )


def build_tool_hint(
    catalog: ToolCatalog,
    discovered: Container[str],
    *,
    search_tool: str = "tool_search",
    max_names: int = MAX_HINT_NAMES,
) -> ToolHint | None:
    """The hint for a conversation that discovered ``discovered``; None if nothing is left."""
    left = [spec for spec in catalog.deferred if spec.name not in discovered]
    if not left:
        return None
    if len(left) <= max_names:
        names = tuple(sorted(spec.name for spec in left))
        text = (
            f"Tools you can load with {search_tool} (not loaded yet): {', '.join(names)}. "
            f"Call {search_tool} with keywords, or query 'select:<name>', before using one."
        )
        return ToolHint(names, (), text)
    counts = Counter(_category(spec) for spec in left)
    categories = tuple(sorted(counts.items()))
    listed = ", ".join(f"{category} ({count})" for category, count in categories)
    text = (
        f"{len(left)} more tools can be loaded with {search_tool}, in these categories: "
        f"{listed}. Call {search_tool} with keywords for the capability you need."
    )
    return ToolHint((), categories, text)


def _category(spec: ToolSpec) -> str:
    metadata = spec.metadata
    plugin = metadata.get("plugin_id")
    if isinstance(plugin, str) and plugin:
        return plugin.rsplit(".", 1)[-1]
    server = metadata.get("server")
    if isinstance(server, str) and server:
        return server
    return spec.provider_name or "other"
