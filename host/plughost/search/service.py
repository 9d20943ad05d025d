"""Deferred tool discovery: the ``tool_search`` built-in and the service an embedder drives.

An embedding runtime wires it like this (see docs/tool-search.md)::

    search = ToolSearchService(registry, strategy="anthropic")
    builtins.add(search.tool())                  # the tool_search built-in
    tools = await search.definitions(context, session_id)   # every turn

:class:`ToolSearchService` decides per turn whether search is needed at all
(auto mode: with at most ``threshold`` active tools every tool is simply sent),
keeps one :class:`~plughost.search.discovery.DiscoveryState` per conversation, and asks
its :mod:`strategy <plughost.search.strategies>` for the tool list. The
``tool_search`` handler searches the deferred tools of the caller's chat, or
selects tools by exact name (``select:a,b``), and records what it returned as
discovered for that conversation.

:func:`search_tools` is the one-shot search the CLI runs over a registry.

With ``semantic="auto"`` or ``"on"`` and the ``plughost[semantic]`` extra
installed, searches rank by BM25 fused with a sentence-embedding model
(:mod:`plughost.search.dense`); ``"off"``, or ``"auto"`` without the extra,
keeps the ranking lexical.

What does not live here: tokenizing and ranking (:mod:`plughost.search.text`,
:mod:`plughost.search.index`, :mod:`plughost.search.dense`), keeping catalogs current
(:mod:`plughost.search.catalog`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plughost.search.catalog import (
    CatalogSource,
    ToolCatalog,
    ToolCatalogs,
    document_key,
    rank,
)
from plughost.search.co_usage import CoUsage
from plughost.search.dense import DenseIndex, EmbeddingStats
from plughost.search.discovery import DiscoveryState, DiscoveryStore
from plughost.search.embedding import SemanticMode, embedding_text, load_embedder
from plughost.search.hints import ToolHint, build_tool_hint
from plughost.search.index import SearchIndex
from plughost.search.strategies import (
    AnthropicStrategy,
    OpenAIStrategy,
    SearchStrategy,
    StrategyName,
    make_strategy,
)
from plughost.search.text import tool_tokens
from plughost.tools.builtin import BuiltinTool
from plughost.tools.registry import ToolRegistry
from plughost.tools.reserved import TOOL_SEARCH_NAME
from plughost_sdk.errors import ToolError
from plughost_sdk.models import (
    ToolAvailabilityContext,
    ToolExecutionContext,
    ToolExecutionResult,
    ToolSpec,
)

__all__ = [
    "DEFAULT_THRESHOLD",
    "MAX_LIMIT",
    "TOOL_SEARCH_NAME",
    "SearchMatch",
    "SearchOutcome",
    "ToolSearchService",
    "search_tools",
]

log = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 25
"""Auto mode sends every tool while a chat has at most this many active tools."""
DEFAULT_LIMIT = 5
MAX_LIMIT = 20
_SELECT_PREFIX = "select:"
_BRIEF_LENGTH = 160
_SPACES = re.compile(r"\s+")

TOOL_SEARCH_DESCRIPTION = (
    "Find and load tools that are not in your tool list yet. Only some tools are "
    "loaded up front; many more can be loaded on demand. Call this whenever no "
    "loaded tool fits the task, before telling the user something cannot be done.\n"
    "- query: a few keywords naming the capability you need, as a search box "
    "expects them, not a whole sentence: 'weather forecast', 'send email', "
    "'kick group member', '天气预报', '禁言 群成员'. Use the user's language or "
    "English, and try synonyms if the first search finds nothing.\n"
    "- To load tools whose exact names you already know, query 'select:name_a,name_b'.\n"
    "The result lists matching tools {name, description, score} best first; they "
    "become callable right after this search. Then call the right one directly."
)
TOOL_SEARCH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": "Keywords for the capability needed, or 'select:name_a,name_b'.",
        },
        "limit": {
            # No minimum/maximum: an out-of-range limit is clamped, never refused,
            # whichever path the call takes (registry, direct search, OpenAI client search).
            "type": "integer",
            "description": f"How many tools to return at most (1-{MAX_LIMIT}; "
            "other values are clamped).",
            "default": DEFAULT_LIMIT,
        },
    },
    "required": ["query"],
}


@dataclass(frozen=True, slots=True)
class SearchMatch:
    """One tool found by a search.

    Attributes:
        name: The model-facing name to call.
        description: One line describing the tool.
        score: BM25 relevance (1.0 for a ``select:`` match); only comparable
            within one search.
        tool_id: The tool's stable identity.
    """

    name: str
    description: str
    score: float
    tool_id: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The match as the model sees it (without ``tool_id``)."""
        return {"name": self.name, "description": self.description, "score": self.score}


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    """The result of one search: the best matches and how many matched in all.

    Attributes:
        query: The query as given.
        matches: The best matches, best first.
        total_found: How many tools matched, before the limit.
        not_found: For ``select:`` queries, the names that matched no tool.
    """

    query: str
    matches: tuple[SearchMatch, ...]
    total_found: int
    not_found: tuple[str, ...] = ()

    @property
    def names(self) -> list[str]:
        """The matched names, best first."""
        return [match.name for match in self.matches]

    def to_dict(self) -> dict[str, Any]:
        """The structured result ``tool_search`` returns to the model."""
        result: dict[str, Any] = {
            "query": self.query,
            "matches": [match.to_dict() for match in self.matches],
            "total_found": self.total_found,
        }
        if self.not_found:
            result["not_found"] = list(self.not_found)
        return result


