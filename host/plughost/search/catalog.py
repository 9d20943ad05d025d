"""The tools one chat may see, split into core and deferred, kept current incrementally.

A :class:`ToolCatalog` is an immutable snapshot for one availability context:

- **core** tools (visibility ``visible``, or named in ``always_loaded``) are
  always sent to the model;
- **deferred** tools are found through search;
- **hidden** and disabled tools are never listed; reserved names (the search
  tool itself) are kept out of both groups.

Names are resolved the way :class:`~plughost.tools.registry.ToolRegistry` resolves
them: providers in registry order, the first provider to claim a name keeps
it, hidden tools claim their name too, and a plugin tool never takes a name
the host keeps, or a look-alike of one (:mod:`plughost.tools.reserved`), so
search never offers a tool the registry would not run.

:class:`ToolCatalogs` keeps one catalog per context and listens to the
registry. A change to one provider marks only that provider stale; the next
:meth:`ToolCatalogs.get` lists that provider again and diffs its specs by
``tool_id`` (per plugin, since plugin tool ids name their plugin), so only
tools that really changed are tokenized and re-indexed. A catalog in which
nothing changed is returned as the same object, which lets the strategies
hand the model byte-identical tool lists.

All contexts share one :class:`~plughost.search.index.SearchIndex`: a
deferred tool that looks the same in two chats is indexed once and counted
twice. Term statistics are therefore those of every cached chat's tools,
which only makes them steadier.

With a :class:`~plughost.search.dense.DenseIndex` (the ``semantic`` extra),
every new deferred tool is also handed to it for an embedding, off the event
loop, and a search of a catalog whose tools all have their vectors fuses BM25
with cosine similarity (:func:`~plughost.search.dense.fuse`); until then, or
without the extra, the ranking is BM25 alone.

What does not live here: ranking (:mod:`plughost.search.index`,
:mod:`plughost.search.dense`), tokenizing (:mod:`plughost.search.text`), what is sent to the model
(:mod:`plughost.search.strategies`).
"""

from __future__ import annotations

import asyncio
import hashlib
import heapq
import itertools
import json
import logging
import operator
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from plughost.search.co_usage import CoUsage
from plughost.search.dense import DenseIndex, fuse
from plughost.search.embedding import embedding_text
from plughost.search.index import SearchIndex
from plughost.search.text import tokenize, tool_tokens
from plughost.tools.provider import ChangeListener, ToolProvider
from plughost.tools.reserved import HostNames, is_third_party
from plughost_sdk.models import ToolAvailabilityContext, ToolSpec

__all__ = ["CatalogSource", "ToolCatalog", "ToolCatalogs", "document_key", "rank"]

log = logging.getLogger(__name__)

_Kind = Literal["core", "deferred", "hidden", "reserved"]
# Tokenizing is pure CPU work; a batch this large goes to a worker thread so the
# event loop keeps serving other chats (the first batch also loads jieba).
_THREAD_BATCH = 32
_THREAD_TEXT = 64 * 1024
"""Characters of descriptions past which tokenizing goes to a thread, however few tools."""


class CatalogSource(Protocol):
    """What the catalogs need from :class:`~plughost.tools.registry.ToolRegistry`."""

    @property
    def version(self) -> int: ...

    @property
    def providers(self) -> tuple[ToolProvider, ...]: ...

    def add_listener(self, listener: ChangeListener) -> None: ...

    def remove_listener(self, listener: ChangeListener) -> None: ...


