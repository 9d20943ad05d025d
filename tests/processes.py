"""The processes a test started, read without tripping on those that ended meanwhile.

A test lists its process's children to find the one it means (a serve, a fork
server). Another test in the same worker may have left a child that ended and
is not yet reaped: a zombie, whose command line cannot be read.
"""

from __future__ import annotations

import psutil


def command_line(process: psutil.Process) -> list[str]:
    """``process``'s command line; empty for one that ended (a zombie, or gone)."""
    try:
        return process.cmdline()
    except psutil.Error:
        return []
