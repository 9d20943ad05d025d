"""Run a named hook chain (``maisaka.planner.before_request``) through the plugins' hook handlers.

Order, as in MaiBot: blocking handlers before observe ones; within a mode the
``early``, ``normal`` and ``late`` slots; then plugin id, then handler name.

Blocking handlers run one after another. Each receives the payload as keyword
arguments (plus ``hook_name``) and may return ``modified_kwargs`` (the whole
new payload, handed to the next handler) and ``action: "abort"`` (no later
handler runs; the caller should not do what the hook guards). A hook's
:class:`HookSpec`, registered by the embedder, may forbid either.

When a blocking handler fails (raises, passes its time limit, crashes its
runner), its ``error_policy`` decides:

- ``abort``: the chain stops there, as if the handler had aborted it
  (``aborted``, ``stopped_by``), when the hook allows aborting;
- ``skip``: the handler's part is skipped and the chain goes on with the
  payload unchanged; logged as a warning;
- ``log``: the same, logged as an error (MaiBot's two continuing policies
  differ only in how loudly they are reported).

Every failure is also listed in the outcome's ``errors``. After the blocking
chain (unless it was aborted), observe handlers start in the background, each
with its own deep copy of the final payload: what they do to it is never seen.
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

__all__ = ["HookDispatcher", "HookOutcome", "HookSpec"]

log = logging.getLogger(__name__)

_MODE_RANK = {"blocking": 0, "observe": 1}
_ORDER_RANK = {"early": 0, "normal": 1, "late": 2}


@dataclass(frozen=True, slots=True)
class HookSpec:
    """What a named hook allows its handlers; hooks without a spec allow everything.

    Attributes:
        name: The hook's name.
        description: What the hook guards, for listings.
        default_timeout_ms: A handler's limit when it sets none (0: the host's call_timeout).
        allow_abort: Whether handlers may abort the chain (an abort is otherwise ignored
            and reported in ``errors``; an ``abort`` error policy then acts as ``skip``).
        allow_kwargs_mutation: Whether handlers may replace the payload.
        parameters: The payload's keys, for documentation (not checked).
    """

    name: str
    description: str = ""
    default_timeout_ms: int = 0
    allow_abort: bool = True
    allow_kwargs_mutation: bool = True
    parameters: tuple[str, ...] = ()


@dataclass(slots=True)
class HookOutcome:
    """What running one hook chain did.

    Attributes:
        hook: The hook's name.
        kwargs: The payload as the blocking handlers left it.
        aborted: A handler aborted the chain (or failed under ``error_policy=abort``).
        stopped_by: That handler, ``plugin_id.name``.
        custom_results: What blocking handlers returned as ``custom_result``, in order.
        errors: One line per failure or refused request, in order.
        ran: The blocking handlers that ran, in order.
        observers: How many observe handlers were started.
    """

    hook: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    aborted: bool = False
    stopped_by: str | None = None
    custom_results: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    observers: int = 0


def _rank(handler: PluginComponent) -> tuple[int, int, str, str]:
    mode, order = _MODE_RANK.get(handler.mode, 9), _ORDER_RANK.get(handler.order, 9)
    return mode, order, handler.plugin_id, handler.name


class HookDispatcher:
    """Runs named hook chains over the hook handlers in a registry."""

    def __init__(
        self, registry: ComponentRegistry, caller: ComponentCaller, background: Background
    ) -> None:
        self._registry = registry
        self._caller = caller
        self._background = background
        self._specs: dict[str, HookSpec] = {}
        self._cache = PerVersion(registry)

    def register_spec(self, spec: HookSpec) -> None:
        """Declare what hook ``spec.name`` allows (replaces an earlier spec)."""
        self._specs[spec.name] = spec

    def spec(self, hook: str) -> HookSpec:
        """The registered spec of ``hook``, or one that allows everything."""
        return self._specs.get(hook) or HookSpec(hook)

    def handlers(self, hook: str) -> list[PluginComponent]:
        """The enabled handlers of ``hook`` in the order they run."""

        def build() -> list[PluginComponent]:
            found = [
                c
                for c in self._registry.components("HOOK_HANDLER")
                if c.hook == hook and self._registry.component_enabled(c)
            ]
            return sorted(found, key=_rank)

        return self._cache.get(hook, build)

    async def run(
        self,
        hook: str,
        kwargs: Mapping[str, Any],
        deadline: Deadline,
        background_timeout: float,
    ) -> HookOutcome:
        """Run the chain of ``hook`` over ``kwargs``; never raises."""
        spec = self.spec(hook)
        handlers = self.handlers(hook)
        outcome = HookOutcome(hook=hook, kwargs=copy.deepcopy(dict(kwargs)))
        default = (
            spec.default_timeout_ms / 1000 if spec.default_timeout_ms > 0 else deadline.seconds
        )
        for handler in (h for h in handlers if h.mode != "observe"):
            args = {**outcome.kwargs, "hook_name": hook}
            reply = await self._caller.call(
                handler, args, deadline.budget(handler.timeout_ms, default), guarded=True
            )
            outcome.ran.append(handler.full_name)
            self._merge(spec, handler, reply, outcome)
            if outcome.aborted:
                return outcome
        for handler in (h for h in handlers if h.mode == "observe"):
            self._observe(handler, hook, outcome.kwargs, background_timeout, default)
            outcome.observers += 1
        return outcome

    def _merge(
        self,
        spec: HookSpec,
        handler: PluginComponent,
        reply: dict[str, Any],
        outcome: HookOutcome,
    ) -> None:
        if reply.get("error_code") is not None or not reply.get("success", True):
            self._failed(spec, handler, str(reply.get("error") or "failed"), outcome)
            return
        if reply.get("custom_result") is not None:
            outcome.custom_results.append(reply["custom_result"])
        modified = reply.get("modified_kwargs")
        if isinstance(modified, dict):
            if spec.allow_kwargs_mutation:
                outcome.kwargs = {k: v for k, v in modified.items() if k != "hook_name"}
            else:
                outcome.errors.append(
                    f"{handler.full_name}: hook {spec.name} does not allow changing its "
                    "arguments; the change was ignored"
                )
        if reply.get("action") == "abort":
            if spec.allow_abort:
                outcome.aborted, outcome.stopped_by = True, handler.full_name
                log.info("hook %s aborted by %s", spec.name, handler.full_name)
            else:
                outcome.errors.append(
                    f"{handler.full_name}: hook {spec.name} cannot be aborted; the abort "
                    "was ignored"
                )

    @staticmethod
    def _failed(spec: HookSpec, handler: PluginComponent, error: str, outcome: HookOutcome) -> None:
        policy = handler.error_policy
        outcome.errors.append(f"{handler.full_name} ({policy}): {error}")
        if policy == "abort" and spec.allow_abort:
            log.warning("hook %s aborted: %s failed: %s", spec.name, handler.full_name, error)
            outcome.aborted, outcome.stopped_by = True, handler.full_name
        elif policy == "log":
            log.error("hook %s: handler %s failed: %s", spec.name, handler.full_name, error)
        else:
            log.warning(
                "hook %s: skipped %s, which failed: %s", spec.name, handler.full_name, error
            )

    def _observe(
        self,
        handler: PluginComponent,
        hook: str,
        kwargs: dict[str, Any],
        background_timeout: float,
        default: float,
    ) -> None:
        args = {**copy.deepcopy(kwargs), "hook_name": hook}
        own = (
            handler.timeout_ms / 1000
            if handler.timeout_ms > 0
            else min(default, background_timeout)
        )

        async def run() -> dict[str, Any]:
            return await self._caller.call(handler, args, own, guarded=True)

        self._background.start(f"hook handler {handler.full_name} on {hook}", run)
