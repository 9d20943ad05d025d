"""Tool embeddings kept beside the BM25 index, computed off the event loop and cached on disk.

A :class:`DenseIndex` holds one vector per document key, the same keys the
lexical :class:`~plughost.search.index.SearchIndex` uses (a tool's name plus a
digest of everything searched, so a key names one exact tool text):

- :meth:`DenseIndex.add` only records that a key is wanted; :meth:`DenseIndex.flush`
  hands every wanted key without a vector to one worker thread, which looks
  it up in the on-disk cache and embeds only the misses, in batches. Nothing
  waits for it: until a catalog's tools all have vectors its searches stay
  lexical, so a rebuild never blocks a call;
- the cache is an SQLite file per model id in ``cache_dir``, keyed by document
  key: a plugin reload embeds only the tools whose text changed, and a restart
  embeds nothing it embedded before;
- :meth:`DenseIndex.scores` embeds the query on the calling thread (a couple
  of milliseconds, BLAS on one thread) and returns cosine similarities for one
  catalog's keys; the model itself loads in the worker, so no search waits for it.

:func:`fuse` combines lexical and dense scores (each standardised over the
candidates, then weighted); the normalisation and the weight were chosen on
ToolLens's training queries and the development half of our evaluation set
(``scripts/bench_semantic.py``, ``scripts/bench_tool_retrieval.py``).

What does not live here: the model (:mod:`plughost.search.embedding`), which
tools exist (:mod:`plughost.search.catalog`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import sqlite3
import threading
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from plughost.search.embedding import Embedder, Vectors, one_blas_thread

__all__ = ["LEXICAL_WEIGHT", "DenseIndex", "EmbeddingStats", "fuse"]

log = logging.getLogger(__name__)

LEXICAL_WEIGHT = 0.35
"""Share of the BM25 score in the fused score; the dense score has the rest."""
DENSE_CANDIDATES = 50
"""The best dense matches added to the lexical matches before fusing."""
_BATCH = 64


@dataclass(slots=True)
class EmbeddingStats:
    """What the worker has done since the index was made."""

    embedded: int = 0
    """Texts run through the model."""
    cached: int = 0
    """Vectors read from the disk cache instead."""


class DenseIndex:
    """One vector per document key, filled in the background.

    Args:
        embedder: The model.
        cache_dir: Where the embeddings cache lives; None keeps vectors in
            memory only (a restart embeds everything again).
    """

    def __init__(self, embedder: Embedder, cache_dir: Path | None = None) -> None:
        self._embedder = embedder
        self._cache_path = (
            cache_dir / f"embeddings-{embedder.model_id}.sqlite3" if cache_dir else None
        )
        self._lock = threading.Lock()
        self._texts: dict[str, str] = {}  # wanted keys without a vector yet
        self._queued: set[str] = set()
        self._vectors: dict[str, Vectors] = {}
        self._worker = concurrent.futures.ThreadPoolExecutor(1, "plughost-embed")
        self._jobs: list[concurrent.futures.Future[None]] = []
        self._db: sqlite3.Connection | None = None  # used by the worker thread only
        self._stacked: tuple[Collection[str], Vectors] | None = None
        self.stats = EmbeddingStats()
        # The model loads in the worker too (about a second): when every vector comes
        # from the cache, the first query would otherwise load it on the event loop.
        self._loaded = threading.Event()
        self._jobs.append(self._worker.submit(self._load))

    def add(self, key: str, text: str) -> None:
        """Want a vector for ``key``; it is computed at the next :meth:`flush`."""
        with self._lock:
            if key not in self._vectors:
                self._texts[key] = text

    def remove(self, key: str) -> None:
        """Forget ``key`` and its vector (the disk cache keeps it for a later return)."""
        with self._lock:
            self._texts.pop(key, None)
            self._vectors.pop(key, None)

    def flush(self) -> None:
        """Send every wanted key without a vector to the worker; returns at once."""
        with self._lock:
            batch = {k: t for k, t in self._texts.items() if k not in self._queued}
            self._queued.update(batch)
        if batch:
            self._jobs = [job for job in self._jobs if not job.done()]
            self._jobs.append(self._worker.submit(self._fill, batch))

    async def wait(self) -> None:
        """Wait until every flushed key has its vector (or its job failed and was logged)."""
        while pending := [job for job in self._jobs if not job.done()]:
            await asyncio.wait([asyncio.wrap_future(job) for job in pending])

    def close(self) -> None:
        """Stop the worker; queued work is dropped, the one under way finishes."""
        for job in self._jobs:
            job.cancel()
        self._worker.submit(self._close_cache)
        self._worker.shutdown(wait=False)

    def ready(self, keys: Iterable[str]) -> bool:
        """Whether every one of ``keys`` has its vector."""
        vectors = self._vectors
        return all(key in vectors for key in keys)

    def scores(self, query: str, keys: Collection[str]) -> dict[str, float] | None:
        """Cosine similarity of ``query`` with each of ``keys``; None if one has no vector.

        None too until the model has loaded in the worker: a search never waits for it.
        """
        matrix = self._matrix(keys)
        if matrix is None or not self._loaded.is_set():
            return None
        if not keys:
            return {}
        with one_blas_thread():
            similarities = matrix @ self._embedder.embed([query])[0]
        return dict(zip(keys, similarities.tolist(), strict=True))

    def _matrix(self, keys: Collection[str]) -> Vectors | None:
        """The vectors of ``keys`` stacked, kept for the last key set asked (one catalog).

        A key's vector never changes (the key names one exact text), so the stack of a
        catalog snapshot stays right for as long as that snapshot is searched.
        """
        stacked = self._stacked
        if stacked is not None and stacked[0] is keys:
            return stacked[1]
        with self._lock:
            try:
                rows = [self._vectors[key] for key in keys]
            except KeyError:
                return None
        matrix = np.stack(rows) if rows else np.zeros((0, 1), dtype=np.float32)
        self._stacked = (keys, matrix)
        return matrix

    # --- the worker thread ---------------------------------------------------------------

    def _load(self) -> None:
        try:
            self._embedder.embed([])
        except Exception:
            log.exception("the tool search model failed to load; tool search stays lexical")
        else:
            self._loaded.set()

    def _fill(self, batch: dict[str, str]) -> None:
        try:
            found = self._read_cache(list(batch))
            self.stats.cached += len(found)
            self._store(found)
            missing = [key for key in batch if key not in found]
            for start in range(0, len(missing), _BATCH):
                keys = missing[start : start + _BATCH]
                vectors = self._embedder.embed([batch[key] for key in keys])
                self.stats.embedded += len(keys)
                computed = dict(zip(keys, vectors, strict=True))
                self._write_cache(computed)
                self._store(computed)
        except Exception:
            log.exception("tool embeddings failed; tool search stays lexical for these tools")
        finally:
            with self._lock:
                self._queued.difference_update(batch)

    def _close_cache(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _store(self, vectors: Mapping[str, Vectors]) -> None:
        with self._lock:
            for key, vector in vectors.items():
                if self._texts.pop(key, None) is not None:  # still wanted
                    self._vectors[key] = vector

    def _connection(self) -> sqlite3.Connection | None:
        if self._cache_path is None:
            return None
        if self._db is None:
            self._cache_path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self._cache_path)
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, vector BLOB)"
            )
        return self._db

    def _read_cache(self, keys: list[str]) -> dict[str, Vectors]:
        db = self._connection()
        found: dict[str, Vectors] = {}
        if db is None:
            return found
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT key, vector FROM embeddings WHERE key IN ({marks})"
            for key, blob in db.execute(query, chunk):
                found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def _write_cache(self, vectors: Mapping[str, Vectors]) -> None:
        db = self._connection()
        if db is None:
            return
        with db:
            db.executemany(
                "INSERT OR REPLACE INTO embeddings (key, vector) VALUES (?, ?)",
                [(key, np.asarray(v, dtype=np.float32).tobytes()) for key, v in vectors.items()],
            )


def fuse(
    lexical: Mapping[str, float], dense: Mapping[str, float], lexical_weight: float = LEXICAL_WEIGHT
) -> dict[str, float]:
    """Fuse scores: each side turned into z-scores over the candidates, then weighted.

    Candidates are the lexical matches and the :data:`DENSE_CANDIDATES` best
    dense matches; a candidate absent from ``lexical`` scores 0 there. The sum
    is rescaled so the best candidate scores 1 and the worst 0 (the order is
    that of the sum): a score stays comparable with the tools used together
    lift (:meth:`plughost.search.co_usage.CoUsage.spread`).
    """
    best_dense = sorted(dense.values(), reverse=True)[:DENSE_CANDIDATES]
    floor = best_dense[-1] if best_dense else 0.0
    keys = list(set(lexical) | {key for key, score in dense.items() if score >= floor})
    if not keys:
        return {}
    fused = lexical_weight * _standardised([lexical.get(key, 0.0) for key in keys]) + (
        1.0 - lexical_weight
    ) * _standardised([dense.get(key, 0.0) for key in keys])
    low, high = float(fused.min()), float(fused.max())
    scaled = (fused - low) / (high - low) if high > low else np.ones_like(fused)
    return dict(zip(keys, scaled.tolist(), strict=True))


def _standardised(scores: list[float]) -> npt.NDArray[np.float64]:
    """``scores`` less their mean, over their standard deviation (all 0 if they are equal)."""
    values = np.asarray(scores, dtype=np.float64)
    spread = float(values.std())
    return (values - values.mean()) / spread if spread > 0 else np.zeros_like(values)
