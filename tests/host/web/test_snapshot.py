"""EventTracker: what the console learns from events alone, reloads and restarts."""

from __future__ import annotations

from plughost.events import EventKind, LifecycleEvent
from plughost.web.snapshot import EventTracker


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _restarted(at: float, *plugins: str) -> LifecycleEvent:
    details = {"plugins": list(plugins)}
    return LifecycleEvent(EventKind.RUNNER_RESTARTED, "ready", None, "r-2", details, at)


def test_restarts_since_start_outlive_the_restart_window_while_recent_ones_expire() -> None:
    clock = Clock()
    tracker = EventTracker(60.0, clock=clock)
    tracker.observe(_restarted(clock.now, "p"))
    clock.now += 30
    tracker.observe(_restarted(clock.now, "p"))

    assert tracker.restarts("p")["total"] == 2
    assert tracker.restarts("p")["recent"] == 2
    clock.now += 45  # the first is out of the window, the second is not
    assert tracker.restarts("p")["recent"] == 1
    clock.now += 3600
    later = tracker.restarts("p")
    assert later["total"] == 2
    assert later["recent"] == 0
    assert later["last"] == 1_000_030.0


def test_a_restart_counts_for_every_plugin_its_runner_serves_and_no_other() -> None:
    tracker = EventTracker(60.0)
    tracker.observe(_restarted(1.0, "a", "b"))

    assert tracker.restarts("a")["total"] == tracker.restarts("b")["total"] == 1
    assert tracker.restarts("c") == {"total": 0, "recent": 0, "window_s": 60.0, "last": None}
