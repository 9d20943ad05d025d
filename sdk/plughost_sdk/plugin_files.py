"""Files of a plugin folder, read and written by the host without ever leaving the folder.

The host reads what a plugin ships (``_manifest.json``, ``config.toml``)
outside any sandbox, so nothing in a plugin's folder may make it read or
write anything else: not a neighbour's configuration through a symbolic or a
hard link, not the host's own ``plughost.toml``, not a FIFO that blocks it
until someone writes. Only the folder itself may be a link (an operator's);
below it, each path component is opened from a descriptor of its parent with
``O_NOFOLLOW``, and the file first with ``O_PATH``, which opens nothing (no
device's ``open`` runs, no FIFO waits for a writer). Every check is made on
the descriptor opened (``fstat``), never on a name looked up before, so a
rename between a check and the open changes nothing.

Refused, each with a :class:`~plughost_sdk.errors.ManifestError` that names
the file, why, and the fix:

- a symbolic link, at the file or at any folder on the way to it;
- anything but a regular file: a FIFO, a socket, a device, a directory;
- a regular file with more than one hard link (it is also some other file);
- a file over its size limit (:data:`MAX_FILE_BYTES` unless said otherwise),
  or one that grows past it while it is read: at most the limit and one
  byte are ever read;
- TOML or JSON nested deeper than :data:`MAX_DEPTH`, whether the parser gives
  up at the interpreter's recursion limit or builds it (dotted keys do), and
  integers outside 64 bits, which no runner could be sent.

Parsing a megabyte of TOML takes a fifth of a second, so the host calls these
from a worker thread, never on its event loop.

Writes (the host writes a MaiBot plugin's missing ``config.toml``) go to a new
file created with ``O_EXCL | O_NOFOLLOW`` in the folder and renamed over the
target through the folder's descriptor, so a link at either name is never
followed.

What does not live here: what the files mean (:mod:`plughost_sdk.manifest`,
the host's ``plughost.plugins.source``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import stat
import tomllib
from pathlib import Path
from typing import Any, Final

from plughost_sdk.errors import ManifestError

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "open_file",
    "parse_json",
    "parse_toml",
    "read_file",
    "write_file",
]

MAX_FILE_BYTES: Final = 1 << 20
"""Bytes of one file the host reads from a plugin folder (a manifest, a config.toml)."""
MAX_DEPTH: Final = 64
"""Tables and arrays inside each other, in a plugin's TOML or JSON."""

_ONLY_HERE = "the host reads only regular files inside the plugin's own folder"
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | _NOFOLLOW
_PROBE = getattr(os, "O_PATH", 0)  # Linux; elsewhere the file is opened (non-blocking) at once
_INT64 = range(-(1 << 63), 1 << 63)
_KEY_PART = r"""(?>[A-Za-z0-9_-]++|"(?:[^"\\\n]|\\.)*+"|'[^'\n]*+')"""  # bare or quoted
_LONG_KEY = re.compile(rf"(?:^|[\[{{,])[ \t]*+(?:{_KEY_PART}[ \t]*+\.[ \t]*+){{{MAX_DEPTH}}}")


def read_file(folder: Path, name: str, *, limit: int = MAX_FILE_BYTES) -> bytes | None:
    """The bytes of ``<folder>/<name>``, or None when there is no such file.

    Args:
        folder: The plugin folder; it may itself be a symbolic link.
        name: A path inside it, ``/``-separated, without ``..``.
        limit: The most bytes the file may hold.

    Raises:
        ManifestError: the file is refused (see the module docstring) or cannot be read.
    """
    fd = open_file(folder, name)
    if fd is None:
        return None
    try:
        return _read_bounded(fd, name, str(folder / name), limit)
    finally:
        os.close(fd)


def open_file(folder: Path, name: str) -> int | None:
    """A read-only descriptor of ``<folder>/<name>``, checked; None when there is no such file.

    The caller closes it. Everything :func:`read_file` refuses but the size is
    refused here.

    Raises:
        ManifestError: a link, a special file, a hard link, or unreadable.
    """
    parts = name.split("/")
    if name.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{name!r} is not a path inside a folder")
    path = str(folder / name)
    try:
        directory = os.open(folder, _DIRECTORY)  # the folder itself may be an operator's link
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise ManifestError(path, [f"{name} cannot be read: {exc.strerror}"]) from None
    try:
        for depth in range(1, len(parts)):
            inner = _open_directory(directory, parts[: depth + 1], path)
            if inner is None:
                return None
            os.close(directory)
            directory = inner
        return _open_regular(directory, parts, path)
    finally:
        os.close(directory)


