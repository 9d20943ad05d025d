"""An Okapi BM25 index over token lists that changes one document at a time.

Why not ``rank_bm25``: its ``BM25Okapi`` gives a term found in exactly half of
the documents an IDF of zero (and a negative one above half, floored to a small
epsilon), so in a catalog of two tools a word that names one of them scores
nothing, and its other variants and ``bm25s`` rebuild the whole index to
change one document. ``scripts/bench_search.py`` measures these against this
index on the same data; see docs/benchmarks.md.

The index here is an inverted index of plain dicts:

- IDF is Lucene's ``log(1 + (N - df + 0.5) / (df + 0.5))``, which is positive
  for every term that occurs at all, however small the corpus;
- a document that shares no term with the query scores exactly 0 and is never
  returned;
- adding, replacing or removing a document touches only that document's terms;
  the per-document length norms are recomputed lazily, once per change, on the
  next search;
- ties are broken by key, so the same query over the same documents always
  gives the same order.

Tokenizing lives in :mod:`plughost.search.text`; which documents exist is the
catalog's business (:mod:`plughost.search.catalog`).
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass

__all__ = ["IndexHit", "IndexResult", "SearchIndex"]


@dataclass(frozen=True, slots=True)
class IndexHit:
    """One document that matched, with its BM25 score (always > 0)."""

    key: str
    score: float


@dataclass(frozen=True, slots=True)
class IndexResult:
    """The best hits of one search and how many documents matched in all."""

    hits: tuple[IndexHit, ...]
    total: int


class SearchIndex:
    """BM25 over documents keyed by a string, updated incrementally.

    Args:
        k1: Term-frequency saturation; 1.2 is the usual default.
        b: Length normalisation; tool documents vary a lot in length, and 0.75
            keeps a long description from drowning a short one.
    """

    def __init__(self, *, k1: float = 1.2, b: float = 0.75) -> None:
        if k1 < 0 or not 0 <= b <= 1:
            raise ValueError("BM25 needs k1 >= 0 and 0 <= b <= 1")
        self._k1 = k1
        self._b = b
        self._postings: dict[str, dict[str, int]] = {}
        self._terms: dict[str, tuple[str, ...]] = {}
        self._lengths: dict[str, int] = {}
        self._total_length = 0
        self._norms: dict[str, float] | None = None

    def __len__(self) -> int:
        return len(self._lengths)

    def __contains__(self, key: object) -> bool:
        return key in self._lengths

    def add(self, key: str, tokens: Iterable[str]) -> None:
        """Index ``tokens`` under ``key``, replacing any document already there."""
        self.remove(key)
        counts = Counter(tokens)
        for term, count in counts.items():
            self._postings.setdefault(term, {})[key] = count
        length = sum(counts.values())
        self._terms[key] = tuple(counts)
        self._lengths[key] = length
        self._total_length += length
        self._norms = None

    def remove(self, key: str) -> bool:
        """Drop the document ``key``; False if there was none."""
        terms = self._terms.pop(key, None)
        if terms is None:
            return False
        for term in terms:
            posting = self._postings[term]
            del posting[key]
            if not posting:
                del self._postings[term]
        self._total_length -= self._lengths.pop(key)
        self._norms = None
        return True

    def idf(self, term: str) -> float:
        """The inverse document frequency of ``term``; 0 for a term never seen."""
        df = len(self._postings.get(term, ()))
        if df == 0:
            return 0.0
        return math.log(1.0 + (len(self._lengths) - df + 0.5) / (df + 0.5))

    def search(
        self,
        query: Sequence[str],
        limit: int,
        *,
        within: Container[str] | None = None,
    ) -> IndexResult:
        """Rank documents for ``query`` by BM25, best first, ties by key.

        Args:
            query: Query tokens; a repeated token weighs more.
            limit: How many hits to return at most.
            within: Only these keys may match (one chat's catalog); None for all.

        Returns:
            Up to ``limit`` hits with a score above 0, and how many matched.
        """
        scores = self._scores(query, within)
        if limit <= 0 or not scores:
            return IndexResult(hits=(), total=len(scores))
        best = heapq.nsmallest(limit, scores.items(), key=lambda item: (-item[1], item[0]))
        return IndexResult(
            hits=tuple(IndexHit(key, score) for key, score in best), total=len(scores)
        )

    def _scores(self, query: Sequence[str], within: Container[str] | None) -> dict[str, float]:
        norms = self._length_norms()
        k1_plus_1 = self._k1 + 1.0
        scores: dict[str, float] = {}
        for term, weight in Counter(query).items():
            posting = self._postings.get(term)
            if not posting:
                continue
            idf = self.idf(term) * weight
            for key, tf in posting.items():
                if within is not None and key not in within:
                    continue
                gain = idf * tf * k1_plus_1 / (tf + norms[key])
                scores[key] = scores.get(key, 0.0) + gain
        return scores

    def _length_norms(self) -> dict[str, float]:
        """``k1 * (1 - b + b * length / average length)`` per document, cached."""
        if self._norms is None:
            count = len(self._lengths)
            average = self._total_length / count if count else 0.0
            k1, b = self._k1, self._b
            self._norms = {
                key: k1 * (1.0 - b + (b * length / average if average else 0.0))
                for key, length in self._lengths.items()
            }
        return self._norms
