"""What a runner's plugins have put on disk, counted by the host against ``limits.disk_mb``.

A plugin writes its data directory and, through its copy-on-write folder view
(:func:`plughost.runners.sandbox.folder_views`), the upper layer the host
keeps for it. Neither is a filesystem of its own, so no kernel quota applies:
the runner gets ``RLIMIT_FSIZE`` (no one file past the quota) and the host
adds up the rest here, at most every :data:`CHECK_SECONDS`, from ``lstat``
alone (a plugin's symlink is counted, never followed). Each entry counts as
at least one block, so a plugin that makes a million empty files is over its
quota long before a scan of them costs the host anything: a scan stops at the
first byte past the limit.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["CHECK_SECONDS", "DiskMeter"]

CHECK_SECONDS = 3.0
_BLOCK = 4096


@dataclass(slots=True)
class DiskMeter:
    """The disk used under ``paths``, measured at most every ``CHECK_SECONDS``."""

    paths: Sequence[str]
    limit: int  # bytes
    _checked: float = field(default=float("-inf"))
    used: int = 0

    def due(self, now: float) -> bool:
        """Whether a scan is due (checked on the event loop: no thread for a tick)."""
        return now - self._checked >= CHECK_SECONDS

    def over_limit(self, now: float) -> str:
        """Why the plugins are over their quota, or ``""``; rescans when a check is due."""
        if not self.due(now):
            return ""
        self._checked = now
        self.used = measure(self.paths, self.limit)
        if self.used <= self.limit:
            return ""
        return (
            f"disk quota exceeded: its plugins wrote more than {self.limit / 2**20:.0f} MiB "
            f"to their data directories and folders (limits.disk_mb); delete what they "
            f"wrote under {', '.join(self.paths)} or raise the quota for them in "
            "[plugin_limits.<id>] disk_mb"
        )


def measure(paths: Sequence[str], stop_after: int) -> int:
    """Bytes used under ``paths``, counting no further than just past ``stop_after``."""
    total = 0
    pending = list(paths)
    while pending:
        try:
            entries = os.scandir(pending.pop())
        except OSError:
            continue  # gone, or not a directory
        with entries:
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                total += max(_BLOCK, info.st_blocks * 512)
                if total > stop_after:
                    return total
                if stat.S_ISDIR(info.st_mode):
                    pending.append(entry.path)
    return total