class ToolSearchService:
    """Everything an embedder needs for deferred tool discovery over one registry.

    Args:
        registry: The registry whose tools are searched; the ``tool_search``
            built-in from :meth:`tool` must be registered in it (through a
            :class:`~plughost.tools.builtin.BuiltinToolProvider`) for the model's
            calls to reach it.
        strategy: ``generic``, ``anthropic`` or ``openai``, or a configured
            strategy object (for example ``OpenAIStrategy(execution="client")``).
        threshold: Auto mode: a chat with at most this many active tools gets
            every tool and no ``tool_search``; 0 searches whenever anything is
            deferred.
        always_loaded: Tool names that are always sent, even when deferred.
        max_contexts: How many availability contexts keep a cached catalog.
        semantic: ``auto`` fuses BM25 with the embedding model when the
            ``plughost[semantic]`` extra is installed, ``on`` requires it,
            ``off`` ranks by BM25 alone.
        embedding_cache: A directory for the tool embeddings cache, so a
            restart embeds nothing it embedded before; None keeps them in memory.
        used_together: Learn which deferred tools conversations call together,
            and let a search's best matches lift the tools used with them.

    Raises:
        ValueError: For an unknown strategy name or a negative threshold, or
            ``semantic="on"`` without the extra.
    """

    def __init__(
        self,
        registry: CatalogSource,
        *,
        strategy: StrategyName | SearchStrategy = "generic",
        threshold: int = DEFAULT_THRESHOLD,
        always_loaded: Iterable[str] = (),
        max_contexts: int = 256,
        semantic: SemanticMode = "off",
        embedding_cache: Path | None = None,
        used_together: bool = True,
    ) -> None:
        if threshold < 0:
            raise ValueError("threshold must be 0 or more")
        self.strategy = make_strategy(strategy) if isinstance(strategy, str) else strategy
        self.threshold = threshold
        embedder = load_embedder(semantic)
        self._dense = DenseIndex(embedder, embedding_cache) if embedder is not None else None
        self._together = CoUsage() if used_together else None
        self._catalogs = ToolCatalogs(
            registry,
            always_loaded=always_loaded,
            reserved=(TOOL_SEARCH_NAME,),
            max_contexts=max_contexts,
            dense=self._dense,
            together=self._together,
        )
        self._discovery = DiscoveryStore()
        self._registry = registry
        add_gate = getattr(registry, "add_call_gate", None)
        if callable(add_gate):
            add_gate(self._gate)
        self._spec = ToolSpec(
            name=TOOL_SEARCH_NAME,
            description=TOOL_SEARCH_DESCRIPTION,
            parameters_schema=TOOL_SEARCH_PARAMETERS,
            metadata={"visibility": "visible"},
        )

    @property
    def semantic(self) -> bool:
        """Whether searches fuse BM25 with embeddings (once a catalog's tools have them)."""
        return self._dense is not None

    @property
    def embedding_stats(self) -> EmbeddingStats | None:
        """How many tool texts were embedded and how many came from the cache; None if lexical."""
        return self._dense.stats if self._dense is not None else None

    async def embeddings_ready(self) -> None:
        """Wait until every tool listed so far has its embedding (searches need not wait)."""
        await self._catalogs.wait_embedded()

    def tool(self) -> BuiltinTool:
        """The ``tool_search`` built-in, to add to a BuiltinToolProvider."""
        return BuiltinTool(spec=self._spec, handler=self._handle, visibility="visible")

    def close(self) -> None:
        """Stop following the registry; discovery state is kept for :meth:`export_state`."""
        self._catalogs.close()
        remove_gate = getattr(self._registry, "remove_call_gate", None)
        if callable(remove_gate):
            remove_gate(self._gate)

    # --- per turn ----------------------------------------------------------------------

    async def definitions(
        self, context: ToolAvailabilityContext | None, session_id: str
    ) -> list[dict[str, Any]]:
        """The tool list to send to the model this turn.

        Args:
            context: The chat the turn happens in.
            session_id: The conversation whose discoveries count.
        """
        catalog = await self._catalogs.get(context)
        if not self._searching(catalog):
            return self.strategy.all_tools(catalog)
        discovered = self._discovery.get(session_id).names
        return self.strategy.search_tools(catalog, self._spec, discovered)

    async def tool_hint(
        self, context: ToolAvailabilityContext | None, session_id: str
    ) -> ToolHint | None:
        """The reminder of what this conversation can still load, for this turn.

        None when the chat is not searching (every tool is sent) or everything
        deferred is discovered already. Send ``hint.message(shape)`` last,
        before the model's turn; it is tagged to stay out of message counts.
        """
        catalog = await self._catalogs.get(context)
        if not self._searching(catalog):
            return None
        discovered = self._discovery.get(session_id)
        return build_tool_hint(catalog, discovered, search_tool=self._spec.name)

    async def is_searching(self, context: ToolAvailabilityContext | None) -> bool:
        """Whether this chat's turns offer ``tool_search`` (auto mode's verdict)."""
        return self._searching(await self._catalogs.get(context))

    async def catalog(self, context: ToolAvailabilityContext | None = None) -> ToolCatalog:
        """The current catalog of ``context`` (core and deferred tools)."""
        return await self._catalogs.get(context)

    # --- discovery state -----------------------------------------------------------------

    def discovery(self, session_id: str) -> DiscoveryState:
        """The discovery state of one conversation (created empty on first use)."""
        return self._discovery.get(session_id)

    def export_state(self) -> dict[str, Any]:
        """Every conversation's discoveries and the tools used together, JSON-able."""
        state = self._discovery.export()
        if self._together is not None:
            state["used_together"] = self._together.export()
        return state

    def restore_state(self, data: Mapping[str, Any]) -> None:
        """Load what :meth:`export_state` saved, for instance after a restart.

        Raises:
            ValueError: If ``data`` is not what :meth:`export_state` produces;
                nothing is changed then.
        """
        together = CoUsage()
        used = data.get("used_together", {})
        if not isinstance(used, Mapping):
            raise ValueError("'used_together' must be what export_state() wrote")
        together.restore(used)
        self._discovery.restore(data)
        if self._together is not None:
            self._together.restore(together.export())

    # --- searching -----------------------------------------------------------------------

    async def search(
        self,
        query: str,
        limit: int = DEFAULT_LIMIT,
        context: ToolAvailabilityContext | None = None,
    ) -> SearchOutcome:
        """Search the deferred tools of ``context``, or select tools by exact name.

        Args:
            query: Keywords, or ``select:name_a,name_b`` for exact names (core
                or deferred; unknown names are reported in ``not_found``).
            limit: How many matches to return, clamped to 1..MAX_LIMIT.
            context: The chat whose tools are searched.

        Raises:
            ValueError: If ``query`` is empty.
        """
        catalog = await self._catalogs.get(context)
        return self._search(catalog, query, limit)

    def tool_result_content(self, result: ToolExecutionResult) -> str | list[dict[str, Any]]:
        """The ``tool_result`` content for a ``tool_search`` result, per strategy.

        With the anthropic strategy, a search that found deferred tools becomes
        its ``tool_reference`` blocks; everything else is the result's text.
        """
        structured = result.structured_content
        if isinstance(self.strategy, AnthropicStrategy) and isinstance(structured, dict):
            references = structured.get("tool_references")
            if isinstance(references, list) and references:
                return references
        return result.get_history_content()

    async def tool_search_output(
        self,
        call_id: str,
        arguments: Mapping[str, Any],
        context: ToolAvailabilityContext | None,
        session_id: str,
    ) -> dict[str, Any]:
        """Answer an OpenAI client-side ``tool_search_call`` with a ``tool_search_output``.

        Raises:
            TypeError: If the strategy is not an :class:`OpenAIStrategy`.
            ValueError: If the call's query is empty.
        """
        if not isinstance(self.strategy, OpenAIStrategy):
            raise TypeError("tool_search_output needs the 'openai' strategy")
        catalog = await self._catalogs.get(context)
        outcome = self._search(catalog, _query_of(arguments), _limit_of(arguments))
        self._record(catalog, session_id, outcome)
        return self.strategy.search_output(call_id, catalog, outcome.names)

    async def _handle(self, arguments: dict[str, Any], ctx: ToolExecutionContext) -> dict[str, Any]:
        """The ``tool_search`` handler: search the caller's chat, remember what was found."""
        catalog = await self._catalogs.get(ctx.availability())
        try:
            outcome = self._search(catalog, _query_of(arguments), _limit_of(arguments))
        except ValueError as exc:
            raise ToolError(str(exc)) from exc  # the message is for the model
        if ctx.session_id:
            self._record(catalog, ctx.session_id, outcome)
        else:
            log.warning(
                "tool_search called without a session id: what it found is not remembered, "
                "so deferred tools stay unavailable; pass ToolExecutionContext(session_id=...) "
                "with the model's tool calls"
            )
        log.debug(
            "tool_search session=%s query=%r found=%d",
            ctx.session_id,
            outcome.query,
            outcome.total_found,
        )
        return {**outcome.to_dict(), **self.strategy.result_extras(catalog, outcome.names)}

    def _searching(self, catalog: ToolCatalog) -> bool:
        return bool(catalog.deferred) and catalog.active_count > self.threshold

    def _search(self, catalog: ToolCatalog, query: str, limit: int) -> SearchOutcome:
        query = query.strip()
        if not query:
            raise ValueError("query is empty: give a few keywords, e.g. 'weather forecast'")
        limit = _clamp(limit)
        if query.lower().startswith(_SELECT_PREFIX):
            return _select(catalog, query, query[len(_SELECT_PREFIX) :])
        ranked, total = self._catalogs.search(catalog, query, limit)
        matches = tuple(_match(spec, score) for spec, score in ranked)
        return SearchOutcome(query=query, matches=matches, total_found=total)

    def _record(self, catalog: ToolCatalog, session_id: str, outcome: SearchOutcome) -> None:
        deferred = [name for name in outcome.names if catalog.is_deferred(name)]
        self._discovery.get(session_id).add(deferred)

    async def _gate(
        self, spec: ToolSpec, context: ToolExecutionContext | None
    ) -> ToolExecutionResult | None:
        """Refuse a model's call of a deferred tool its conversation has not discovered.

        A deferred tool's call that goes ahead is noted as used by its conversation.
        """
        if spec.visibility != "deferred":
            return None
        session_id = context.session_id if context is not None else ""
        refusal = await self._refusal(spec, context, session_id)
        if refusal is None and session_id and self._together is not None:
            self._together.record(session_id, spec.name)
        return refusal

    async def _refusal(
        self, spec: ToolSpec, context: ToolExecutionContext | None, session_id: str
    ) -> ToolExecutionResult | None:
        if not _tracks_discovery(self.strategy):
            return None
        catalog = await self._catalogs.get(context.availability() if context else None)
        if not self._searching(catalog) or not catalog.is_deferred(spec.name):
            return None
        if session_id and spec.name in self._discovery.get(session_id):
            return None
        message = (
            f"Tool {spec.name} is not loaded in this conversation yet: call "
            f"{TOOL_SEARCH_NAME} first (for example with query 'select:{spec.name}'), "
            f"then call {spec.name}."
        )
        if not session_id:
            message += (
                " This call carries no session id, so no discovery can be remembered: "
                "the application must pass ToolExecutionContext(session_id=...)."
            )
        return ToolExecutionResult.failure(spec.name, message, "tool_not_discovered")


