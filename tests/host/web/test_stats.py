"""CallStats: per-minute counts, p50/p99 and a chart series over a fixed window."""

from __future__ import annotations

import pytest

from plughost.web.stats import CallStats


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_summary_counts_calls_and_errors_of_the_last_minute_only() -> None:
    clock = Clock()
    stats = CallStats(window=600, bucket=10, clock=clock)
    stats.record("a", 0.5, ok=False)
    clock.now += 120
    for _ in range(3):
        stats.record("a", 0.01, ok=True)
    stats.record("a", 0.02, ok=False)

    summary = stats.summary("a")

    assert summary["calls_per_minute"] == 4
    assert summary["errors_per_minute"] == 1


def test_quantiles_are_nearest_rank_in_milliseconds() -> None:
    stats = CallStats(clock=Clock())
    for ms in range(1, 101):
        stats.record("a", ms / 1000, ok=True)

    summary = stats.summary("a")

    assert summary["p50_ms"] == 50.0
    assert summary["p99_ms"] == 99.0


def test_series_has_one_point_per_bucket_with_the_newest_last() -> None:
    clock = Clock(1_000_005.0)
    stats = CallStats(window=60, bucket=10, clock=clock)
    stats.record("a", 0.004, ok=True)
    clock.now += 10
    stats.record("a", 0.002, ok=False)
    stats.record("a", 0.002, ok=True)

    series = stats.summary("a")["series"]

    assert len(series) == 6
    assert [p["calls"] for p in series] == [0, 0, 0, 0, 1, 2]
    assert [p["errors"] for p in series] == [0, 0, 0, 0, 0, 1]
    assert series[-1]["p50_ms"] == 2.0
    assert series[0]["p50_ms"] is None


def test_calls_older_than_the_window_are_forgotten() -> None:
    clock = Clock()
    stats = CallStats(window=60, bucket=10, clock=clock)
    stats.record("a", 0.1, ok=True)
    clock.now += 200

    summary = stats.summary("a")

    assert summary["calls_per_minute"] == 0
    assert all(p["calls"] == 0 for p in summary["series"])
    assert summary["p50_ms"] is None


def test_a_source_never_called_has_an_empty_summary() -> None:
    summary = CallStats().summary("nobody")

    assert summary["calls_per_minute"] == 0
    assert summary["p99_ms"] is None


def test_bucket_longer_than_the_window_is_refused() -> None:
    with pytest.raises(ValueError, match="bucket"):
        CallStats(window=5, bucket=10)


def test_an_idle_bucket_between_calls_has_no_latency_so_the_chart_can_leave_a_gap() -> None:
    clock = Clock(1_000_000.0)
    stats = CallStats(window=60, bucket=10, clock=clock)
    stats.record("a", 0.004, ok=True)
    clock.now += 30  # two buckets without a call
    stats.record("a", 0.002, ok=True)

    series = stats.summary("a")["series"]

    assert [p["calls"] for p in series[-4:]] == [1, 0, 0, 1]
    assert [p["p50_ms"] for p in series[-4:]] == [4.0, None, None, 2.0]
