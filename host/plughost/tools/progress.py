"""Progress of a tool call, from whoever runs it to whoever waits for it.

A tool reports progress where it runs (a plugin's ``ctx.report_progress``, an
upstream MCP server's ``notifications/progress``); the party waiting for the
call (an embedder's ``on_progress``, plughost's MCP server answering a client
that sent a progress token) receives :class:`Progress` reports. Between the two
sit the registry and its providers, which should not need a parameter for it:
the receiver is a context variable set around the call with :func:`reporting`,
and a provider that learns of progress calls :func:`report`. Runner events
arrive on the channel's reader, outside the caller's task; the channel runs
their handler in the context the request was sent from
(:meth:`~plughost.runners.channel.RunnerChannel.context_of`), so :func:`report`
finds the receiver there too.

A receiver is a plain callable, called on the event loop: it must not block
(queue the report if it needs to await). An exception in it is logged and the
call goes on.

What does not live here: the wire event (:mod:`plughost_sdk.wire`) and the MCP
notification (:mod:`plughost.mcp.server`).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["Progress", "ProgressCallback", "current", "report", "reporting", "wanted"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Progress:
    """One progress report of a tool call.

    Attributes:
        progress: How much is done (grows with every report).
        total: How much there is in all, when the tool knows.
        message: A short status line, when the tool gave one.
    """

    progress: float
    total: float | None = None
    message: str | None = None


ProgressCallback = Callable[[Progress], None]
"""Receives the progress reports of a call; called on the event loop, must not block."""

_receiver: contextvars.ContextVar[ProgressCallback | None] = contextvars.ContextVar(
    "plughost_progress_receiver", default=None
)


@contextlib.contextmanager
def reporting(callback: ProgressCallback | None) -> Iterator[None]:
    """Send the progress of the calls made inside this block to ``callback`` (None: nowhere)."""
    token = _receiver.set(callback)
    try:
        yield
    finally:
        _receiver.reset(token)


def current() -> ProgressCallback | None:
    """The receiver of the current context, for a party that reports from another task."""
    return _receiver.get()


def wanted() -> bool:
    """Whether anyone receives progress in the current context (to skip the work if not)."""
    return _receiver.get() is not None


def report(progress: float, total: float | None = None, message: str | None = None) -> None:
    """Pass a progress report to the receiver of the current context, if there is one."""
    callback = _receiver.get()
    if callback is None:
        return
    try:
        callback(Progress(progress, total, message))
    except Exception:
        log.exception("progress callback failed")
