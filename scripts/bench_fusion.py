"""Choose how hybrid tool search fuses BM25 with embeddings, on development queries only.

Run as ``.venv/bin/python scripts/bench_fusion.py /work/bench-data/ToolLens``
(DATA as for bench_tool_retrieval.py; needs the ``plughost[semantic]`` extra).
It replaces the "fusion" section of docs/benchmarks.md (``--no-write`` only prints).

Two development sets: a seeded sample of ToolLens's training queries (English)
and the development half of tests/search_eval/ (English, Chinese, mixed). Each
variant keeps the candidates :func:`plughost.search.dense.fuse` uses (the BM25
matches plus the best dense matches) and changes only how the two scores meet:

- score fusion with each side divided by its best (the earlier ranking at BM25
  weight 0.3), min-max scaled, or turned into z-scores, at BM25 weights 0.1 to 0.6;
- reciprocal rank fusion, ``1 / (k + rank)`` summed over both rankings;
- a query-adaptive weight, ``a + b × share``, rising with the share of the
  query's tokens that the index knows (a query in the tools' own words leans on BM25).

The pick is the variant with the best mean NDCG@10 over the two development
sets among those whose Chinese development NDCG@10 is no worse than the earlier
ranking's; the test splits are then reported for BM25, the earlier ranking, the
pick and the shipped :func:`~plughost.search.dense.fuse`.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean

SCRIPTS = Path(__file__).resolve().parent
sys.path[:0] = [str(SCRIPTS), str(SCRIPTS.parent)]

import numpy as np  # noqa: E402
from bench_semantic import ndcg_at_10, order  # noqa: E402
from bench_tool_retrieval import SEED, TRAIN_SAMPLE, load  # noqa: E402
from benchlib import load_line, machine_line, write_section  # noqa: E402

from plughost.search.dense import DENSE_CANDIDATES, LEXICAL_WEIGHT, fuse  # noqa: E402
from plughost.search.embedding import UseEmbedder, embedding_text  # noqa: E402
from plughost.search.index import SearchIndex  # noqa: E402
from plughost.search.text import tokenize, tool_tokens  # noqa: E402
from plughost_sdk.models import ToolSpec  # noqa: E402
from tests.search_eval.dataset import is_development, load_queries, load_tools  # noqa: E402

COMMAND = ".venv/bin/python scripts/bench_fusion.py /work/bench-data/ToolLens"
WEIGHTS = (0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6)
RRF_K = (1, 5, 10, 60)
ADAPTIVE = [(a, b) for a in (0.1, 0.2, 0.3) for b in (0.1, 0.2, 0.3)]
EARLIER = "max, BM25 weight 0.3"
Scores = dict[str, float]


@dataclass(slots=True)
class Query:
    lexical: Scores
    dense: Scores
    expected: frozenset[str]
    share: float  # of the query's tokens that the index knows
    lang: str


Fuser = Callable[[Query], Scores]


def _queries(
    specs: dict[str, ToolSpec], asked: list[tuple[str, frozenset[str], str]], model: UseEmbedder
) -> list[Query]:
    index = SearchIndex()
    for key, spec in specs.items():
        index.add(key, tool_tokens(spec))
    keys = list(specs)
    documents = model.embed([embedding_text(spec) for spec in specs.values()])
    texts = [text for text, _, _ in asked]
    vectors = np.concatenate([model.embed(texts[i : i + 256]) for i in range(0, len(texts), 256)])
    found = []
    for (text, expected, lang), vector in zip(asked, vectors, strict=True):
        tokens = tokenize(text)
        known = sum(1 for token in tokens if index.idf(token) > 0)
        found.append(
            Query(
                lexical={h.key: h.score for h in index.search(tokens, len(keys)).hits},
                dense=dict(zip(keys, (documents @ vector).tolist(), strict=True)),
                expected=expected,
                share=known / len(tokens) if tokens else 0.0,
                lang=lang,
            )
        )
    return found


def datasets(data: Path, model: UseEmbedder) -> dict[str, list[Query]]:
    """ToolLens's training sample and test split, our development and test halves."""
    bench = load(data)
    sample = random.Random(SEED).sample(sorted(bench.train), min(TRAIN_SAMPLE, len(bench.train)))
    sets = {
        name: _queries(bench.specs, [(bench.queries[q], qrels[q], "en") for q in ids], model)
        for name, ids, qrels in (
            ("toollens dev", sample, bench.train),
            ("toollens test", list(bench.test), bench.test),
        )
    }
    specs = {spec.name: spec for spec in load_tools()}
    for name, development in (("ours dev", True), ("ours test", False)):
        asked = [
            (q.query, q.expected, q.lang)
            for q in load_queries()
            if is_development(q) == development
        ]
        sets[name] = _queries(specs, asked, model)
    return sets


def _candidates(query: Query) -> list[str]:
    best = sorted(query.dense.values(), reverse=True)[:DENSE_CANDIDATES]
    return list(set(query.lexical) | {k for k, s in query.dense.items() if s >= best[-1]})


def by_max(weight: float) -> Fuser:
    def fused(query: Query) -> Scores:
        top_lexical = max(query.lexical.values(), default=0.0) or 1.0
        top_dense = max(max(query.dense.values()), 0.0) or 1.0
        return {
            key: weight * query.lexical.get(key, 0.0) / top_lexical
            + (1 - weight) * max(query.dense[key], 0.0) / top_dense
            for key in _candidates(query)
        }

    return fused


