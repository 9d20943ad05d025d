"""Which folders the plugin watcher watches: the plugin trees, never through a link, bounded.

A recursive watch (``watchfiles``, ``notify``) follows symbolic links: a plugin
folder holding ``docs -> /usr`` had the host add an inotify watch for each of
the 15,000 folders there, on its event loop, using up the watches the user has,
and report every change there as a change of that plugin. So the watcher
watches each folder on its own (not recursively), and the folders are found
here: the roots, each plugin folder in them (an operator's link to a plugin
folder is followed: the operator placed it), and the real folders below a
plugin folder, never through a link and never into a folder whose events are
ignored anyway (``__pycache__``, ``.git``, ``.venv``, ``node_modules``...), at
most :data:`MAX_FOLDERS` in all, found among at most :data:`MAX_ENTRIES`
entries (the walk runs on the event loop, so it is bounded). When a folder appears or goes
(:func:`reshaped`), the watcher finds them again.

What does not live here: the watch itself and what a change means
(:mod:`plughost.plugins.watcher`).
"""

from __future__ import annotations

import itertools
import logging
import os
import stat
from collections import deque
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Final

from plughost.plugins.source import is_plugin_dir

__all__ = ["MAX_ENTRIES", "MAX_FOLDERS", "SKIPPED_FOLDERS", "reshaped", "watched_folders"]

log = logging.getLogger(__name__)

MAX_FOLDERS: Final = 4096
"""Folders watched in all: the roots and their plugin folders always, folders below them
up to this count (the rest go unwatched, with a warning)."""
MAX_ENTRIES: Final = 65_536
"""Entries (files and folders) looked at below the plugin folders to find those folders."""
SKIPPED_FOLDERS: Final = frozenset(
    {
        "__pycache__",
        ".git",
        ".hg",
        ".svn",
        ".mypy_cache",
        ".pytest_cache",
        ".hypothesis",
        ".tox",
        ".idea",
        ".venv",
        "node_modules",
    }
)
"""Folders never watched: their changes are never a plugin's (watchfiles ignores them too)."""


def watched_folders(roots: Iterable[Path]) -> list[Path]:
    """The roots, their plugin folders, and the real folders below those, breadth first."""
    found: list[Path] = []
    trees: deque[Path] = deque()
    for root in roots:
        found.append(root)
        if is_plugin_dir(root):
            trees.append(root)
            continue
        for child in _entries(root, None):
            if not child.name.startswith((".", "_")) and child.is_dir():  # an operator's link too
                found.append(Path(child.path))
                trees.append(Path(child.path))
    budget = MAX_ENTRIES
    while trees:
        folder = trees.popleft()
        entries = _entries(folder, budget)
        budget -= len(entries)
        for entry in entries:
            if entry.name in SKIPPED_FOLDERS or not entry.is_dir(follow_symlinks=False):
                continue
            if len(found) >= MAX_FOLDERS:
                return _cut(found, f"{MAX_FOLDERS} folders", entry.path)
            found.append(Path(entry.path))
            trees.append(Path(entry.path))
        if budget <= 0:
            return _cut(found, f"{MAX_ENTRIES:,} entries", folder)
    return found


def _cut(found: list[Path], bound: str, where: str | Path) -> list[Path]:
    log.warning(
        "the plugin directories hold more than %s; changes below %s are not watched (a "
        "plugin there is reloaded by saving its manifest or plugin.py)",
        bound,
        where,
    )
    return found


def reshaped(paths: Iterable[Path], folders: Collection[Path], roots: Collection[Path]) -> bool:
    """Whether among changed ``paths`` a watched folder went or a folder to watch appeared."""
    for path in paths:
        if path in folders:
            return True
        if path.name in SKIPPED_FOLDERS:
            continue
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if stat.S_ISDIR(mode) or (path.parent in roots and path.is_dir()):
            return True
    return False


def _entries(folder: Path, most: int | None) -> list[os.DirEntry[str]]:
    """The entries of ``folder`` by name (at most ``most`` of them, in the folder's order)."""
    try:
        with os.scandir(folder) as entries:
            return sorted(itertools.islice(entries, most), key=lambda e: e.name)
    except OSError:
        return []
