"""Tools used together: what a host's conversations called side by side, and the lift it gives.

A request often needs several tools that share no words with it (a recipe
question also needs the nutrition and grocery tools). :class:`CoUsage` learns
which deferred tools conversations call together; :meth:`CoUsage.spread` then
lets each of the best-ranked tools of a search pass part of its score to the
tools it was used with. On ToolLens, with its training queries as the
conversations, this doubled the share of queries whose every tool is in the
first five (scripts/bench_tool_retrieval.py); with no history it changes
nothing.

Tools are known by name, which survives a plugin reload. Memory is bounded:
the last :data:`MAX_SESSIONS` conversations are remembered, each up to
:data:`MAX_TOOLS_PER_SESSION` tools; counts already made stay.

What does not live here: the ranking it adjusts (:mod:`plughost.search.catalog`),
where calls are seen (:mod:`plughost.search.service`).
"""

from __future__ import annotations

import heapq
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["MAX_SESSIONS", "MAX_TOOLS_PER_SESSION", "SEEDS", "STRENGTH", "CoUsage"]

MAX_SESSIONS = 4096
MAX_TOOLS_PER_SESSION = 64
SEEDS = 3
"""How many of the best-ranked tools pass score on to the tools used with them."""
STRENGTH = 0.8
"""The share of a seed's score passed on, times how often the two went together.

Chosen on ToolLens's training queries (scripts/bench_tool_retrieval.py)."""
PRIOR = 2
"""Uses added to every tool's count, so that one conversation is not taken as a rule."""


class CoUsage:
    """Which tools conversations used together; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, set[str]] = OrderedDict()
        self._uses: Counter[str] = Counter()
        self._pairs: dict[str, Counter[str]] = {}

    def __bool__(self) -> bool:
        return bool(self._pairs)

    def record(self, session_id: str, tool: str) -> None:
        """Note that conversation ``session_id`` used ``tool`` (again, or for the first time)."""
        with self._lock:
            seen = self._sessions.pop(session_id, None) or set()
            self._sessions[session_id] = seen
            if len(self._sessions) > MAX_SESSIONS:
                self._sessions.popitem(last=False)
            if tool in seen or len(seen) >= MAX_TOOLS_PER_SESSION:
                return
            self._uses[tool] += 1
            for other in seen:
                self._pairs.setdefault(tool, Counter())[other] += 1
                self._pairs.setdefault(other, Counter())[tool] += 1
            seen.add(tool)

    def export(self) -> dict[str, Any]:
        """The counts as a JSON-able dict that :meth:`restore` reads back.

        The shape is ``{"uses": {tool: n}, "pairs": {tool: {other: n}}}``; which
        conversation called what is not kept, only what was counted.
        """
        with self._lock:
            return {
                "uses": dict(self._uses),
                "pairs": {tool: dict(others) for tool, others in self._pairs.items()},
            }

    def restore(self, data: Mapping[str, Any]) -> None:
        """Add the counts :meth:`export` produced (for instance before a restart).

        Raises:
            ValueError: If ``data`` is not in the exported shape; nothing is changed then.
        """
        uses = _counts(data.get("uses", {}), "'uses'")
        pairs = data.get("pairs", {})
        if not isinstance(pairs, Mapping):
            raise ValueError("used-together state: 'pairs' must map tool names to counts")
        counted = {tool: _counts(others, f"pairs of {tool!r}") for tool, others in pairs.items()}
        with self._lock:
            self._uses.update(uses)
            for tool, others in counted.items():
                self._pairs.setdefault(str(tool), Counter()).update(others)

    def neighbours(self, tool: str) -> dict[str, float]:
        """The tools used with ``tool``, each with how often (0..1, smoothed by :data:`PRIOR`)."""
        with self._lock:
            pairs = self._pairs.get(tool)
            if not pairs:
                return {}
            uses = self._uses[tool] + PRIOR
            return {other: count / uses for other, count in pairs.items()}

    def spread(
        self,
        scores: Mapping[str, float],
        name_of: Callable[[str], str],
        key_of: Callable[[str], str | None],
        strength: float = STRENGTH,
    ) -> dict[str, float]:
        """``scores`` with each of the :data:`SEEDS` best passing score to its neighbours.

        Args:
            scores: Candidates by key, higher is better.
            name_of: A key's tool name.
            key_of: A tool name's key among the tools that may rank, or None.
            strength: See :data:`STRENGTH`.
        """
        out = dict(scores)
        if not self or not strength:
            return out
        best = heapq.nsmallest(SEEDS, scores.items(), key=lambda item: (-item[1], item[0]))
        for seed, score in best:
            for other, share in self.neighbours(name_of(seed)).items():
                key = key_of(other)
                if key is not None and key != seed:
                    out[key] = out.get(key, 0.0) + strength * score * share
        return out


def _counts(value: object, what: str) -> Counter[str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(name, str) and isinstance(n, int) and not isinstance(n, bool) and n >= 0
        for name, n in value.items()
    ):
        raise ValueError(f"used-together state: {what} must map tool names to counts")
    return Counter(value)