def _open_directory(parent: int, parts: list[str], path: str) -> int | None:
    """Open ``parts[-2]`` below ``parent`` as a folder, never through a link."""
    part, shown = parts[-2], "/".join(parts[:-1])
    try:
        return os.open(part, _DIRECTORY | _NOFOLLOW, dir_fd=parent)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _refusal(parent, part, shown, path, exc, folder=True) from None


def _open_regular(parent: int, parts: list[str], path: str) -> int | None:
    part, shown = parts[-1], "/".join(parts)
    try:
        if _PROBE:
            probe = os.open(part, _PROBE | _NOFOLLOW, dir_fd=parent)
            try:
                expected = _checked(os.fstat(probe), parent, part, shown, path)
                fd = _reopen(probe, parent, part)
            finally:
                os.close(probe)
        else:
            fd, expected = os.open(part, _READ, dir_fd=parent), None
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _refusal(parent, part, shown, path, exc, folder=False) from None
    try:
        opened = _checked(os.fstat(fd), parent, part, shown, path)
        if expected is not None and opened != expected:
            raise ManifestError(path, [f"{shown} was replaced while the host opened it; retry"])
    except BaseException:
        os.close(fd)
        raise
    return fd


def _reopen(probe: int, parent: int, part: str) -> int:
    """Open the very file ``probe`` (an ``O_PATH`` descriptor) refers to, for reading."""
    try:
        return os.open(f"/proc/self/fd/{probe}", _READ & ~os.O_NOFOLLOW)
    except OSError:  # no /proc here: open the name again; the caller compares the two
        return os.open(part, _READ, dir_fd=parent)


def _checked(st: os.stat_result, parent: int, part: str, shown: str, path: str) -> tuple[int, int]:
    """The file's identity, if it is a regular file of the folder's own; else refuse it."""
    if stat.S_ISLNK(st.st_mode):
        raise ManifestError(path, [_link_message(parent, part, shown, folder=False)])
    if not stat.S_ISREG(st.st_mode):
        raise ManifestError(path, [_not_regular(shown, st.st_mode)])
    if st.st_nlink > 1:
        raise ManifestError(
            path,
            [
                f"{shown} has {st.st_nlink} hard links, so it is also a file elsewhere "
                f"(perhaps another plugin's); {_ONLY_HERE}, held by no other name: give the "
                f"plugin a copy of its own (cp {shown} {shown}.copy && mv {shown}.copy {shown})"
            ],
        )
    return st.st_dev, st.st_ino


def _refusal(
    parent: int, part: str, shown: str, path: str, exc: OSError, *, folder: bool
) -> ManifestError:
    """Why opening ``part`` failed, read off what is there now (the refusal stands anyway)."""
    try:
        mode = os.stat(part, dir_fd=parent, follow_symlinks=False).st_mode
    except OSError:
        mode = 0
    if stat.S_ISLNK(mode):
        return ManifestError(path, [_link_message(parent, part, shown, folder=folder)])
    if folder and mode and not stat.S_ISDIR(mode):
        return ManifestError(path, [f"{shown} is {_kind(mode)}, not a folder"])
    if not folder and mode and not stat.S_ISREG(mode):
        return ManifestError(path, [_not_regular(shown, mode)])
    return ManifestError(path, [f"{shown} cannot be read: {exc.strerror}"])


def _link_message(parent: int, part: str, shown: str, *, folder: bool) -> str:
    try:
        target = os.readlink(part, dir_fd=parent)
    except OSError:
        target = "?"
    target = target if target.isprintable() else repr(target)  # no control bytes in a log line
    target = target if len(target) <= 200 else target[:200] + "..."
    what = "the folder itself" if folder else "the file itself"
    return (
        f"{shown} is a symbolic link (to {target}); {_ONLY_HERE}, never through a link: "
        f"replace the link with {what}"
    )


def _not_regular(shown: str, mode: int) -> str:
    return (
        f"{shown} is {_kind(mode)}, not a regular file; {_ONLY_HERE}: "
        "replace it with a regular file"
    )


def _kind(mode: int) -> str:
    kinds = (
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISREG, "a regular file"),
    )
    return next((text for test, text in kinds if test(mode)), "a special file")


