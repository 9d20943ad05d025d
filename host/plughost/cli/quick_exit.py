"""End the ``plughost`` process without tearing the interpreter down.

Why: a one-shot command (``plughost tools``, ``plughost call``) has imported
pydantic, pyzmq, rich and the host by the time it finishes, and Python's own
teardown (clearing about a thousand modules, a last garbage collection) then
costs about 60 to 80 ms on a two-core machine: a sixth of the whole command, and
nothing in it is work the command needs. By the time :func:`run_and_exit`
exits, the command has returned, so the host is closed and its runners are
stopped; what a normal exit would still do that matters is done here first:
the standard streams are flushed and ``atexit`` handlers run (logging's flush,
temporary directories, a coverage tool). When threads other than the main one
are still alive, a normal exit joins them, and so does this; :func:`exit_now`
is the same end without that check, for ``plughost serve`` over stdio.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable
from typing import NoReturn

__all__ = ["exit_code", "exit_now", "run_and_exit"]

_FLUSH_FAILED = 120
"""What Python exits with when flushing the standard streams fails at exit."""


def exit_code(code: object) -> int:
    """The process exit code for ``SystemExit(code)``, as the interpreter computes it.

    ``None`` is 0, an int is itself; anything else is printed to stderr and is 1.
    """
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run_and_exit(command: Callable[[], object]) -> None:
    """Run ``command`` (which may raise ``SystemExit``), then end the process."""
    try:
        command()
        code = 0
    except SystemExit as exc:
        code = exit_code(exc.code)
    if threading.active_count() > 1:
        sys.exit(code)  # the interpreter's exit joins them, as it would have
    exit_now(code)


def exit_now(code: int) -> NoReturn:
    """Flush the standard streams, run the ``atexit`` handlers and end the process.

    Threads still running are not joined: call it when none has work left that
    matters (``plughost serve`` over stdio, whose SDK reader thread waits for an
    end of input that a client may never send).
    """
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        code = code or _FLUSH_FAILED
    atexit._run_exitfuncs()
    os._exit(code)
