"""A small JSON file of this user's that plughost both writes and believes.

:func:`read_own` reads a file only if it is a regular file (not a link) that
this user owns and no one else may write, since what such a file says is acted
on (tools shown to clients, servers started); :func:`write_own` replaces one
atomically, mode 0600, never through a planted link.

Imports nothing beyond the standard library (:mod:`plughost.mcp.early_launch`
reads its memo with it before anything heavy is imported).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any

__all__ = ["read_own", "write_own"]

_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # no FIFO waits for a writer
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def read_own(path: Path) -> str:
    """The file's text, if it is a regular file of this user that no one else may write.

    Raises:
        OSError: it cannot be opened (a link is refused by ``O_NOFOLLOW``).
        ValueError: it is not this user's own regular file, or not UTF-8.
    """
    descriptor = os.open(path, _READ)
    with os.fdopen(descriptor, "rb") as file:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        if info.st_uid != os.getuid() or info.st_mode & 0o022:
            raise ValueError("another user owns it or may write it")
        return file.read().decode("utf-8")


def write_own(path: Path, data: Any) -> None:
    """Replace ``path`` with ``data`` as JSON, atomically, mode 0600.

    Raises:
        OSError: it could not be written (nothing is left behind).
    """
    scratch = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(scratch, _CREATE, 0o600)  # never through a planted link
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            json.dump(data, file, ensure_ascii=False, default=str)
        os.replace(scratch, path)
    except OSError:
        with contextlib.suppress(OSError):
            scratch.unlink()
        raise
