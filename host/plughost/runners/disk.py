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

Most plugins write a few files, if any: such a scan is a few ``lstat`` calls,
done on the event loop (:meth:`DiskMeter.over_limit_here`), since handing it
to a thread costs more than the scan (at fifty plugins, that hand-over was
most of what a resting host spent). A scan that meets more than
:data:`HERE_ENTRIES` entries is left to a thread (:meth:`DiskMeter.over_limit`),
so that no plugin's many files can stall the loop.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["CHECK_SECONDS", "HERE_ENTRIES", "DiskMeter"]

CHECK_SECONDS = 3.0
HERE_ENTRIES = 256  # entries a scan on the event loop may meet (~0.3 ms) before a thread takes it
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

    def over_limit_here(self, now: float) -> str | None:
        """:meth:`over_limit` where the scan meets at most :data:`HERE_ENTRIES` entries.

        None when it meets more: call :meth:`over_limit` in a thread then.
        """
        if not self.due(now):
            return ""
        used = measure(self.paths, self.limit, max_entries=HERE_ENTRIES)
        if used is None:
            return None
        return self._verdict(now, used)

    def over_limit(self, now: float) -> str:
        """Why the plugins are over their quota, or ``""``; rescans when a check is due."""
        if not self.due(now):
            return ""
        used = measure(self.paths, self.limit)
        assert used is not None  # no entry budget
        return self._verdict(now, used)

    def _verdict(self, now: float, used: int) -> str:
        self._checked, self.used = now, used
        if used <= self.limit:
            return ""
        return (
            f"disk quota exceeded: its plugins wrote more than {self.limit / 2**20:.0f} MiB "
            f"to their data directories and folders (limits.disk_mb); delete what they "
            f"wrote under {', '.join(self.paths)} or raise the quota for them in "
            "[plugin_limits.<id>] disk_mb"
        )


def measure(paths: Sequence[str], stop_after: int, *, max_entries: int | None = None) -> int | None:
    """Bytes used under ``paths``, counting no further than just past ``stop_after``.

    None when the scan met more than ``max_entries`` entries before it ended.
    """
    total = 0
    budget = max_entries
    pending = list(paths)
    while pending:
        try:
            entries = os.scandir(pending.pop())
        except OSError:
            continue  # gone, or not a directory
        with entries:
            for entry in entries:
                if budget is not None:
                    budget -= 1
                    if budget < 0:
                        return None
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
