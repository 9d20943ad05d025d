"""What a runner writes that the host logs: its pipes, its log records, its last words.

Everything here comes from plugin code, so everything here is bounded by the
host, whatever the runner claims:

- **Rate.** Lines from the pipes and records from ``log.batch`` each pass a token
  bucket (``runner.output_lines_per_second``, a burst of ten seconds' worth).
  What does not fit is dropped and counted; the count is logged at most once a
  second. While a pipe is over budget the host stops reading it for a moment, so
  a plugin writing to fd 1 in a loop blocks on its own full pipe instead of
  keeping the host's loop busy.
- **Size.** A line or a record is cut at :data:`MAX_LINE` characters.
- **Names.** A record is logged under ``plughost.plugin.<id>`` only when ``<id>`` is
  a plugin this runner serves; anything else goes to ``plughost.runner.<runner id>``.
  Loggers are never freed, so a name chosen by the runner would let it create
  them without bound.
- **Secrets.** A record of one plugin is masked with that plugin's secrets (and
  the host's); what cannot be told apart (the pipes, the last words, records of
  no plugin it serves) with those of every plugin the runner serves
  (:mod:`plughost.redaction`).

What does not live here: the runner's own bounded queue (``plughost_runner.process.capture``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import signal
import time
from collections.abc import Callable, Collection
from typing import Any

from plughost.redaction import Redact

__all__ = ["MAX_LINE", "OutputBudget", "RunnerOutput"]

MAX_LINE = 4000
"""Characters kept of one line or record."""

_CHUNK = 65536
_PAUSE = 0.05
"""Seconds a pipe is left unread while its runner is over budget."""


class OutputBudget:
    """A token bucket over lines: ``rate`` a second, at most ``burst`` saved up."""

    def __init__(
        self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._rate = rate
        self._burst = burst
        self._clock = clock
        self._tokens = burst
        self._last = clock()
        self.dropped = 0

    def take(self, wanted: int) -> int:
        """Take up to ``wanted`` lines' worth; return how many may pass (the rest are dropped)."""
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + (now - self._last) * self._rate)
        self._last = now
        granted = min(wanted, int(self._tokens))
        self._tokens -= granted
        self.dropped += wanted - granted
        return granted


class RunnerOutput:
    """Logs one runner's output under its budgets and names; keeps the stderr tail."""

    def __init__(
        self,
        runner_id: str,
        plugin_ids: Collection[str],
        redact: Redact,
        *,
        lines_per_second: float,
    ) -> None:
        self._runner_id = runner_id
        self._plugins = frozenset(plugin_ids)
        self._redact = redact
        self._runner_log = logging.getLogger(f"plughost.runner.{runner_id}")
        burst = lines_per_second * 10
        self.pipes = OutputBudget(lines_per_second, burst)
        self.records = OutputBudget(lines_per_second, burst)
        self._reported = 0.0
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=30)

    def allow(self, plugin_id: str) -> None:
        """Log records of ``plugin_id`` under its own name too (a plugin the runner added)."""
        self._plugins = self._plugins | {plugin_id}

    async def read_pipe(self, stream: asyncio.StreamReader, level: int) -> None:
        """Log what the runner writes to its real stdout/stderr until the pipe closes."""
        partial = b""
        while True:
            chunk = await stream.read(_CHUNK)
            if not chunk:
                if partial:
                    self._pipe_lines([partial], level)
                return
            *lines, partial = (partial + chunk).split(b"\n")
            if len(partial) > MAX_LINE:
                lines.append(partial)
                partial = b""
            if lines:
                passed = self.pipes.take(len(lines))
                self._pipe_lines(lines[:passed], level)
                if level >= logging.WARNING:  # the crash reason quotes the last lines
                    self.stderr_tail.extend(
                        line[:MAX_LINE].decode("utf-8", "replace") for line in lines[-30:]
                    )
                if passed < len(lines):
                    self._report_drops()
                    await asyncio.sleep(_PAUSE)  # leave the pipe full: the writer waits

    def _pipe_lines(self, lines: list[bytes], level: int) -> None:
        for line in lines:
            text = self._redact(line[:MAX_LINE].decode("utf-8", "replace").rstrip(), self._plugins)
            self._runner_log.log(level, "%s", text)

    def forward_records(self, records: Any) -> None:
        """Log the records of one ``log.batch``, within the budget and under allowed names."""
        if not isinstance(records, list):
            return
        passed = self.records.take(len(records))
        for record in records[:passed]:
            if isinstance(record, dict):
                self._forward(record)
        if passed < len(records):
            self._report_drops()

    def _forward(self, record: dict[str, Any]) -> None:
        plugin = record.get("plugin")
        if isinstance(plugin, str) and plugin in self._plugins:
            logger, whose = logging.getLogger(f"plughost.plugin.{plugin}"), frozenset({plugin})
        else:
            plugin, logger, whose = None, self._runner_log, self._plugins
        level = record.get("level", logging.INFO)
        if not isinstance(level, int) or isinstance(level, bool):
            level = logging.INFO
        level = min(max(level, logging.DEBUG), logging.CRITICAL)
        if logger.isEnabledFor(level):
            message = self._redact(str(record.get("message", ""))[:MAX_LINE], whose)
            logger.log(level, "%s", message, extra={"plugin_id": plugin})

    def exit_reason(self, code: int | None, cpu_seconds: int | None) -> str:
        """Why the runner ended, for operators: the signal or code, and its last stderr lines."""
        if code is not None and -code == signal.SIGXCPU:
            return f"CPU time limit of {cpu_seconds} s exceeded (limits.cpu_seconds)"
        what = f"exited with code {code}"
        if code is not None and code < 0:
            with contextlib.suppress(ValueError):
                what = f"killed by signal {signal.Signals(-code).name}"
        tail = [line for line in self.stderr_tail if line.strip()][-6:]
        tail = [self._redact(line.rstrip(), self._plugins) for line in tail]
        return what + (" — last output: " + " | ".join(tail) if tail else "")

    def _report_drops(self) -> None:
        now = time.monotonic()
        if now - self._reported < 1.0:
            return
        self._reported = now
        dropped = self.pipes.dropped + self.records.dropped
        self.pipes.dropped = self.records.dropped = 0
        self._runner_log.warning(
            "runner %s: %d lines of output dropped: its plugins write faster than "
            "runner.output_lines_per_second allows",
            self._runner_id,
            dropped,
        )
