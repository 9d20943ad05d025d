"""Forward a plugin's logging records and stray stdout/stderr to the host in batches.

``print`` in a plugin writes to a proxy, never to a file descriptor the
protocol uses (the protocol runs over a ZeroMQ socket, so nothing a plugin
prints can corrupt it). Records are tagged with the plugin that produced them:
the plugin id comes from the ``plugin.<id>`` logger name, or from the call
being served (a context variable) for prints; and with the id of the host
request being served, if any (``call``).

The queue is bounded: a plugin that floods its output loses lines, and the
host is told how many, instead of the runner running out of memory.

Nothing polls the queue: the first record queued after a send calls
:attr:`LogCollector.on_news`, which the runner uses to send a batch shortly
after (so a burst travels as one message), and an idle runner does not wake
for logs it does not have.
"""

from __future__ import annotations

import collections
import contextvars
import io
import logging
import time
from collections.abc import Callable
from typing import Any

__all__ = [
    "CancelFlag",
    "LogCollector",
    "StreamProxy",
    "current_call",
    "current_cancel",
    "current_plugin",
]

current_plugin: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "plughost_current_plugin", default=None
)
current_call: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "plughost_current_call", default=None
)
"""The id of the host request being served (``tool.invoke``, ``resource.read``,
``prompt.get``); log records and capability calls carry it so the host can tie
them to the call, and so to the MCP client that made it."""


class CancelFlag:
    """Set once a tool call is cancelled or past its deadline; read from any thread.

    Only ever set and read (nobody waits on it), so a plain attribute does what a
    ``threading.Event`` would, without the lock and condition every call would build:
    under the GIL the write is seen by the handler's thread at its next read.
    """

    __slots__ = ("_set",)

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        """Mark the call cancelled."""
        self._set = True

    def is_set(self) -> bool:
        """Whether the call was cancelled."""
        return self._set


current_cancel: contextvars.ContextVar[CancelFlag | None] = contextvars.ContextVar(
    "plughost_current_cancel", default=None
)
"""Set once the current tool call is cancelled or past its deadline (``ctx.cancelled``)."""

_MAX_LINE = 4000


class LogCollector(logging.Handler):
    """A logging handler that queues records for the next ``log.batch`` event."""

    def __init__(self, capacity: int = 5000) -> None:
        super().__init__(level=logging.DEBUG)
        self._records: collections.deque[dict[str, Any]] = collections.deque()
        self._capacity = capacity
        self.dropped = 0
        self.on_news: Callable[[], None] | None = None
        """Called (on whichever thread queued it) by the first record after :meth:`taken`."""
        self._told = False

    def emit(self, record: logging.LogRecord) -> None:
        """Queue a record (the ``logging.Handler`` hook)."""
        try:
            message = record.getMessage()
        except Exception:  # a plugin's bad %-format must not break logging
            message = str(record.msg)
        if record.exc_info and record.exc_info[0] is not None:
            message += "\n" + logging.Formatter().formatException(record.exc_info)
        refused = getattr(record, "plughost_refused", None)
        if isinstance(refused, str):  # a path the sandbox refused (plughost_runner.process.limits)
            plugin = getattr(record, "plughost_plugin", None)
            self.add(record.levelno, record.name, message, plugin, refused=refused)
            return
        self.add(record.levelno, record.name, message, _plugin_of(record.name))

    def add(
        self,
        level: int,
        logger: str,
        message: str,
        plugin: str | None,
        *,
        refused: str | None = None,
    ) -> None:
        """Queue one line, dropping it (and counting) when the queue is full."""
        if len(self._records) >= self._capacity:
            self.dropped += 1
        else:
            self._queue(level, logger, message, plugin, refused)
        if not self._told:  # after queueing: a drain that missed the line sees it announced
            self._tell()

    def _queue(
        self, level: int, logger: str, message: str, plugin: str | None, refused: str | None
    ) -> None:
        self._records.append(
            {
                "level": level,
                "logger": logger,
                "message": message[:_MAX_LINE],
                "plugin": plugin,
                "time": time.time(),
                "call": current_call.get(),
                **({"refused": refused} if refused is not None else {}),
            }
        )

    def _tell(self) -> None:
        self._told = True
        on_news = self.on_news
        if on_news is not None:
            on_news()

    def taken(self) -> None:
        """The sender is about to drain the queue: the next record calls :attr:`on_news` again.

        Called before draining, so a record queued meanwhile is either in this
        drain or announces itself.
        """
        self._told = False

    def drain(self, limit: int) -> list[dict[str, Any]]:
        """Take up to ``limit`` queued records, oldest first."""
        batch: list[dict[str, Any]] = []
        while self._records and len(batch) < limit:
            batch.append(self._records.popleft())
        return batch

    def pending(self) -> int:
        """How many records wait to be sent."""
        return len(self._records)

    def has_news(self) -> bool:
        """Whether records, or a count of dropped ones, wait to be sent."""
        return bool(self._records) or self.dropped > 0


def _plugin_of(logger_name: str) -> str | None:
    if logger_name.startswith("plugin."):
        return logger_name[len("plugin.") :]
    return current_plugin.get()


class StreamProxy(io.TextIOBase):
    """Stands in for ``sys.stdout``/``sys.stderr``: complete lines become log records."""

    def __init__(self, collector: LogCollector, name: str, level: int) -> None:
        super().__init__()
        self._collector = collector
        self._name = name
        self._level = level
        self._partial: dict[str | None, str] = {}

    def writable(self) -> bool:
        """Always writable."""
        return True

    def write(self, text: str) -> int:
        """Split ``text`` into lines and queue each one tagged with the current plugin."""
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        plugin = current_plugin.get()
        buffered = self._partial.pop(plugin, "") + text
        *lines, rest = buffered.split("\n")
        for line in lines:
            self._collector.add(self._level, self._name, line, plugin)
        if rest:
            if len(rest) > _MAX_LINE:
                self._collector.add(self._level, self._name, rest, plugin)
            else:
                self._partial[plugin] = rest
        return len(text)

    def flush(self) -> None:
        """Queue any partial lines."""
        for plugin, rest in self._partial.items():
            self._collector.add(self._level, self._name, rest, plugin)
        self._partial.clear()
