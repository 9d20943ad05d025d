"""Lifecycle events: what the host tells its embedder and its operator as it happens.

Runners spawn, become ready, crash and restart; plugins load, fail, reload and
get new configuration; an embedding bot reports its own turns (monitor events,
:mod:`plughost.monitor`). Each of these is a :class:`LifecycleEvent` published on
the host's :class:`EventBus`. Subscribers get their own bounded queue, so a
slow subscriber loses old events instead of stalling the host.

An event's message often quotes what a plugin shipped (a folder name, a
manifest field, an exception's text), and it ends up in the operator's
terminal and log files. So the bus writes every control and invisible
formatting character of a message out as an escape (``\x1b``, ``\u202e``):
no plugin can move the cursor, recolour the terminal, reorder what is shown or
start a line that reads like another event. A line break stays one, with the
next line indented under the event.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import time
import unicodedata
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from plughost.redaction import SecretRedactor

__all__ = [
    "MONITOR_KINDS",
    "PROBLEM_KINDS",
    "EventBus",
    "EventKind",
    "LifecycleEvent",
    "shown",
]

log = logging.getLogger(__name__)


def shown(text: str) -> str:
    """``text`` with control and invisible characters escaped, continuation lines indented."""
    if text.isprintable():
        return text
    return "".join(_shown_char(char) for char in text)


_ESCAPED = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
"""Controls, invisible formatting (bidi overrides, zero-width), line and paragraph breaks."""


def _shown_char(char: str) -> str:
    if char == "\n":
        return "\n    "
    if char == "\t" or unicodedata.category(char) not in _ESCAPED:
        return char  # a full-width space or a private-use glyph is only text
    code = ord(char)
    return (
        f"\\x{code:02x}"
        if code < 0x100
        else f"\\u{code:04x}"
        if code < 0x10000
        else f"\\U{code:08x}"
    )


class EventKind(StrEnum):
    """Every kind of lifecycle event."""

    RUNNER_SPAWNED = "runner.spawned"
    RUNNER_READY = "runner.ready"
    RUNNER_CRASHED = "runner.crashed"
    RUNNER_RESTARTED = "runner.restarted"
    RUNNER_STOPPED = "runner.stopped"
    RUNNER_GAVE_UP = "runner.gave_up"
    PLUGIN_LOADED = "plugin.loaded"
    PLUGIN_FAILED = "plugin.failed"
    PLUGIN_UNLOADED = "plugin.unloaded"
    PLUGIN_REBOUND = "plugin.rebound"
    RELOAD_STARTED = "reload.started"
    RELOAD_SUCCEEDED = "reload.succeeded"
    RELOAD_FAILED = "reload.failed"
    RELOAD_ROLLED_BACK = "reload.rolled_back"
    PACKAGES_INSTALLING = "packages.installing"
    PACKAGES_PROGRESS = "packages.progress"
    PACKAGES_INSTALLED = "packages.installed"
    CONFIG_UPDATED = "config.updated"
    CONFIG_REJECTED = "config.rejected"
    NETWORK_DENIED = "network.denied"
    SANDBOX_DENIED = "sandbox.denied"
    TOOL_NAME_CONFLICT = "tool.name_conflict"
    COMMAND_REFUSED = "command.refused"
    # Monitor events: an embedding bot's own turn, published through plughost.monitor.
    SESSION_START = "session.start"
    MESSAGE_INGESTED = "message.ingested"
    CYCLE_START = "cycle.start"
    TIMING_GATE_RESULT = "timing_gate.result"
    PLANNER_FINALIZED = "planner.finalized"


@dataclass(frozen=True, slots=True)
class LifecycleEvent:
    """One thing that happened to a runner or a plugin.

    Attributes:
        kind: What happened.
        message: A readable sentence for operators (names the plugin and the reason).
        plugin_id: The plugin concerned, if any.
        runner_id: The runner concerned, if any.
        details: Machine-readable facts (pid, exit code, file, line, traceback...).
        time: Wall-clock time of the event.
    """

    kind: EventKind
    message: str
    plugin_id: str | None = None
    runner_id: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    time: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form, for ``--log-format json`` and embedders."""
        return {
            "event": self.kind.value,
            "message": self.message,
            "plugin_id": self.plugin_id,
            "runner_id": self.runner_id,
            "details": self.details,
            "time": self.time,
        }