def by_min_max(weight: float) -> Fuser:
    def scaled(values: list[float]) -> list[float]:
        low, high = min(values), max(values)
        return [(v - low) / (high - low) if high > low else 1.0 for v in values]

    def fused(query: Query) -> Scores:
        keys = _candidates(query)
        lexical = scaled([query.lexical.get(key, 0.0) for key in keys])
        dense = scaled([query.dense[key] for key in keys])
        return {
            k: weight * x + (1 - weight) * y for k, x, y in zip(keys, lexical, dense, strict=True)
        }

    return fused


def by_rank(k: int) -> Fuser:
    def fused(query: Query) -> Scores:
        keys = set(_candidates(query))
        scores = dict.fromkeys(keys, 0.0)
        for ranking in (order(query.lexical), order({k: query.dense[k] for k in keys})):
            for rank, key in enumerate(ranking, 1):
                scores[key] += 1 / (k + rank)
        return scores

    return fused


def adaptive(of: Callable[[float], Fuser], a: float, b: float) -> Fuser:
    return lambda query: of(min(a + b * query.share, 1.0))(query)


def by_z(weight: float) -> Fuser:
    return lambda query: fuse(query.lexical, query.dense, weight)


def variants() -> dict[str, Fuser]:
    found: dict[str, Fuser] = {"BM25 alone": lambda query: query.lexical}
    for name, of in (("max", by_max), ("min-max", by_min_max), ("z-score", by_z)):
        found |= {f"{name}, BM25 weight {w}": of(w) for w in WEIGHTS}
    found |= {f"reciprocal rank, k={k}": by_rank(k) for k in RRF_K}
    for name, of in (("max", by_max), ("z-score", by_z)):
        found |= {f"{name}, BM25 weight {a} + {b} × share": adaptive(of, a, b) for a, b in ADAPTIVE}
    return found


def ndcg(fused: Fuser, queries: list[Query], lang: str = "") -> float:
    return fmean(
        ndcg_at_10(order(fused(q)), q.expected) for q in queries if not lang or q.lang == lang
    )


def run(data: Path) -> list[str]:
    sets = datasets(data, UseEmbedder())
    tried = variants()
    dev: dict[str, tuple[float, ...]] = {}
    for label, fused in tried.items():
        tl, ours = ndcg(fused, sets["toollens dev"]), ndcg(fused, sets["ours dev"])
        en, zh = (ndcg(fused, sets["ours dev"], lang) for lang in ("en", "zh"))
        dev[label] = (tl, ours, en, zh, (tl + ours) / 2)
    floor = dev[EARLIER][3]
    allowed = [label for label in dev if label != "BM25 alone" and dev[label][3] >= floor]
    pick = max(allowed, key=lambda label: dev[label][4])
    lines = [
        f"Development: {len(sets['toollens dev'])} ToolLens training queries (seeded sample), "
        f"{len(sets['ours dev'])} queries of our set's development half. NDCG@10; "
        "'mean' is the mean of the two sets; the pick is the best mean whose Chinese "
        f"is at least the earlier ranking's ({floor:.3f}).",
        "",
        "| fusion | ToolLens train | ours dev | ours dev en | ours dev zh | mean |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, row in dev.items():
        cells = " | ".join(f"{value:.3f}" for value in row)
        marked = f"**{label}** (pick)" if label == pick else label
        lines.append(f"| {marked}{' (earlier)' if label == EARLIER else ''} | {cells} |")
    shipped = f"shipped fuse (z-score, BM25 weight {LEXICAL_WEIGHT})"
    reported = {"BM25 alone": tried["BM25 alone"], f"earlier: {EARLIER}": tried[EARLIER]}
    reported |= {f"pick: {pick}": tried[pick], shipped: by_z(LEXICAL_WEIGHT)}
    counts = Counter(q.lang for q in sets["ours test"])
    lines += [
        "",
        f"Test: {len(sets['toollens test'])} ToolLens test queries, "
        f"{len(sets['ours test'])} of our test half. NDCG@10:",
        "",
        "| ranking | ToolLens test | ours test | "
        + " | ".join(f"{lang} (n={counts[lang]})" for lang in ("en", "zh", "mixed"))
        + " |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, fused in reported.items():
        by_lang = [ndcg(fused, sets["ours test"], lang) for lang in ("", "en", "zh", "mixed")]
        cells = " | ".join(f"{v:.3f}" for v in [ndcg(fused, sets["toollens test"]), *by_lang])
        lines.append(f"| {label} | {cells} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "data", type=Path, help="the datasets/ToolLens folder (as bench_tool_retrieval)"
    )
    parser.add_argument("--no-write", action="store_true", help="print, leave benchmarks.md be")
    args = parser.parse_args()
    lines = run(args.data)
    print("\n".join(lines))
    if not args.no_write:
        heading = "## Tool search: choosing the fusion of BM25 and embeddings"
        source = f"Command: `{COMMAND}`. Model: {UseEmbedder.model_id} (the `semantic` extra)."
        write_section(
            "fusion", "\n".join([heading, "", source, "", machine_line(), load_line(), "", *lines])
        )


if __name__ == "__main__":
    main()
