"""``plughost check``: warn about a plugin whose code uses the network but has no grant.

The sandbox refuses every connection no grant covers, so a plugin that
imports an HTTP client and has none will fail each request at run time (a
weather plugin answering "no such city"). The check reads the plugin's Python
files as text, never following a symlink and never opening anything but a
regular file of bounded size, and looks for the imports of the usual clients.
It cannot know the destinations; it says how to find them (``plughost serve
--learn``) and how to grant them (``plughost grant``).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

from plughost.plugins.source import PluginSource
from plughost.runners.sandbox import network_for
from plughost.settings import HostSettings
from plughost_sdk.errors import ManifestError
from plughost_sdk.plugin_files import open_file

__all__ = ["NetworkUse", "network_use"]

_CLIENTS = re.compile(
    r"^[ \t]*(?:import|from)[ \t]+(aiohttp|httpx|requests|urllib3|urllib\.request|websockets|"
    r"websocket|http\.client|socket|pycurl|tornado\.httpclient)\b",
    re.MULTILINE,
)
_MAX_FILES, _MAX_BYTES = 500, 1 << 20

NetworkUse = tuple[str, int, str]
"""file, line, the module imported"""


def network_use(source: PluginSource, settings: HostSettings) -> NetworkUse | None:
    """The first network client import of a plugin that has no grant, or None."""
    if network_for(settings, [source]) or source.manifest.network is not None:
        return None
    for path in _python_files(source.path):
        try:  # checked on the descriptor opened: a file swapped for a FIFO or a link is skipped
            fd = open_file(source.path, path.relative_to(source.path).as_posix())
        except ManifestError:
            continue
        if fd is None:
            continue
        try:
            with os.fdopen(fd, "rb") as handle:  # a plugin's file may be huge: a bounded head
                text = handle.read(_MAX_BYTES).decode("utf-8", errors="replace")
        except OSError:
            continue
        found = _CLIENTS.search(text)
        if found:
            line = text.count("\n", 0, found.start()) + 1
            return str(path), line, found.group(1)
    return None


def _python_files(folder: Path) -> Iterator[Path]:
    pending, seen = [folder], 0
    while pending and seen < _MAX_FILES:
        try:
            entries = sorted(os.scandir(pending.pop()), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode) and not entry.name.startswith("."):
                pending.append(Path(entry.path))
            elif stat.S_ISREG(mode) and entry.name.endswith(".py"):
                yield Path(entry.path)