class EventBus:
    """Publishes lifecycle events to callbacks and async subscribers."""

    def __init__(
        self,
        history: int = 200,
        queue_size: int = 1000,
        redactor: SecretRedactor | None = None,
    ) -> None:
        self._redactor = redactor
        self._history: collections.deque[LifecycleEvent] = collections.deque(maxlen=history)
        self._queues: list[asyncio.Queue[LifecycleEvent]] = []
        self._callbacks: list[Callable[[LifecycleEvent], None]] = []
        self._queue_size = queue_size

    def emit(self, event: LifecycleEvent) -> None:
        """Publish ``event`` (the host's secrets masked); never raises, never blocks.

        A plugin's secrets are masked where its text comes in (:mod:`plughost.redaction`),
        never here: a plugin's config may not hide the host's words in the host's sentences.
        """
        message = shown(event.message)
        if self._redactor is not None:
            event = dataclasses.replace(
                event,
                message=self._redactor.redact(message),
                details=self._redactor.redact_data(event.details),
            )
        elif message is not event.message:
            event = dataclasses.replace(event, message=message)
        self._history.append(event)
        level = logging.WARNING if event.kind in PROBLEM_KINDS else logging.INFO
        log.log(level, "%s %s", event.kind.value, event.message)
        for callback in list(self._callbacks):
            try:
                callback(event)
            except Exception:
                log.exception("event callback failed on %s", event.kind.value)
        for queue in self._queues:
            if queue.full():
                queue.get_nowait()
            queue.put_nowait(event)

    def add_callback(self, callback: Callable[[LifecycleEvent], None]) -> None:
        """Call ``callback`` synchronously for every future event."""
        self._callbacks.append(callback)

    def remove_callback(self, callback: Callable[[LifecycleEvent], None]) -> None:
        """Stop calling ``callback``."""
        if callback in self._callbacks:
            self._callbacks.remove(callback)

    def history(self) -> list[LifecycleEvent]:
        """The most recent events, oldest first."""
        return list(self._history)

    async def subscribe(self, *, replay: bool = False) -> AsyncIterator[LifecycleEvent]:
        """Iterate over events as they happen (optionally replaying recent history first)."""
        queue: asyncio.Queue[LifecycleEvent] = asyncio.Queue(self._queue_size)
        if replay:
            for past in self._history:
                queue.put_nowait(past)
        self._queues.append(queue)
        try:
            while True:
                yield await queue.get()
        finally:
            self._queues.remove(queue)

    async def wait_for(
        self, predicate: Callable[[LifecycleEvent], bool], *, timeout: float
    ) -> LifecycleEvent:
        """Wait for the next event matching ``predicate``.

        Raises:
            TimeoutError: none arrived within ``timeout`` seconds.
        """
        found: asyncio.Future[LifecycleEvent] = asyncio.get_running_loop().create_future()

        def check(event: LifecycleEvent) -> None:
            if not found.done() and predicate(event):
                found.set_result(event)

        self.add_callback(check)
        try:
            async with asyncio.timeout(timeout):
                return await found
        finally:
            self.remove_callback(check)


PROBLEM_KINDS = frozenset(
    {
        EventKind.RUNNER_CRASHED,
        EventKind.RUNNER_GAVE_UP,
        EventKind.PLUGIN_FAILED,
        EventKind.PLUGIN_REBOUND,
        EventKind.RELOAD_FAILED,
        EventKind.RELOAD_ROLLED_BACK,
        EventKind.CONFIG_REJECTED,
        EventKind.NETWORK_DENIED,
        EventKind.SANDBOX_DENIED,
        EventKind.TOOL_NAME_CONFLICT,
        EventKind.COMMAND_REFUSED,
    }
)
"""The kinds that mean something went wrong (logged and shown as warnings)."""

MONITOR_KINDS = frozenset(
    {
        EventKind.SESSION_START,
        EventKind.MESSAGE_INGESTED,
        EventKind.CYCLE_START,
        EventKind.TIMING_GATE_RESULT,
        EventKind.PLANNER_FINALIZED,
    }
)
"""The kinds an embedder publishes about its own turns (:mod:`plughost.monitor`)."""