class ToolCatalog:
    """One chat's tools at one moment: core and deferred, each sorted by name.

    Built by :class:`ToolCatalogs`; immutable once built (setting or deleting
    an attribute raises ``AttributeError``), because the same object is shared
    by every turn of every conversation in its chat and by the strategies'
    caches.
    """

    __slots__ = ("_by_key", "_entries", "core", "deferred", "version")

    def __init__(
        self, entries: dict[str, _Entry], core: list[_Entry], deferred: list[_Entry]
    ) -> None:
        self.core: tuple[ToolSpec, ...] = tuple(e.spec for e in core)
        self.deferred: tuple[ToolSpec, ...] = tuple(e.spec for e in deferred)
        self.version = next(_catalog_versions)
        """Unique per snapshot: an unchanged catalog keeps its version."""
        self._entries = entries  # every claimed name, hidden and reserved ones included
        self._by_key = {e.doc_key: e.spec for e in deferred if e.doc_key is not None}

    def __setattr__(self, name: str, value: object) -> None:
        if hasattr(self, "_by_key"):  # the last attribute __init__ sets
            raise AttributeError(f"ToolCatalog is immutable: cannot set {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"ToolCatalog is immutable: cannot delete {name!r}")

    @property
    def active_count(self) -> int:
        """How many tools the model could use: core plus deferred."""
        return len(self.core) + len(self.deferred)

    def get(self, name: str) -> ToolSpec | None:
        """The core or deferred tool called ``name``, if any."""
        entry = self._entries.get(name)
        return entry.spec if entry is not None and entry.kind in _ACTIVE else None

    def is_deferred(self, name: str) -> bool:
        """Whether ``name`` is a deferred tool of this catalog."""
        entry = self._entries.get(name)
        return entry is not None and entry.kind == "deferred"

    def deferred_key(self, name: str) -> str | None:
        """The search index key of the deferred tool called ``name``, if any."""
        entry = self._entries.get(name)
        return entry.doc_key if entry is not None and entry.kind == "deferred" else None

    def __contains__(self, name: object) -> bool:
        entry = self._entries.get(name) if isinstance(name, str) else None
        return entry is not None and entry.kind in _ACTIVE


_catalog_versions = itertools.count(1)
_ACTIVE = frozenset({"core", "deferred"})


@dataclass(slots=True)
class _Entry:
    spec: ToolSpec
    kind: _Kind
    doc_key: str | None = None
    name: str = field(init=False)

    def __post_init__(self) -> None:
        self.name = self.spec.name


_by_name = operator.attrgetter("name")


@dataclass(slots=True)
class _ContextState:
    listings: dict[str, dict[str, _Entry]] = field(default_factory=dict)
    dirty: set[str] = field(default_factory=set)
    seen_version: int = -1
    catalog: ToolCatalog | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class ToolCatalogs:
    """Catalogs per availability context over one registry, updated per provider.

    Args:
        registry: The registry whose tools are catalogued; a listener is added
            to it, removed again by :meth:`close`.
        always_loaded: Names that are core even when their spec says deferred.
        reserved: Names left out of every catalog (the search tool).
        max_contexts: How many contexts keep a catalog; the least recently
            used beyond that is dropped and rebuilt if it comes back.
        dense: Embeddings to fuse with BM25; None ranks by BM25 alone.
        together: Tools used together, which lift each other; None leaves
            the ranking as BM25 (and embeddings) made it.
    """

    def __init__(
        self,
        registry: CatalogSource,
        *,
        always_loaded: Iterable[str] = (),
        reserved: Iterable[str] = (),
        max_contexts: int = 256,
        dense: DenseIndex | None = None,
        together: CoUsage | None = None,
    ) -> None:
        if max_contexts < 1:
            raise ValueError("max_contexts must be at least 1")
        self._registry = registry
        self._always_loaded = frozenset(always_loaded)
        self._reserved = frozenset(reserved)
        self._max_contexts = max_contexts
        self._states: OrderedDict[ToolAvailabilityContext | None, _ContextState] = OrderedDict()
        self._index = SearchIndex()
        self._refs: dict[str, int] = {}
        self._dense = dense
        self._together = together
        registry.add_listener(self._on_changed)

    def close(self) -> None:
        """Stop listening to the registry and drop every catalog."""
        self._registry.remove_listener(self._on_changed)
        self._states.clear()
        self._refs.clear()
        self._index = SearchIndex()
        if self._dense is not None:
            self._dense.close()
            self._dense = None

    async def get(self, context: ToolAvailabilityContext | None = None) -> ToolCatalog:
        """Return the current catalog of ``context``, refreshing only stale providers."""
        state = self._state(context)
        async with state.lock:
            version = self._registry.version
            if state.catalog is not None and not state.dirty and state.seen_version == version:
                return state.catalog
            providers = self._registry.providers
            stale = self._stale(state, providers)
            state.dirty.clear()
            changed = self._drop_unregistered(state, providers)
            listed = await _list_all(stale, context)
            for provider, specs in zip(stale, listed, strict=True):
                if specs is None:
                    state.dirty.add(provider.provider_name)  # try again next time
                    continue
                changed |= await self._apply(state, provider, specs)
            state.seen_version = version
            if changed or state.catalog is None:
                state.catalog = _snapshot(state, providers, state.catalog)
            return state.catalog

    def search(
        self, catalog: ToolCatalog, query: str, limit: int
    ) -> tuple[list[tuple[ToolSpec, float]], int]:
        """Rank the deferred tools of ``catalog`` for ``query``: hybrid when it can, else BM25.

        Returns:
            Up to ``limit`` (spec, score) pairs, best first, ties by name; and
            how many deferred tools matched in all (the candidates fused, when
            hybrid).
        """
        return rank(
            self._index,
            self._dense,
            query,
            catalog._by_key,
            limit,
            self._together,
            catalog.deferred_key,
        )

    async def wait_embedded(self) -> None:
        """Wait until every tool handed to the dense index so far has its vector."""
        if self._dense is not None:
            await self._dense.wait()

    # --- bookkeeping -----------------------------------------------------------------

    def _on_changed(self, provider_name: str) -> None:
        for state in self._states.values():
            state.dirty.add(provider_name)

    def _state(self, context: ToolAvailabilityContext | None) -> _ContextState:
        state = self._states.get(context)
        if state is not None:
            self._states.move_to_end(context)
            return state
        state = self._states[context] = _ContextState()
        self._evict()
        return state

    def _evict(self) -> None:
        """Drop least recently used idle contexts beyond the cap, releasing their documents."""
        for context in list(self._states):
            if len(self._states) <= self._max_contexts:
                return
            state = self._states[context]
            if state.lock.locked():
                continue  # a refresh is under way; drop it later
            del self._states[context]
            for listing in state.listings.values():
                self._release_all(listing.values())

    def _stale(self, state: _ContextState, providers: Sequence[ToolProvider]) -> list[ToolProvider]:
        if state.catalog is None or not state.dirty:
            return list(providers)  # first build, or the registry changed unannounced
        return [p for p in providers if p.provider_name in state.dirty]

    def _drop_unregistered(self, state: _ContextState, providers: Sequence[ToolProvider]) -> bool:
        names = {p.provider_name for p in providers}
        gone = [name for name in state.listings if name not in names]
        for name in gone:
            self._release_all(state.listings.pop(name).values())
        return bool(gone)

    # --- diffing one provider ------------------------------------------------------------

    async def _apply(
        self, state: _ContextState, provider: ToolProvider, specs: Sequence[ToolSpec]
    ) -> bool:
        """Replace one provider's listing, re-indexing only the tools that changed."""
        old = state.listings.get(provider.provider_name, {})
        new: dict[str, _Entry] = {}
        fresh: list[_Entry] = []
        for spec in specs:
            if not spec.enabled or not spec.name:
                continue
            key = spec.tool_id or f"{provider.provider_type}:{provider.provider_name}:{spec.name}"
            if key in new:
                continue
            previous = old.get(key)
            if previous is not None and _equivalent(previous.spec, spec):
                new[key] = previous
            else:
                new[key] = self._entry(spec)
                fresh.append(new[key])
        await self._acquire(fresh)
        replaced = [entry for key, entry in old.items() if new.get(key) is not entry]
        self._release_all(replaced)
        state.listings[provider.provider_name] = new
        if fresh or replaced:
            log.debug(
                "tool catalog updated provider=%s new=%d dropped=%d",
                provider.provider_name,
                len(fresh),
                len(replaced),
            )
        return bool(fresh or replaced) or list(old) != list(new)

    def _entry(self, spec: ToolSpec) -> _Entry:
        if spec.name in self._reserved:
            return _Entry(spec, "reserved")
        visibility = spec.visibility
        if visibility == "hidden":
            return _Entry(spec, "hidden")
        if visibility == "visible" or spec.name in self._always_loaded:
            return _Entry(spec, "core")
        return _Entry(spec, "deferred", document_key(spec))

    async def _acquire(self, entries: Sequence[_Entry]) -> None:
        """Count a reference to each new deferred tool's document, indexing absent ones."""
        pending = [e for e in entries if e.doc_key is not None and e.doc_key not in self._index]
        tokens = await _tokenize_all([e.spec for e in pending])
        computed = {e.doc_key: t for e, t in zip(pending, tokens, strict=True)}
        for entry in entries:
            key = entry.doc_key
            if key is None:
                continue
            if key not in self._index:  # checked again: other chats run while we await
                self._index.add(key, computed.get(key) or tool_tokens(entry.spec))
                if self._dense is not None:
                    self._dense.add(key, embedding_text(entry.spec))
            self._refs[key] = self._refs.get(key, 0) + 1
        if self._dense is not None:
            self._dense.flush()

    def _release_all(self, entries: Iterable[_Entry]) -> None:
        for entry in entries:
            key = entry.doc_key
            if key is None or key not in self._refs:
                continue
            self._refs[key] -= 1
            if self._refs[key] <= 0:
                del self._refs[key]
                self._index.remove(key)
                if self._dense is not None:
                    self._dense.remove(key)


def _snapshot(
    state: _ContextState, providers: Sequence[ToolProvider], previous: ToolCatalog | None
) -> ToolCatalog:
    """Resolve names across providers (first wins) and sort each group by name."""
    listings = [state.listings.get(provider.provider_name, {}) for provider in providers]
    host = HostNames.of(providers, [[e.name for e in listing.values()] for listing in listings])
    entries: dict[str, _Entry] = {}
    for provider, listing in zip(providers, listings, strict=True):
        third_party = is_third_party(provider)
        for entry in listing.values():
            if not (third_party and host.holder(entry.name)):
                entries.setdefault(entry.name, entry)
    core = sorted((e for e in entries.values() if e.kind == "core"), key=_by_name)
    deferred = sorted((e for e in entries.values() if e.kind == "deferred"), key=_by_name)
    if previous is not None and _same(previous.core, core) and _same(previous.deferred, deferred):
        return previous
    return ToolCatalog(entries, core, deferred)


def _same(old: Sequence[ToolSpec], new: Sequence[_Entry]) -> bool:
    return len(old) == len(new) and all(a is b.spec for a, b in zip(old, new, strict=True))


def _equivalent(old: ToolSpec, new: ToolSpec) -> bool:
    """Whether ``new`` searches, renders and classifies exactly like ``old``.

    Cheaper than ``==`` on purpose: a plugin reload rebuilds every plugin spec
    object, and comparing ten thousand full models costs more than the
    re-index budget. Unchanged plugins hand over the same description and
    schema objects, so the ``is`` checks settle most comparisons.
    """
    if old is new:
        return True
    old_meta, new_meta = old.metadata, new.metadata
    return (
        old.name == new.name
        and old.description == new.description
        and (
            old.parameters_schema is new.parameters_schema
            or old.parameters_schema == new.parameters_schema
        )
        and old.enabled == new.enabled
        and old.title == new.title
        and (
            old_meta is new_meta
            or (
                old_meta.get("visibility") == new_meta.get("visibility")
                and old_meta.get("brief_description") == new_meta.get("brief_description")
            )
        )
    )


def rank(
    index: SearchIndex,
    dense: DenseIndex | None,
    query: str,
    within: Mapping[str, ToolSpec],
    limit: int,
    together: CoUsage | None = None,
    key_of: Callable[[str], str | None] | None = None,
) -> tuple[list[tuple[ToolSpec, float]], int]:
    """Rank the tools of ``within`` (document key to spec) for ``query``.

    BM25 fused with ``dense`` when every one of them has its vector, else BM25
    alone; then the best lift the tools used with them (``together``; ``key_of``
    finds a tool's key by name, by default among ``within``). See
    :meth:`ToolCatalogs.search` for what is returned.
    """
    scores = dense.scores(query, within) if dense is not None else None
    if scores is None and not together:
        result = index.search(tokenize(query), limit, within=within)
        return [(within[hit.key], hit.score) for hit in result.hits], result.total
    lexical = index.search(tokenize(query), len(within), within=within)
    ranked = {hit.key: hit.score for hit in lexical.hits}
    if scores is not None:
        ranked = fuse(ranked, scores)
    if together:
        if key_of is None:
            key_of = {spec.name: key for key, spec in within.items()}.get
        ranked = together.spread(ranked, lambda key: within[key].name, key_of)
    best = heapq.nsmallest(limit, ranked.items(), key=lambda item: (-item[1], item[0]))
    return [(within[key], score) for key, score in best], len(ranked)


def document_key(spec: ToolSpec) -> str:
    """The index key of a tool: its name plus a digest of everything that is searched."""
    searched = json.dumps(
        [spec.name, spec.description, spec.parameters_schema],
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    digest = hashlib.blake2b(searched.encode("utf-8"), digest_size=8).hexdigest()
    return f"{spec.name}\x1f{digest}"


async def _tokenize_all(specs: Sequence[ToolSpec]) -> list[list[str]]:
    # Tokenizing (jieba) costs about a second per megabyte: a few long descriptions
    # (an MCP server's, say) go to a thread too, not only many tools.
    text = sum(len(spec.description) for spec in specs)
    if len(specs) < _THREAD_BATCH and text < _THREAD_TEXT:
        return [tool_tokens(spec) for spec in specs]
    return await asyncio.to_thread(lambda: [tool_tokens(spec) for spec in specs])


async def _list_all(
    providers: Sequence[ToolProvider], context: ToolAvailabilityContext | None
) -> list[list[ToolSpec] | None]:
    if len(providers) == 1:  # the usual case: one provider changed; no task needed
        return [await _list(providers[0], context)]
    return list(await asyncio.gather(*(_list(p, context) for p in providers)))


async def _list(
    provider: ToolProvider, context: ToolAvailabilityContext | None
) -> list[ToolSpec] | None:
    try:
        return list(await provider.list_tools(context))
    except Exception:
        log.exception("tool catalog could not list provider=%s", provider.provider_name)
        return None
