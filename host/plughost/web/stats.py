"""Per-plugin call statistics over the last minutes: rates, p50/p99 and chart series.

Every call through the registry is recorded under its source (the plugin id,
or the provider's name for built-in and MCP tools) in fixed time buckets; the
console asks for a summary once a second. Only ``window`` seconds are kept,
and each bucket keeps at most ``_SAMPLES`` latencies, so memory stays bounded
however busy the host is.
"""

from __future__ import annotations

import collections
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CallStats"]

_SAMPLES = 2000


@dataclass(slots=True)
class _Bucket:
    start: float
    calls: int = 0
    errors: int = 0
    latencies: list[float] = field(default_factory=list)


class CallStats:
    """Rolling call counts and latencies per source."""

    def __init__(
        self, *, window: float = 300.0, bucket: float = 5.0, clock: Callable[[], float] = time.time
    ) -> None:
        if bucket <= 0 or window < bucket:
            raise ValueError("bucket must be positive and no longer than window")
        self._window = window
        self._bucket = bucket
        self._clock = clock
        self._buckets: dict[str, collections.deque[_Bucket]] = {}

    def record(self, source: str, seconds: float, ok: bool) -> None:
        """Count one call of ``source`` that took ``seconds`` and succeeded or not."""
        now = self._clock()
        start = now - now % self._bucket
        buckets = self._buckets.setdefault(source, collections.deque())
        if not buckets or buckets[-1].start != start:
            buckets.append(_Bucket(start))
        current = buckets[-1]
        current.calls += 1
        current.errors += 0 if ok else 1
        if len(current.latencies) < _SAMPLES:
            current.latencies.append(seconds)
        self._prune(buckets, now)

    def _prune(self, buckets: collections.deque[_Bucket], now: float) -> None:
        while buckets and buckets[0].start <= now - self._window - self._bucket:
            buckets.popleft()

    def sources(self) -> list[str]:
        """Every source seen in the window."""
        return sorted(self._buckets)

    def summary(self, source: str) -> dict[str, Any]:
        """Calls and errors in the last minute, their p50/p99 (ms), and a series for charts.

        The series has one point per bucket over the whole window, oldest first,
        with empty buckets as zeros, ready for a chart.
        """
        now = self._clock()
        buckets = self._buckets.get(source, collections.deque())
        self._prune(buckets, now)
        minute = [b for b in buckets if b.start > now - 60.0]
        latencies = sorted(x for b in minute for x in b.latencies)
        by_start = {b.start: b for b in buckets}
        first = now - now % self._bucket - self._window + self._bucket
        series = []
        for i in range(int(self._window // self._bucket)):
            start = first + i * self._bucket
            found = by_start.get(start)
            series.append(
                {
                    "t": start,
                    "calls": found.calls if found else 0,
                    "errors": found.errors if found else 0,
                    "p50_ms": _ms(_quantile(sorted(found.latencies), 0.5)) if found else None,
                }
            )
        calls = sum(b.calls for b in minute)
        errors = sum(b.errors for b in minute)
        return {
            "calls_per_minute": calls,
            "errors_per_minute": errors,
            "p50_ms": _ms(_quantile(latencies, 0.5)),
            "p99_ms": _ms(_quantile(latencies, 0.99)),
            "bucket_seconds": self._bucket,
            "series": series,
        }


def _quantile(ordered: list[float], q: float) -> float | None:
    """The nearest-rank quantile of sorted values."""
    if not ordered:
        return None
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000.0, 2)
