"""Paths the sandbox refused a runner's plugins, as the runner reports them.

The runner tags the log record of a refused file access with the directory an
operator would grant (``plughost_runner.process.limits``); the host turns it into a
``sandbox.denied`` event with that grant, the console's grant button and
learn mode's ``[host.write_grants]``. The report comes from a runner, so from
plugin code: it is believed only as far as it goes, a suggestion the operator
reads and decides on. It must name a plugin that runner serves and an
absolute path of printable characters; repeats are reported once a minute,
and at most :data:`MAX_PATHS` distinct paths are remembered.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

__all__ = ["MAX_PATHS", "PathRefusals", "write_grant"]

MAX_PATHS = 1024
_REPEAT_SECONDS = 60.0
_MAX_PATH_CHARS = 4096


def write_grant(path: object) -> str | None:
    """``path`` as a write grant, or None when it is not one a host should show."""
    if not isinstance(path, str) or not path.startswith("/") or len(path) > _MAX_PATH_CHARS:
        return None
    if not path.isprintable():  # it reaches logs, events and a button's label
        return None
    return path


@dataclass(slots=True)
class PathRefusals:
    """Refused paths by plugin, counted; which of them to report now."""

    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    _reported: dict[tuple[str, str], float] = field(default_factory=dict)

    def note(self, plugin_id: str, path: str) -> bool:
        """Count one refusal; True when it should be reported (first in its minute)."""
        key = (plugin_id, path)
        if key in self.counts or len(self.counts) < MAX_PATHS:
            self.counts[key] += 1
        now = time.monotonic()
        if now - self._reported.get(key, -_REPEAT_SECONDS) < _REPEAT_SECONDS:
            return False
        if len(self._reported) >= MAX_PATHS:
            self._reported.clear()
        self._reported[key] = now
        return True

    def paths(self, plugin_id: str) -> list[str]:
        """The paths refused to ``plugin_id``, each as a write grant."""
        return sorted(path for plugin, path in self.counts if plugin == plugin_id)
