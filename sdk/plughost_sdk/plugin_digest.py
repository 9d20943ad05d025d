"""The digest of a whole plugin folder: what a remote runner's pin covers.

An operator pins a credential to a copy of a plugin (``plughost
runner-credentials new --pin FOLDER``); a remote runner offers each plugin
with the digest of its folder as it is on the runner's machine. Both sides
compute it here, so they agree on what counts:

- every file and folder below the plugin folder, by its path relative to the
  folder and its bytes (``plugin.py``, ``_manifest.json``, modules, data
  files, sourceless ``.pyc`` files beside the sources), in one stable order;
- not the caches Python and tools make (:data:`SKIPPED_FOLDERS`: a remote
  runner reads its bytecode from a cache of its own, never from the plugin's
  ``__pycache__``), and not the top-level ``config.toml``, which belongs to
  the runner's machine (it holds that machine's settings and secrets);
- no symbolic link, FIFO, socket or device: a folder holding one cannot be
  digested (it would make the digest depend on something outside the folder,
  or block the reader);
- at most :data:`MAX_FILES` entries and :data:`MAX_BYTES` bytes, so neither
  side reads without end.

What does not live here: what the host does with a digest (its allow-list,
``plughost.remote.keys``).
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Final

__all__ = [
    "MAX_BYTES",
    "MAX_FILES",
    "SKIPPED_FOLDERS",
    "UNPINNED_FILES",
    "DigestError",
    "plugin_sha256",
]

MAX_FILES: Final = 10_000
"""Files and folders one plugin folder may hold to be digested."""
MAX_BYTES: Final = 1 << 30
"""Bytes of all its files together (1 GiB): keep model weights in the data directory."""
SKIPPED_FOLDERS: Final = frozenset(
    {"__pycache__", ".git", ".hg", ".svn", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
)
"""Caches and version-control folders, at any depth: nothing Python imports."""
UNPINNED_FILES: Final = frozenset({"config.toml"})
"""Top-level files of the runner's machine, not of the plugin."""

_HEADER = b"plughost plugin folder sha256 v1\n"
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | _NOFOLLOW
_CHUNK = 1 << 16


class DigestError(ValueError):
    """The folder cannot be digested; the message names the path and the fix."""


def plugin_sha256(folder: Path) -> str:
    """The hex SHA-256 of the plugin folder ``folder`` (which may itself be a link).

    Raises:
        DigestError: a link or special file inside, too many files or bytes, or
            something unreadable.
    """
    digest = hashlib.sha256(_HEADER)
    budget = _Budget(folder)
    try:
        root = os.open(folder, _DIRECTORY)
    except OSError as exc:
        raise DigestError(f"{folder}: cannot be read: {exc.strerror}") from None
    pending: list[tuple[int, str]] = [(root, "")]
    try:
        while pending:
            directory, prefix = pending.pop()
            try:
                pending.extend(reversed(_digest_folder(directory, prefix, digest, budget)))
            finally:
                os.close(directory)
    finally:
        for directory, _ in pending:
            os.close(directory)
    return digest.hexdigest()


class _Budget:
    """What is left of the bounds while one folder is digested."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.entries = MAX_FILES
        self.bytes = MAX_BYTES

    def take_entry(self, shown: str) -> None:
        self.entries -= 1
        if self.entries < 0:
            raise DigestError(
                f"{self.folder}: more than {MAX_FILES:,} files and folders (at {shown}); "
                "keep data the plugin makes or downloads in its data directory"
            )

    def take_bytes(self, count: int, shown: str) -> None:
        self.bytes -= count
        if self.bytes < 0:
            raise DigestError(
                f"{self.folder}: its files hold more than {MAX_BYTES >> 20:,} MiB (at "
                f"{shown}); keep large data (model weights) in the plugin's data directory"
            )


def _digest_folder(
    directory: int, prefix: str, digest: hashlib._Hash, budget: _Budget
) -> list[tuple[int, str]]:
    """Digest the files of one folder; return its subfolders, opened, in order."""
    subfolders: list[tuple[int, str]] = []
    try:
        with os.scandir(directory) as found:
            names = sorted(entry.name for entry in found)
        for name in names:
            shown = prefix + name
            if name in SKIPPED_FOLDERS or (not prefix and name in UNPINNED_FILES):
                continue
            budget.take_entry(shown)
            mode = os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                digest.update(b"d " + os.fsencode(shown) + b"\0")
                inner = os.open(name, _DIRECTORY | _NOFOLLOW, dir_fd=directory)
                subfolders.append((inner, shown + "/"))
            elif stat.S_ISREG(mode):
                _digest_file(directory, name, shown, digest, budget)
            else:
                raise DigestError(_refusal(budget.folder, shown, mode))
    except OSError as exc:
        for inner, _ in subfolders:
            os.close(inner)
        raise DigestError(f"{budget.folder / prefix}: cannot be read: {exc.strerror}") from None
    except BaseException:
        for inner, _ in subfolders:
            os.close(inner)
        raise
    return subfolders


def _digest_file(
    directory: int, name: str, shown: str, digest: hashlib._Hash, budget: _Budget
) -> None:
    fd = os.open(name, _READ, dir_fd=directory)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # replaced between the look and the open
            raise DigestError(_refusal(budget.folder, shown, st.st_mode))
        budget.take_bytes(st.st_size, shown)
        digest.update(b"f " + os.fsencode(shown) + b"\0" + st.st_size.to_bytes(8, "big"))
        left = st.st_size
        while left > 0:
            chunk = os.read(fd, min(left, _CHUNK))
            if not chunk:
                break
            digest.update(chunk)
            left -= len(chunk)
        if left:  # shrank while read: the record stays well-formed, the digest differs
            digest.update(b"\0" * left)
    finally:
        os.close(fd)


def _refusal(folder: Path, shown: str, mode: int) -> str:
    what = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file or folder"
    return (
        f"{folder / shown} is {what}; a pinned plugin folder holds only its own files "
        "and folders: replace it with a copy of what it points to, or remove it"
    )