def _read_bounded(fd: int, name: str, path: str, limit: int) -> bytes:
    size = os.fstat(fd).st_size
    if size > limit:
        raise ManifestError(path, [_too_big(name, f"is {size:,} bytes", limit)])
    chunks: list[bytes] = []
    left = limit + 1
    try:
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise ManifestError(path, [f"{name} cannot be read: {exc.strerror}"]) from None
    if left <= 0:
        raise ManifestError(path, [_too_big(name, "grew while the host read it", limit)])
    return b"".join(chunks)


def _too_big(name: str, what: str, limit: int) -> str:
    bound = f"{limit:,} bytes"
    if limit >= 1 << 20:
        bound = f"{limit / (1 << 20):g} MiB ({bound})"
    return (
        f"{name} {what}, over the limit of {bound} for a file the host reads from a plugin "
        "folder: make it smaller"
    )


def write_file(folder: Path, name: str, data: bytes) -> None:
    """Replace ``<folder>/<name>`` with ``data`` at once, never through a link.

    Raises:
        ManifestError: ``name`` is taken by something other than a regular file.
        OSError: the file cannot be written.
    """
    if "/" in name or name in ("", ".", ".."):
        raise ValueError(f"{name!r} is not a file name")
    directory = os.open(folder, _DIRECTORY)
    try:
        try:
            mode = os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode
        except FileNotFoundError:
            mode = stat.S_IFREG
        if not stat.S_ISREG(mode):
            raise ManifestError(
                str(folder / name),
                [f"{name} is {_kind(mode)}; the host writes only over a regular file: remove it"],
            )
        partial = f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        fd = os.open(
            partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o666, dir_fd=directory
        )
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.rename(partial, name, src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(partial, dir_fd=directory)
            raise
    finally:
        os.close(directory)


def parse_toml(data: bytes, path: str) -> dict[str, Any]:
    """Parse a plugin's TOML file, bounded in depth.

    Raises:
        ManifestError: not UTF-8, not TOML (with line and column), nested too
            deep, or an integer outside 64 bits.
    """
    text = _text(data, path)
    if _has_long_key(text):
        raise ManifestError(path, [_too_deep()])
    try:
        parsed = tomllib.loads(text)
    except RecursionError:
        raise ManifestError(path, [_too_deep()]) from None
    except ValueError as exc:  # TOMLDecodeError, or an integer of 5,000 digits
        raise ManifestError(path, [f"invalid TOML: {exc}"]) from None
    _check_values(parsed, path)
    return parsed


def parse_json(data: bytes, path: str) -> Any:
    """Parse a plugin's JSON file, bounded in depth.

    Raises:
        ManifestError: not UTF-8, not JSON (with line and column), nested too
            deep, or an integer outside 64 bits.
    """
    text = _text(data, path)
    try:
        parsed = json.loads(text)
    except RecursionError:
        raise ManifestError(path, [_too_deep()]) from None
    except json.JSONDecodeError as exc:
        raise ManifestError(
            path, [f"line {exc.lineno}, column {exc.colno}: invalid JSON: {exc.msg}"]
        ) from None
    except ValueError as exc:  # an integer of 5,000 digits
        raise ManifestError(path, [f"invalid JSON: {exc}"]) from None
    _check_values(parsed, path)
    return parsed


def _text(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError(
            path, [f"cannot be read as UTF-8 text ({exc}): save it as UTF-8"]
        ) from None


def _has_long_key(text: str) -> bool:
    """Whether a key has more than :data:`MAX_DEPTH` parts (``a.b.c...``).

    tomllib takes time quadratic in a key's parts (12 s for 100,000 of them, in
    200 KB), so such a key is refused before it parses. A key lies on one line,
    begins a line or follows ``[``, ``{`` or ``,``; only lines with enough dots
    are searched.
    """
    if text.count(".") < MAX_DEPTH:
        return False
    return any(line.count(".") >= MAX_DEPTH and _LONG_KEY.search(line) for line in text.split("\n"))


def _check_values(data: Any, path: str) -> None:
    """Refuse nesting deeper than :data:`MAX_DEPTH` and integers outside 64 bits (no recursion)."""
    pending: list[tuple[Any, int]] = [(data, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            if isinstance(value, int) and not isinstance(value, bool) and value not in _INT64:
                raise ManifestError(
                    path, [f"an integer of {value.bit_length()} bits; the host reads 64 at most"]
                )
            continue
        if depth > MAX_DEPTH:
            raise ManifestError(path, [_too_deep()])
        pending.extend((child, depth + 1) for child in children)


def _too_deep() -> str:
    return (
        f"nested deeper than {MAX_DEPTH} levels of tables and arrays, which the host "
        "refuses to read: flatten it"
    )