async def search_tools(
    registry: ToolRegistry,
    query: str,
    limit: int = DEFAULT_LIMIT,
    context: ToolAvailabilityContext | None = None,
    *,
    semantic: SemanticMode = "off",
    embedding_cache: Path | None = None,
) -> list[SearchMatch]:
    """Search every listed tool of ``registry`` once; what ``plughost search`` runs.

    Core and deferred tools are both searched (hidden ones never are, nor
    ``tool_search`` itself), with the same tokenizer and ranking as
    ``tool_search``: hybrid when ``semantic`` loads the model, in which case
    this waits for every tool's embedding. The index is built for this one call.

    Args:
        registry: The registry to search.
        query: Keywords, in any mix of Chinese and English.
        limit: How many matches to return at most.
        context: The chat whose tools count; None for every tool.
        semantic: As :class:`ToolSearchService`'s ``semantic``.
        embedding_cache: As :class:`ToolSearchService`'s ``embedding_cache``;
            the same directory serves both, since vectors are kept by tool text.

    Returns:
        The best matches, best first (ties by name); empty if nothing matches.

    Raises:
        ValueError: If ``semantic`` is ``"on"`` and the extra is not installed.
    """
    listed = await registry.list_tools(context)
    specs = {document_key(s): s for s in listed if s.name != TOOL_SEARCH_NAME}
    index = SearchIndex()
    for key, spec in specs.items():
        index.add(key, tool_tokens(spec))
    embedder = load_embedder(semantic)
    dense = DenseIndex(embedder, embedding_cache) if embedder is not None else None
    try:
        if dense is not None:
            for key, spec in specs.items():
                dense.add(key, embedding_text(spec))
            dense.flush()
            await dense.wait()
        ranked, _ = rank(index, dense, query, specs, _clamp(limit))
    finally:
        if dense is not None:
            dense.close()
    return [_match(spec, score) for spec, score in ranked]


