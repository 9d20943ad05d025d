"""When to restart a crashed runner, and when to give up.

Restart intensity in the manner of OTP supervisors: at most ``max_restarts``
crashes within ``restart_window`` seconds, with an exponential backoff between
attempts. A runner that stayed up longer than the window has its record
cleared, so a plugin that crashes once a day is never given up on.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable

from plughost.settings import RunnerSettings

__all__ = ["RestartPolicy"]


class RestartPolicy:
    """Counts crashes in a sliding window and hands out restart delays."""

    def __init__(
        self, settings: RunnerSettings, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._settings = settings
        self._clock = clock
        self._crashes: collections.deque[float] = collections.deque()

    def next_delay(self) -> float | None:
        """Record a crash; return the delay before restarting, or None to give up."""
        now = self._clock()
        window = self._settings.restart_window
        while self._crashes and now - self._crashes[0] > window:
            self._crashes.popleft()
        self._crashes.append(now)
        if len(self._crashes) > self._settings.max_restarts:
            return None
        delay = self._settings.backoff_initial * 2 ** (len(self._crashes) - 1)
        return float(min(self._settings.backoff_max, delay))

    @property
    def recent_crashes(self) -> int:
        """Crashes counted in the current window."""
        return len(self._crashes)

    def on_probation(self) -> bool:
        """Whether a crash still counts, so the next start is one of a crashing plugin."""
        now = self._clock()
        return any(now - crashed <= self._settings.restart_window for crashed in self._crashes)

    def reset(self) -> None:
        """Forget every crash (after a successful reload)."""
        self._crashes.clear()
