"""One run of uv installing a requirement set into a target directory.

uv runs as a child process (``asyncio`` subprocess), so the host's loop never
waits on it and other plugins keep loading; each line uv prints is passed on
as progress. It installs with ``--target`` for the runner's own interpreter
(``--python``), with the runner's packages as constraints, from PyPI and the
operator's ``wheel_dir``, or from ``wheel_dir`` and the cache alone when
``offline``. By default it installs wheels only (``--no-build``): building a
source distribution runs its code on the host, outside any sandbox.

What uv does depends on plughost's settings alone: it reads no configuration
file (``--no-config``: no ``uv.toml`` or ``pyproject.toml`` in the host's
working directory or the user's) and none of the host's ``UV_*`` environment
variables, so an operator's uv setup for other work never changes which
index, versions or build rules a plugin gets.

What does not live here: which directory, when, and for whom (:mod:`.environments`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from plughost.settings import DependencySettings

__all__ = ["InstallError", "install_command", "install_environment", "run_install"]

log = logging.getLogger(__name__)

_REASON_LINES = 25
"""Lines of uv's output kept for an error message: its reason is at the end."""
_LINE_CHARS = 500
"""Characters of one line of uv's output passed on: uv echoes the names a plugin wrote."""
_LINE_BYTES = 4 * (_LINE_CHARS + 1)  # enough to tell that a line was longer
_CHUNK = 1 << 16
_TERM_TIMEOUT = 2.0


class InstallError(Exception):
    """uv could not install the requirement set; the message is uv's reason."""


def uv_binary() -> str:
    """The uv executable that ships in the ``uv`` wheel the host depends on."""
    import uv  # the package is the binary's locator

    return str(uv.find_uv_bin())


def install_command(
    settings: DependencySettings,
    *,
    requirements: Path,
    constraints: Path,
    target: Path,
    cache: Path,
    python: str | None = None,
) -> list[str]:
    """The argv that installs ``requirements`` into ``target``."""
    command = [
        uv_binary(),
        "--no-config",
        "pip",
        "install",
        "--target",
        str(target),
        "--python",
        python or sys.executable,
        "--cache-dir",
        str(cache),
        "--requirements",
        str(requirements),
        "--constraints",
        str(constraints),
        "--no-progress",
    ]
    if not settings.source_builds:
        command.append("--no-build")
    if settings.wheel_dir is not None:
        command += ["--find-links", str(settings.wheel_dir.resolve())]
    if settings.offline:
        command += ["--offline", "--no-index"]
    return command


def install_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment uv runs in: the host's (``os.environ``), less every ``UV_*`` variable.

    Proxies, certificates and ``PATH`` still apply: they say how to reach an index,
    not which packages to install.
    """
    source = os.environ if environ is None else environ
    return {key: value for key, value in source.items() if not key.upper().startswith("UV_")}


async def run_install(
    command: Sequence[str], timeout: float, progress: Callable[[str], None]
) -> None:
    """Run ``command``, passing each line it prints to ``progress``.

    Raises:
        InstallError: uv failed (its last lines), or ran past ``timeout``.
    """
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=install_environment(),
    )
    lines: deque[str] = deque(maxlen=_REASON_LINES)
    try:
        async with asyncio.timeout(timeout):
            await _read_lines(process, lines, progress)
            code = await process.wait()
    except TimeoutError:
        raise InstallError(
            f"the installation took longer than install_timeout ({timeout:g} s)"
        ) from None
    finally:
        await _ended(process)
    if code != 0:
        raise InstallError("\n".join(lines) or f"uv exited with status {code}")


async def _read_lines(
    process: asyncio.subprocess.Process, lines: deque[str], progress: Callable[[str], None]
) -> None:
    """Pass on each line uv prints, cut to ``_LINE_CHARS``, however long it is."""
    stream = process.stdout
    if stream is None:
        return
    pending = b""
    while chunk := await stream.read(_CHUNK):
        *complete, pending = (pending + chunk).split(b"\n")
        for raw in complete:
            _pass_on(raw, lines, progress)
        pending = pending[:_LINE_BYTES]
    _pass_on(pending, lines, progress)


def _pass_on(raw: bytes, lines: deque[str], progress: Callable[[str], None]) -> None:
    line = raw[:_LINE_BYTES].decode("utf-8", "replace").rstrip()
    if len(line) > _LINE_CHARS:
        line = line[:_LINE_CHARS] + "…"
    if line:
        lines.append(line)
        progress(line)


async def _ended(process: asyncio.subprocess.Process) -> None:
    """Make sure uv is gone: a cancelled or timed-out install must not leave it running."""
    if process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.terminate()
    try:
        async with asyncio.timeout(_TERM_TIMEOUT):
            await asyncio.shield(process.wait())
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
