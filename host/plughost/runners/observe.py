"""What a supervisor reads about its runner besides calls: memory use.

Kept apart from the supervisor so its module stays about its lifecycle. Log
records and pipe output live in :mod:`plughost.runners.output`.
"""

from __future__ import annotations

import psutil

__all__ = ["memory_over_limit"]


def memory_over_limit(pid: int | None, limit_mb: int | None) -> str | None:
    """A reason when the runner's resident memory (with its children) passed ``limit_mb``."""
    if limit_mb is None or pid is None:
        return None
    try:
        process = psutil.Process(pid)
        rss = process.memory_info().rss + sum(
            child.memory_info().rss for child in process.children(recursive=True)
        )
    except psutil.Error:
        return None
    if rss <= limit_mb * 1024 * 1024:
        return None
    return (
        f"memory limit exceeded: the runner used {rss / 2**20:.0f} MiB, over its "
        f"{limit_mb} MiB (limits.memory_mb)"
    )
