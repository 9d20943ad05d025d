"""What the model is sent each turn when tools are deferred: one strategy per API family.

The embedding runtime picks the strategy that fits its model API:

- **generic** (any API): the ``tools`` list itself grows. It holds the core
  tools (sorted), then ``tool_search``, then the tools this conversation has
  discovered, in discovery order. The list only ever grows at its end, but
  every growth still changes ``tools``, and providers that cache the prompt in
  the order tools → system → messages then re-read everything after it. Works
  with every model that calls functions.
- **anthropic** (Messages API): the *full* catalog is sent every turn, deferred
  tools marked ``"defer_loading": true``; the API keeps their schemas out of
  the context until a ``tool_reference`` block names them. The list is built
  once per catalog and returned as the same object (identical JSON) on every
  turn, so the prompt cache holds. Search results go back to the model as
  ``[{"type": "tool_reference", "tool_name": ...}]`` inside the
  ``tool_result``, filtered to names that really are deferred.
- **openai** (Responses API): follows OpenAI's tool-search design. Deferred
  functions carry ``"defer_loading": true`` (the model still sees their name and
  description, only the parameter schema is held back) and a
  ``{"type": "tool_search"}`` entry is added. By default OpenAI runs the search
  itself (``execution="server"``). With ``execution="client"`` the entry
  carries our description and parameters; the model then emits a
  ``tool_search_call`` item, and the client answers with a
  ``tool_search_output`` item whose ``tools`` are the matched function
  definitions (see :meth:`OpenAIStrategy.search_output`). OpenAI adds the
  loaded tools at the end of the context, which keeps its cache.

Below the auto-mode threshold every strategy simply sends every active tool
(:meth:`SearchStrategy.all_tools`), without ``tool_search``.

What does not live here: which tools exist (:mod:`plughost.search.catalog`),
discovery state (:mod:`plughost.search.discovery`), running searches
(:mod:`plughost.search.service`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, Protocol

from plughost.search.catalog import ToolCatalog
from plughost.search.discovery import assemble_tool_names
from plughost.tools.definitions import DefinitionFormat, definition_of, to_anthropic, to_openai
from plughost_sdk.models import ToolSpec

__all__ = [
    "AnthropicStrategy",
    "GenericStrategy",
    "OpenAIStrategy",
    "SearchStrategy",
    "StrategyName",
    "make_strategy",
    "to_responses",
]

StrategyName = Literal["generic", "anthropic", "openai"]

_CACHE_SIZE = 256
_Render = Callable[[ToolSpec], dict[str, Any]]


class SearchStrategy(Protocol):
    """How tools reach one family of model APIs when some of them are deferred."""

    name: str

    def all_tools(self, catalog: ToolCatalog) -> list[dict[str, Any]]:
        """Every active tool, no search: the list for small catalogs."""
        ...

    def search_tools(
        self, catalog: ToolCatalog, search_tool: ToolSpec, discovered: Sequence[str]
    ) -> list[dict[str, Any]]:
        """The list when deferred tools must be searched for."""
        ...

    def result_extras(self, catalog: ToolCatalog, names: Sequence[str]) -> dict[str, Any]:
        """Extra keys for the ``tool_search`` result of ``names`` (may be empty)."""
        ...


class _Cache:
    """Rendered lists per catalog snapshot, so an unchanged catalog gives the same list."""

    def __init__(self) -> None:
        self._lists: OrderedDict[tuple[str, int], list[dict[str, Any]]] = OrderedDict()

    def get(
        self, kind: str, catalog: ToolCatalog, build: Callable[[], list[dict[str, Any]]]
    ) -> list[dict[str, Any]]:
        key = (kind, catalog.version)
        cached = self._lists.get(key)
        if cached is None:
            cached = self._lists[key] = build()
            if len(self._lists) > _CACHE_SIZE:
                self._lists.popitem(last=False)
        else:
            self._lists.move_to_end(key)
        return cached


class GenericStrategy:
    """Send core tools, ``tool_search`` and discovered tools; the list grows at its end.

    Args:
        tool_format: The definition shape, ``openai`` (Chat Completions, also
            what most OpenAI-compatible gateways take) or ``anthropic``.
    """

    name = "generic"

    def __init__(self, tool_format: DefinitionFormat = "openai") -> None:
        if tool_format not in ("openai", "anthropic"):
            raise ValueError(f"unknown tool format {tool_format!r}; use 'openai' or 'anthropic'")
        self._render: _Render = to_openai if tool_format == "openai" else to_anthropic
        self._cache = _Cache()

    def all_tools(self, catalog: ToolCatalog) -> list[dict[str, Any]]:
        """Every active tool, sorted by name."""
        return self._cache.get("all", catalog, lambda: _render_all(catalog, self._render))

    def search_tools(
        self, catalog: ToolCatalog, search_tool: ToolSpec, discovered: Sequence[str]
    ) -> list[dict[str, Any]]:
        """Core tools (sorted), then ``tool_search``, then discovered tools in order."""
        names = assemble_tool_names(
            (spec.name for spec in catalog.core),
            discovered,
            catalog,
            search_tool=search_tool.name,
        )
        specs = [search_tool if n == search_tool.name else catalog.get(n) for n in names]
        return [self._render(spec) for spec in specs if spec is not None]

    def result_extras(self, catalog: ToolCatalog, names: Sequence[str]) -> dict[str, Any]:
        """Nothing extra: the tools arrive with the next turn's list."""
        return {}


