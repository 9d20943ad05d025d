"""Watch plugin directories and turn file events into per-plugin changes, nothing more.

Events are grouped by ``watchfiles`` (a batch ends after ``step`` ms without a
new event) and then by plugin folder. A change touching only ``config.toml``
is a config change; anything else in the folder is a source change; a folder
that appears or disappears is an addition or a removal. Editor droppings and
bytecode are ignored, and so are the files editors and tools make for a moment
while they save (``sed -i``'s ``sedXXXXXX``, vim's ``4913`` probe, JetBrains'
``___jb_tmp___``, Python's ``tempfile`` names) once they are gone: saving
``config.toml`` with any of them is a config change, as writing it in place is.
Each folder is watched on its own, never through a link below a plugin folder
(:mod:`plughost.plugins.watch_tree`). Polling mode is for filesystems that
deliver no events (Docker bind mounts, network shares). Hidden files (``.*``)
are ignored, and so are folders named ``_*`` or ``.*`` (the start-up scan skips
them too); this also makes ``.plughost-probe`` a safe file to touch when
checking that a watch is live.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from plughost.plugins.source import CONFIG_FILE, is_plugin_dir
from plughost.plugins.watch_tree import reshaped, watched_folders

__all__ = ["ChangeKind", "PluginChange", "PluginWatcher", "classify"]

log = logging.getLogger(__name__)

_IGNORED_SUFFIXES = (
    ".pyc",
    ".pyo",
    ".swp",
    ".swx",
    ".tmp",
    "~",
    ".bak",
    ".orig",
    ".kate-swp",
    "___jb_tmp___",
    "___jb_old___",
)
_IGNORED_PARTS = ("__pycache__", ".git", ".mypy_cache", ".pytest_cache")
_SAVE_PROBES = re.compile(
    r"""
    \d{4,5}                    # vim's probe that the folder is writable (4913, 5036, ...)
    | sed[A-Za-z0-9]{6}         # sed -i's temporary copy, renamed over the file
    | tmp[a-z0-9_]{8}           # tempfile.mkstemp's names (atomic writers in Python)
    | .+\.[A-Za-z0-9]{6}\.new  # kate and other KDE editors
    """,
    re.VERBOSE,
)
"""Names of files that exist only while an editor or tool saves another file."""


class ChangeKind(Enum):
    """What happened to a plugin folder."""

    SOURCE = "source"
    CONFIG = "config"
    ADDED = "added"
    REMOVED = "removed"


@dataclass(frozen=True, slots=True)
class PluginChange:
    """One plugin folder changed in one way."""

    path: Path
    kind: ChangeKind
    files: tuple[str, ...] = ()


class PluginWatcher:
    """Yields batches of :class:`PluginChange` for the watched plugin directories."""

    def __init__(
        self,
        dirs: Iterable[Path],
        *,
        step_ms: int = 50,
        debounce_ms: int = 400,
        force_polling: bool = False,
        poll_delay_ms: int = 250,
    ) -> None:
        self._dirs = [Path(d).resolve() for d in dirs]
        self._step = step_ms
        self._debounce = debounce_ms
        self._polling = force_polling
        self._poll_delay = poll_delay_ms
        self.active = asyncio.Event()
        """Set once the first batch of file events (of any file) has been seen."""

    async def changes(self) -> AsyncIterator[list[PluginChange]]:
        """Iterate over batches of plugin changes until cancelled."""
        roots = [d for d in self._dirs if d.exists()]
        if not roots:
            log.warning("nothing to watch: none of %s exists", [str(d) for d in self._dirs])
            return
        import watchfiles  # its Rust extension loads only for a host that watches

        while True:  # each folder on its own: a recursive watch would follow links out
            folders = watched_folders(roots)
            batches = watchfiles.awatch(
                *folders,
                step=self._step,
                debounce=self._debounce,
                force_polling=self._polling,
                poll_delay_ms=self._poll_delay,
                recursive=False,
                ignore_permission_denied=True,
            )
            async with contextlib.aclosing(batches):
                async for batch in batches:
                    self.active.set()
                    paths = {Path(path) for _, path in batch}
                    changes = classify(paths, self._dirs)
                    if changes:
                        yield changes
                    if reshaped(paths, set(folders), roots):
                        # Watch the new tree at once: closing this watch and opening the
                        # next never waits, so the changes just yielded are applied (their
                        # folders read) only once the new watch is in place: no gap.
                        break
                else:
                    return


def classify(paths: set[Path], roots: Iterable[Path]) -> list[PluginChange]:
    """Group changed paths by plugin folder and decide what kind of change each is."""
    by_folder: dict[Path, set[str]] = {}
    for path in paths:
        if _ignored(path):
            continue
        folder = _plugin_folder(path, roots)
        if folder is not None and not folder.name.startswith(("_", ".")):
            by_folder.setdefault(folder, set()).add(_relative(path, folder))
    return [_change(folder, files) for folder, files in sorted(by_folder.items())]


def _change(folder: Path, files: set[str]) -> PluginChange:
    ordered = tuple(sorted(files))
    if not folder.exists():
        return PluginChange(folder, ChangeKind.REMOVED, ordered)
    if not is_plugin_dir(folder):
        return PluginChange(folder, ChangeKind.REMOVED, ordered)
    if files == {CONFIG_FILE}:
        return PluginChange(folder, ChangeKind.CONFIG, ordered)
    if "" in files:
        return PluginChange(folder, ChangeKind.ADDED, ordered)
    return PluginChange(folder, ChangeKind.SOURCE, ordered)


def _plugin_folder(path: Path, roots: Iterable[Path]) -> Path | None:
    for root in roots:
        if is_plugin_dir(root) and (path == root or root in path.parents):
            return root
        if path.parent == root and path != root:
            return path
        if root in path.parents:
            return root / path.relative_to(root).parts[0]
    return None


def _relative(path: Path, folder: Path) -> str:
    return "" if path == folder else str(path.relative_to(folder))


def _ignored(path: Path) -> bool:
    name = path.name
    return (
        name.endswith(_IGNORED_SUFFIXES)
        or name.startswith((".", "#"))
        or any(part in _IGNORED_PARTS for part in path.parts)
        or (_SAVE_PROBES.fullmatch(name) is not None and not path.exists())
    )
