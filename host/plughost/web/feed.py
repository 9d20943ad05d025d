"""The console's feed: lifecycle events, monitor events and log records, newest last.

One capped deque holds the last N entries (``web.feed_size``), so a host that runs
for weeks keeps a bounded memory; each live subscriber gets its own bounded
queue and loses its oldest entries rather than slowing the host. Log records
reach the feed through :class:`FeedLogHandler` from any thread.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from plughost.events import MONITOR_KINDS, PROBLEM_KINDS, LifecycleEvent

__all__ = ["LEVELS", "ConsoleFeed", "FeedEntry", "FeedLogHandler"]

Source = Literal["event", "monitor", "log"]

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

_QUEUE_SIZE = 500


@dataclass(frozen=True, slots=True)
class FeedEntry:
    """One line of the console's feed."""

    seq: int
    time: float
    source: Source
    level: str
    kind: str
    message: str
    plugin_id: str | None = None
    runner_id: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "seq": self.seq,
            "time": self.time,
            "source": self.source,
            "level": self.level,
            "kind": self.kind,
            "message": self.message,
            "plugin_id": self.plugin_id,
            "runner_id": self.runner_id,
            "details": self.details,
        }


class ConsoleFeed:
    """A capped history of entries plus live subscribers; lives on one event loop."""

    def __init__(self, size: int, loop: asyncio.AbstractEventLoop) -> None:
        self._entries: collections.deque[FeedEntry] = collections.deque(maxlen=size)
        self._subscribers: list[asyncio.Queue[FeedEntry]] = []
        self._seq = itertools.count(1)
        self._loop = loop
        self._thread = threading.get_ident()  # made on its loop's thread

    @property
    def size(self) -> int:
        """How many entries are kept."""
        return self._entries.maxlen or 0

    def add_event(self, event: LifecycleEvent) -> None:
        """Append a lifecycle or monitor event."""
        monitor = event.kind in MONITOR_KINDS
        self._append(
            source="monitor" if monitor else "event",
            level="WARNING" if event.kind in PROBLEM_KINDS else "INFO",
            kind=event.kind.value,
            message=event.message,
            plugin_id=event.plugin_id,
            runner_id=event.runner_id,
            details=event.details,
            time=event.time,
        )

    def add_log(self, record: logging.LogRecord, message: str) -> None:
        """Append a log record (on the feed's loop; see :class:`FeedLogHandler`)."""
        plugin = getattr(record, "plugin_id", None)
        details: dict[str, Any] = {"logger": record.name}
        if record.exc_text:
            details["traceback"] = record.exc_text
        self._append(
            source="log",
            level=record.levelname,
            kind=record.name,
            message=message,
            plugin_id=plugin if isinstance(plugin, str) else None,
            runner_id=None,
            details=details,
            time=record.created,
        )

    def _append(self, **fields: Any) -> None:
        entry = FeedEntry(seq=next(self._seq), **fields)
        self._entries.append(entry)
        for queue in self._subscribers:
            if queue.full():
                queue.get_nowait()
            queue.put_nowait(entry)

    def recent(
        self, *, plugin_id: str | None = None, level: str | None = None, limit: int = 200
    ) -> list[FeedEntry]:
        """The newest ``limit`` entries (oldest first) of one plugin and at least ``level``."""
        wanted = [e for e in self._entries if matches(e, plugin_id, level)]
        return wanted[-limit:] if limit > 0 else []

    @contextlib.contextmanager
    def subscription(self) -> Iterator[asyncio.Queue[FeedEntry]]:
        """A queue that receives every entry from now on, until the block ends."""
        queue: asyncio.Queue[FeedEntry] = asyncio.Queue(_QUEUE_SIZE)
        self._subscribers.append(queue)
        try:
            yield queue
        finally:
            self._subscribers.remove(queue)

    def call_soon(self, record: logging.LogRecord, message: str) -> None:
        """Add a log record from any thread."""
        if threading.get_ident() == self._thread:
            self.add_log(record, message)
        elif not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.add_log, record, message)


def matches(entry: FeedEntry, plugin_id: str | None, level: str | None) -> bool:
    """Whether ``entry`` passes the console's plugin and minimum-level filters."""
    if plugin_id and entry.plugin_id != plugin_id:
        return False
    if level and level in LEVELS and entry.level in LEVELS:
        return LEVELS.index(entry.level) >= LEVELS.index(level)
    return True


class FeedLogHandler(logging.Handler):
    """Copies log records into a :class:`ConsoleFeed`; safe to call from any thread."""

    # Lifecycle events reach the feed as events; their log copies would repeat them. The
    # console's own web server has nothing to tell an operator about plugins.
    _SKIPPED = ("plughost.events", "uvicorn")

    def __init__(self, feed: ConsoleFeed, level: int = logging.INFO) -> None:
        super().__init__(level)
        self._feed = feed

    def emit(self, record: logging.LogRecord) -> None:
        """Format ``record`` here (in the logging thread) and hand it to the feed's loop."""
        if record.name.startswith(self._SKIPPED):
            return
        try:
            message = record.getMessage()
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            self._feed.call_soon(record, message)
        except Exception:
            self.handleError(record)