class AnthropicStrategy:
    """Send the full catalog every turn, deferred tools with ``defer_loading``."""

    name = "anthropic"

    def __init__(self) -> None:
        self._cache = _Cache()

    def all_tools(self, catalog: ToolCatalog) -> list[dict[str, Any]]:
        """Every active tool, sorted by name, none deferred."""
        return self._cache.get("all", catalog, lambda: _render_all(catalog, to_anthropic))

    def search_tools(
        self, catalog: ToolCatalog, search_tool: ToolSpec, discovered: Sequence[str]
    ) -> list[dict[str, Any]]:
        """Core, ``tool_search``, deferred: the same list object while the catalog holds."""
        return self._cache.get(
            "search", catalog, lambda: _deferred_catalog(catalog, search_tool, to_anthropic)
        )

    def result_extras(self, catalog: ToolCatalog, names: Sequence[str]) -> dict[str, Any]:
        """The ``tool_reference`` blocks to put in the ``tool_result``."""
        return {"tool_references": tool_references(catalog, names)}


class OpenAIStrategy:
    """Responses API tool search: deferred functions plus a ``tool_search`` entry.

    Args:
        execution: ``server`` lets OpenAI run the search; ``client`` has the
            model send ``tool_search_call`` items for the embedder to answer
            with :meth:`search_output`, the ``tool_search`` entry then
            carrying the description and parameters of our search tool.
    """

    name = "openai"

    def __init__(self, execution: Literal["server", "client"] = "server") -> None:
        if execution not in ("server", "client"):
            raise ValueError(f"unknown execution {execution!r}; use 'server' or 'client'")
        self.execution = execution
        self._cache = _Cache()

    def all_tools(self, catalog: ToolCatalog) -> list[dict[str, Any]]:
        """Every active tool as a Responses function, sorted by name."""
        return self._cache.get("all", catalog, lambda: _render_all(catalog, to_responses))

    def search_tools(
        self, catalog: ToolCatalog, search_tool: ToolSpec, discovered: Sequence[str]
    ) -> list[dict[str, Any]]:
        """Core functions, the ``tool_search`` entry, then deferred functions."""
        return self._cache.get(
            "search", catalog, lambda: self._deferred_catalog(catalog, search_tool)
        )

    def result_extras(self, catalog: ToolCatalog, names: Sequence[str]) -> dict[str, Any]:
        """Nothing extra in the result; see :meth:`search_output`."""
        return {}

    def search_output(
        self, call_id: str, catalog: ToolCatalog, names: Iterable[str]
    ) -> dict[str, Any]:
        """The ``tool_search_output`` item answering a client ``tool_search_call``.

        Its ``tools`` are the matched deferred functions, loaded (without
        ``defer_loading``), in the order given.
        """
        tools = [to_responses(spec) for spec in _deferred_specs(catalog, names)]
        return {
            "type": "tool_search_output",
            "call_id": call_id,
            "execution": "client",
            "tools": tools,
        }

    def _deferred_catalog(
        self, catalog: ToolCatalog, search_tool: ToolSpec
    ) -> list[dict[str, Any]]:
        entry: dict[str, Any] = {"type": "tool_search"}
        if self.execution == "client":
            searched = definition_of(search_tool)
            entry.update(
                execution="client",
                description=searched.description,
                parameters=searched.parameters,
            )
        core = [to_responses(spec) for spec in catalog.core]
        deferred = [{**to_responses(spec), "defer_loading": True} for spec in catalog.deferred]
        return [*core, entry, *deferred]


def make_strategy(name: StrategyName) -> SearchStrategy:
    """Return a strategy with default settings by name.

    Raises:
        ValueError: If ``name`` is not ``generic``, ``anthropic`` or ``openai``.
    """
    if name == "generic":
        return GenericStrategy()
    if name == "anthropic":
        return AnthropicStrategy()
    if name == "openai":
        return OpenAIStrategy()
    raise ValueError(f"unknown search strategy {name!r}; use 'generic', 'anthropic' or 'openai'")


def to_responses(spec: ToolSpec) -> dict[str, Any]:
    """Return the OpenAI Responses API ``function`` entry of ``spec``."""
    definition = definition_of(spec)
    return {
        "type": "function",
        "name": definition.name,
        "description": definition.description,
        "parameters": definition.parameters,
    }


def tool_references(catalog: ToolCatalog, names: Iterable[str]) -> list[dict[str, Any]]:
    """Anthropic ``tool_reference`` blocks for the deferred tools among ``names``."""
    return [
        {"type": "tool_reference", "tool_name": spec.name}
        for spec in _deferred_specs(catalog, names)
    ]


def _deferred_specs(catalog: ToolCatalog, names: Iterable[str]) -> list[ToolSpec]:
    specs: list[ToolSpec] = []
    for name in dict.fromkeys(names):
        spec = catalog.get(name)
        if spec is not None and catalog.is_deferred(name):
            specs.append(spec)
    return specs


def _render_all(catalog: ToolCatalog, render: _Render) -> list[dict[str, Any]]:
    specs = sorted((*catalog.core, *catalog.deferred), key=lambda spec: spec.name)
    return [render(spec) for spec in specs]


def _deferred_catalog(
    catalog: ToolCatalog, search_tool: ToolSpec, render: _Render
) -> list[dict[str, Any]]:
    core = [render(spec) for spec in catalog.core]
    deferred = [{**render(spec), "defer_loading": True} for spec in catalog.deferred]
    return [*core, render(search_tool), *deferred]
