"""Emit one bot event (``EventType``) to the plugins' event handlers.

As in MaiBot, handlers of the event are ordered by weight, highest first (then
plugin id, then name, so equal weights are stable). Intercepting handlers
(``intercept_message=True``) run one after another, each seeing the message as
the previous one left it: one may replace it (``modified_message``) or stop
the event (``continue_processing: false``), and then no later handler runs
and, as in MaiBot, the stopping handler's own replacement is dropped.
When the event was not stopped, the other handlers are started in the
background, each with its own copy of the final message; they cannot change
anything, and their failures are logged, never raised into the bot.

An intercepting handler that fails (raises, times out, crashes its runner)
is skipped: it is reported in the outcome's ``errors`` and the chain goes on
with the message unchanged.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from plughost.dispatch.calls import Background, ComponentCaller, Deadline, PerVersion
from plughost.plugins.component_info import PluginComponent
from plughost.plugins.components import ComponentRegistry

__all__ = ["EventDispatcher", "EventOutcome", "HandlerResult"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class HandlerResult:
    """What one intercepting handler did."""

    handler: str
    success: bool
    continue_processing: bool = True
    modified: bool = False
    custom_result: Any = None
    error: str = ""
    error_code: str | None = None


@dataclass(slots=True)
class EventOutcome:
    """What emitting one event did.

    Attributes:
        event_type: The event.
        continue_processing: False when an intercepting handler stopped it.
        message: The message as the intercepting handlers left it (None if none was given).
        stopped_by: The handler that stopped it, ``plugin_id.name``.
        results: Each intercepting handler that ran, in order.
        errors: One line per failed intercepting handler.
        background: How many non-intercepting handlers were started.
    """

    event_type: str
    continue_processing: bool = True
    message: dict[str, Any] | None = None
    stopped_by: str | None = None
    results: list[HandlerResult] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    background: int = 0


class EventDispatcher:
    """Emits events to the event handlers in a registry."""

    def __init__(
        self, registry: ComponentRegistry, caller: ComponentCaller, background: Background
    ) -> None:
        self._registry = registry
        self._caller = caller
        self._background = background
        self._cache = PerVersion(registry)

    def handlers(self, event_type: str) -> list[PluginComponent]:
        """The enabled handlers of ``event_type`` in the order they run."""

        def build() -> list[PluginComponent]:
            found = [
                c
                for c in self._registry.components("EVENT_HANDLER")
                if c.event_type == event_type and self._registry.component_enabled(c)
            ]
            return sorted(found, key=lambda c: (-c.weight, c.plugin_id, c.name))

        return self._cache.get(event_type, build)

    async def emit(
        self,
        event_type: str,
        message: Mapping[str, Any] | None,
        extra: Mapping[str, Any],
        deadline: Deadline,
        background_timeout: float,
    ) -> EventOutcome:
        """Run the intercepting handlers in line, then start the others; never raises.

        Handlers the operator switched off in the message's session (``session_id``
        of ``message``, else of ``extra``) are passed over.
        """
        session = str((message or {}).get("session_id") or extra.get("session_id") or "")
        handlers = [
            h
            for h in self.handlers(event_type)
            if not (session and self._registry.disabled_in_session(h, session))
        ]
        current = copy.deepcopy(dict(message)) if message is not None else None
        outcome = EventOutcome(event_type=event_type, message=current)
        for handler in (h for h in handlers if h.intercepts):
            result, changed = await self._run_one(
                handler, event_type, outcome.message, extra, deadline
            )
            outcome.results.append(result)
            if result.error_code is not None:
                outcome.errors.append(f"{handler.full_name}: {result.error}")
                continue
            if not result.continue_processing:  # as in MaiBot, a stopping handler's edit is dropped
                outcome.continue_processing = False
                outcome.stopped_by = handler.full_name
                return outcome
            if changed is not None:
                outcome.message = changed
        for handler in (h for h in handlers if not h.intercepts):
            self._start(handler, event_type, outcome.message, extra, background_timeout)
            outcome.background += 1
        return outcome

    async def _run_one(
        self,
        handler: PluginComponent,
        event_type: str,
        message: dict[str, Any] | None,
        extra: Mapping[str, Any],
        deadline: Deadline,
    ) -> tuple[HandlerResult, dict[str, Any] | None]:
        """Run one intercepting handler; return its result and the message it left, if changed."""
        args = {**extra, "event_type": event_type, "message": message}
        reply = await self._caller.call(
            handler, args, deadline.budget(handler.timeout_ms, deadline.seconds), guarded=True
        )
        if reply.get("error_code") is not None:
            log.warning("event handler %s failed: %s", handler.full_name, reply.get("error"))
            failed = HandlerResult(
                handler.full_name,
                success=False,
                error=str(reply.get("error") or ""),
                error_code=str(reply["error_code"]),
            )
            return failed, None
        modified = reply.get("modified_message")
        changed = dict(modified) if isinstance(modified, dict) else None
        result = HandlerResult(
            handler.full_name,
            success=bool(reply.get("success", True)),
            continue_processing=bool(reply.get("continue_processing", True)),
            modified=changed is not None,
            custom_result=reply.get("custom_result"),
        )
        return result, changed

    def _start(
        self,
        handler: PluginComponent,
        event_type: str,
        message: dict[str, Any] | None,
        extra: Mapping[str, Any],
        timeout: float,
    ) -> None:
        args = {**copy.deepcopy(dict(extra)), "event_type": event_type}
        args["message"] = copy.deepcopy(message)
        own = handler.timeout_ms / 1000 if handler.timeout_ms > 0 else timeout

        async def run() -> dict[str, Any]:
            return await self._caller.call(handler, args, own, guarded=True)

        self._background.start(f"event handler {handler.full_name}", run)
