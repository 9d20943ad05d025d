"""Watching a plugins folder by polling, for filesystems that send no change events.

Bind mounts edited from the other side, network shares and some container
volumes deliver no inotify events, so a remote runner started with
``--watch-poll`` looks at the folder itself: every interval it notes each
file's modification time and size, and reports the paths whose note changed.

Why not watchfiles' own polling (``force_polling``): its first look at the
folder is taken on a thread some time after the watch starts, so an edit made
in that window (right after the runner joined) was never seen. Here the first
look is taken before :meth:`Poller.start` returns, which the runner awaits
before it reports ready. A change is reported once a further look finds
nothing more changing, so a folder being copied in arrives whole.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

__all__ = ["Poller", "snapshot"]

Snapshot = dict[str, tuple[int, int]]


def snapshot(root: Path) -> Snapshot:
    """Each file under ``root``: its modification time (ns) and size; unreadable ones left out."""
    state: Snapshot = {}
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [d for d in subfolders if d != "__pycache__"]
        for name in files:
            path = os.path.join(folder, name)
            try:
                stat = os.stat(path)
            except OSError:
                continue  # gone between the listing and the look, or not readable
            state[path] = (stat.st_mtime_ns, stat.st_size)
    return state


def _changed(before: Snapshot, after: Snapshot) -> set[str]:
    return {path for path in before.keys() | after.keys() if before.get(path) != after.get(path)}


class Poller:
    """Looks at a folder every ``interval`` seconds and yields the paths that changed."""

    def __init__(self, root: Path, interval: float) -> None:
        self._root = root
        self._interval = interval
        self._state: Snapshot = {}

    async def start(self) -> None:
        """Take the first look: changes are counted from here."""
        self._state = await asyncio.to_thread(snapshot, self._root)

    async def batches(self) -> AsyncIterator[set[str]]:
        """The changed paths, a set per settled change; runs until cancelled."""
        while True:
            await asyncio.sleep(self._interval)  # the polling period, not synchronisation
            now = await asyncio.to_thread(snapshot, self._root)
            paths = _changed(self._state, now)
            while paths:
                await asyncio.sleep(self._interval)
                later = await asyncio.to_thread(snapshot, self._root)
                more = _changed(now, later)
                now = later
                if not more:
                    break
                paths |= more
            self._state = now
            if paths:
                yield paths
