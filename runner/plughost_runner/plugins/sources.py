"""A plugin's modules run from their source, never from bytecode shipped beside it.

Python's import system prefers a module's cached bytecode to its source: a
``__pycache__/NAME.cpython-3X.pyc`` beside ``NAME.py`` is run instead of the
source when its header names the source's size and modification time (kept by
a zip or tar archive), and an *unchecked* hash-based ``.pyc`` is run whatever
the source holds. A plugin folder can carry either, committed by accident or on
purpose, so what an operator reads and edits in ``plugin.py`` would not be what
runs, and an edit would change nothing. Runners write no bytecode
(``PYTHONDONTWRITEBYTECODE``), so every ``.pyc`` in a plugin folder is the
plugin's own.

:func:`compile_from_source` makes every module that lies in a plugin's folder,
imported by any name, compile from its ``.py``: the plugin's entry module
(with :class:`SourceOnlyLoader`), its relative imports, and the top-level names
MaiBot plugins import after putting their folder on ``sys.path``. A ``.py``
also comes before an extension module of the same name, which plain Python
would try first. Modules with no source are still imported as Python imports
them (an extension module, or a lone ``.pyc`` without a ``.py`` beside it):
those contradict no source the operator can read.
"""

from __future__ import annotations

import os
import sys
import threading
from importlib.machinery import (
    BYTECODE_SUFFIXES,
    EXTENSION_SUFFIXES,
    SOURCE_SUFFIXES,
    ExtensionFileLoader,
    FileFinder,
    SourceFileLoader,
    SourcelessFileLoader,
)
from types import CodeType
from typing import Any

__all__ = ["SourceOnlyLoader", "compile_from_source"]

_folders: set[str] = set()
_lock = threading.Lock()
_installed = False


class SourceOnlyLoader(SourceFileLoader):
    """Loads a module from its ``.py``, compiled now, never from a cached ``.pyc``."""

    def get_code(self, fullname: str) -> CodeType:
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)


# A source first: plain Python tries an extension module (``NAME.cpython-311-*.so``) before
# ``NAME.py``, so one shipped beside a source would also run in its place.
_finder_for = FileFinder.path_hook(
    (SourceOnlyLoader, SOURCE_SUFFIXES),
    (ExtensionFileLoader, EXTENSION_SUFFIXES),
    (SourcelessFileLoader, BYTECODE_SUFFIXES),
)


def compile_from_source(folder: str | os.PathLike[str]) -> None:
    """Make every module in ``folder`` (a plugin's) compile from its source from now on.

    Idempotent; a folder stays covered for the runner's life, as its modules
    stay in ``sys.modules``. Call it before anything imports from ``folder``:
    only a finder made for the folder itself (on ``sys.path`` from the start)
    is replaced, since one for a folder inside it is made only through it.
    The fork server installs the hook when it rehearses a plugin load, so a
    forked runner only adds its folder here and reads no other entry (each
    entry read would copy a page it shares with its siblings).
    """
    global _installed
    absolute = os.path.abspath(folder)
    paths = (absolute, os.path.realpath(absolute))
    with _lock:
        _folders.update(paths)
        if not _installed:
            sys.path_hooks.insert(0, _path_hook)
            _installed = True
    for path in paths:
        sys.path_importer_cache.pop(path, None)


def _path_hook(entry: str) -> Any:
    """A finder that compiles from source for a directory in a plugin's folder; else refuse."""
    if not _covered(entry):
        raise ImportError("not in a plugin folder", path=entry)  # the next hook's turn
    return _finder_for(entry)


def _covered(entry: str) -> bool:
    try:
        path = os.path.abspath(os.fsdecode(entry) or ".")
    except (TypeError, ValueError):
        return False
    return any(path == folder or path.startswith(folder + os.sep) for folder in _folders)
