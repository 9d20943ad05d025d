"""Monitor events: an embedding bot's own turns, on the host's event bus.

A bot runtime that embeds the host reports what its reasoning loop does (a
session starts, a message enters the history, a thinking cycle starts, the
timing gate decides, the planner finishes) through :class:`MonitorPublisher`,
``host.monitor``. Each becomes a :class:`~plughost.events.LifecycleEvent` of a
monitor kind (:data:`~plughost.events.MONITOR_KINDS`) with its payload in
``details``, so whatever watches the host (``plughost serve``'s log, the
operator's console, an embedder's own subscriber) sees the bot's turns beside
plugin events, with secrets masked like any other event.

The kinds and payload fields follow the monitor events of MaiBot's reasoning
engine, so a panel written for those reads these.
"""

from __future__ import annotations

from typing import Any

from plughost.events import EventBus, EventKind, LifecycleEvent

__all__ = ["MonitorPublisher"]


class MonitorPublisher:
    """Publishes a bot's turn events; every method returns the event it published."""

    def __init__(self, events: EventBus) -> None:
        self._events = events

    def session_started(self, session_id: str, session_name: str = "") -> LifecycleEvent:
        """The bot's runtime started serving a session (a chat stream)."""
        name = session_name or session_id
        return self._emit(
            EventKind.SESSION_START,
            f"session {name} started",
            session_id=session_id,
            session_name=session_name,
        )

    def message_ingested(
        self, session_id: str, *, speaker_name: str, content: str, message_id: str = ""
    ) -> LifecycleEvent:
        """A message was put into the session's history."""
        return self._emit(
            EventKind.MESSAGE_INGESTED,
            f"{speaker_name}: {_short(content)}",
            session_id=session_id,
            speaker_name=speaker_name,
            content=content,
            message_id=message_id,
        )

    def cycle_started(
        self, session_id: str, *, cycle_id: str, round_index: int = 0, max_rounds: int = 0
    ) -> LifecycleEvent:
        """A thinking cycle began (``round_index`` of at most ``max_rounds``)."""
        return self._emit(
            EventKind.CYCLE_START,
            f"cycle {cycle_id} round {round_index}/{max_rounds}",
            session_id=session_id,
            cycle_id=cycle_id,
            round_index=round_index,
            max_rounds=max_rounds,
        )

    def timing_gate_decided(
        self, session_id: str, *, action: str, content: str = "", **facts: Any
    ) -> LifecycleEvent:
        """The timing gate decided whether to act now (``tool_calls``, ``prompt_tokens``...)."""
        return self._emit(
            EventKind.TIMING_GATE_RESULT,
            f"timing gate: {action}",
            session_id=session_id,
            action=action,
            content=content,
            **facts,
        )

    def planner_finished(
        self, session_id: str, *, cycle_id: str, seconds: float, **facts: Any
    ) -> LifecycleEvent:
        """The planner finished a cycle; ``facts`` carry token counts, tool calls, the reply."""
        return self._emit(
            EventKind.PLANNER_FINALIZED,
            f"planner finished cycle {cycle_id} in {seconds:.2f} s",
            session_id=session_id,
            cycle_id=cycle_id,
            seconds=seconds,
            **facts,
        )

    def _emit(self, kind: EventKind, message: str, **details: Any) -> LifecycleEvent:
        event = LifecycleEvent(kind, message, details=details)
        self._events.emit(event)
        return event


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