def _select(catalog: ToolCatalog, query: str, names_text: str) -> SearchOutcome:
    names = list(dict.fromkeys(n.strip() for n in names_text.split(",") if n.strip()))
    lowered = {spec_name.lower(): spec_name for spec_name in _all_names(catalog)}
    matches: list[SearchMatch] = []
    missing: list[str] = []
    for name in names:
        spec = catalog.get(name) or catalog.get(lowered.get(name.lower(), ""))
        if spec is None:
            missing.append(name)
        else:
            matches.append(_match(spec, 1.0))
    return SearchOutcome(query, tuple(matches), len(matches), tuple(missing))


def _all_names(catalog: ToolCatalog) -> list[str]:
    return [spec.name for spec in (*catalog.core, *catalog.deferred)]


def _match(spec: ToolSpec, score: float) -> SearchMatch:
    brief = _SPACES.sub(" ", spec.brief_description).strip()
    if len(brief) > _BRIEF_LENGTH:
        brief = brief[: _BRIEF_LENGTH - 1].rstrip() + "…"
    return SearchMatch(spec.name, brief, round(score, 4), spec.tool_id)


def _query_of(arguments: Mapping[str, Any]) -> str:
    query = arguments.get("query", "")
    return query if isinstance(query, str) else str(query)


def _clamp(limit: int) -> int:
    return max(1, min(MAX_LIMIT, limit))


def _tracks_discovery(strategy: SearchStrategy) -> bool:
    """False when the model API runs the search itself, so no discovery is ever seen here."""
    return not (isinstance(strategy, OpenAIStrategy) and strategy.execution == "server")


def _limit_of(arguments: Mapping[str, Any]) -> int:
    limit = arguments.get("limit", DEFAULT_LIMIT)
    try:
        return int(limit)
    except (TypeError, ValueError):
        return DEFAULT_LIMIT
