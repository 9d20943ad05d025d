"""What a supervisor reads from its runner besides calls: memory use and log records.

Kept apart from the supervisor so its module stays about its lifecycle. A log
record's text is redacted before it reaches the host's logging, tagged with
the plugin it came from.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import psutil

__all__ = ["forward_log", "memory_over_limit"]


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


def forward_log(runner_id: str, record: dict[str, Any], redact: Callable[[str], str]) -> None:
    """Log one record a runner forwarded, under ``plughost.plugin.<id>`` or the runner's name."""
    plugin = record.get("plugin")
    logger = logging.getLogger(
        f"plughost.plugin.{plugin}" if plugin else f"plughost.runner.{runner_id}"
    )
    level = int(record.get("level", logging.INFO))
    if logger.isEnabledFor(level):
        message = redact(str(record.get("message", "")))
        logger.log(level, "%s", message, extra={"plugin_id": plugin})
