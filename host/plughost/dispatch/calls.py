"""One component call in its runner, under a deadline, never raising; and background calls.

:class:`ComponentCaller` finds the runner that owns a component's plugin and
asks it to run the component. Whatever happens (the plugin raised, the call
timed out, the runner crashed or is gone) the caller gets a reply dict with
``success`` and, on failure, ``error`` and ``error_code``: isolation means a
failing handler is one failed reply, never an exception in the embedder's code.

:class:`Background` owns the fire-and-forget calls (background event handlers,
observe hook handlers): every task is kept until it ends, its failure is
logged, :meth:`Background.drain` waits for them (tests, shutdown) and
:meth:`Background.aclose` cancels what is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

from plughost.plugins.component_info import PluginComponent
from plughost.plugins.components import ComponentRegistry

__all__ = [
    "Background",
    "CircuitBreaker",
    "ComponentCaller",
    "ComponentInvoker",
    "Deadline",
    "PerVersion",
]

log = logging.getLogger(__name__)


@runtime_checkable
class ComponentInvoker(Protocol):
    """What runs a plugin's components: a runner supervisor."""

    async def invoke_component(
        self, plugin_id: str, kind: str, name: str, args: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        """Run one component and return its reply; never raises."""
        ...


class Deadline:
    """The loop-clock end of one dispatch; each handler gets what is left, at most its own limit."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = asyncio.get_running_loop().time() + seconds

    def remaining(self) -> float:
        """Seconds left, never negative."""
        return max(0.0, self._end - asyncio.get_running_loop().time())

    def budget(self, own_ms: int, default: float) -> float:
        """A handler's time limit: its own (``own_ms``) or ``default``, cut to what is left."""
        own = own_ms / 1000 if own_ms > 0 else default
        return min(own, self.remaining())


class PerVersion:
    """Lists derived from the registry (a hook's handlers in order), rebuilt when it changes.

    Every change of the registry (a reload, a component switched off) bumps its
    version, so a list built for one version is valid until the next: dispatching
    a message does not re-sort or re-filter every component each time.
    """

    def __init__(self, registry: ComponentRegistry) -> None:
        self._registry = registry
        self._version = -1
        self._lists: dict[str, list[Any]] = {}

    def get(self, key: str, build: Callable[[], list[Any]]) -> list[Any]:
        """The list for ``key`` at the registry's current version, built once per version."""
        if self._version != self._registry.version:
            self._version, self._lists = self._registry.version, {}
        found = self._lists.get(key)
        if found is None:
            found = self._lists[key] = build()
        return found


class CircuitBreaker:
    """Skips an event or hook handler for a while after it timed out or crashed repeatedly.

    Without it a hook handler that hangs costs every message its whole time limit.
    After ``limit()`` consecutive timeouts or runner crashes the handler is
    skipped (``circuit_open``) for ``cooldown()`` seconds, then tried again; one
    success resets the count. A handler that raises is not counted: that costs
    no time. The state is per runner, so a reload (a new runner) starts afresh.
    """

    COUNTED = frozenset({"timeout", "plugin_crashed"})

    def __init__(
        self,
        limit: Callable[[], int],
        cooldown: Callable[[], float],
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._limit = limit
        self._cooldown = cooldown
        self._clock = clock or (lambda: asyncio.get_running_loop().time())
        self._failures: dict[tuple[int, str], int] = {}
        self._open_until: dict[tuple[int, str], float] = {}

    def refusal(self, owner: object, component: PluginComponent) -> dict[str, Any] | None:
        """A failed reply while the handler is being skipped, else None."""
        until = self._open_until.get((id(owner), component.key))
        if until is None:
            return None
        left = until - self._clock()
        if left <= 0:
            del self._open_until[(id(owner), component.key)]
            return None
        message = (
            f"skipped for {left:.0f} more s after {self._limit()} timeouts or crashes in a row "
            "(handler_cooldown)"
        )
        return _failure(message, "circuit_open")

    def record(self, owner: object, component: PluginComponent, reply: dict[str, Any]) -> None:
        """Count a timeout or crash; open the circuit at the limit; reset on anything else."""
        key = (id(owner), component.key)
        if reply.get("error_code") not in self.COUNTED:
            self._failures.pop(key, None)
            return
        count = self._failures[key] = self._failures.get(key, 0) + 1
        limit = self._limit()
        if limit and count >= limit:
            self._failures.pop(key, None)
            now = self._clock()
            # Entries of runners since replaced are never asked again: drop the expired.
            self._open_until = {k: t for k, t in self._open_until.items() if t > now}
            self._open_until[key] = now + self._cooldown()
            log.warning(
                "skipping %s for %g s: %d timeouts or crashes in a row",
                component.key,
                self._cooldown(),
                count,
            )


class ComponentCaller:
    """Calls components of the plugins in a registry, in their runners."""

    def __init__(self, registry: ComponentRegistry, breaker: CircuitBreaker | None = None) -> None:
        self._registry = registry
        self._breaker = breaker

    async def call(
        self,
        component: PluginComponent,
        args: dict[str, Any],
        timeout: float,
        *,
        guarded: bool = False,
    ) -> dict[str, Any]:
        """Run ``component`` with ``args`` within ``timeout`` seconds; never raises.

        ``guarded`` calls (event and hook handlers) go through the circuit breaker.
        """
        if timeout <= 0:
            return _failure("the dispatch deadline passed before this handler could run", "timeout")
        owner: ComponentInvoker | None = _as_invoker(self._registry.owner(component.plugin_id))
        if owner is None:
            message = f"plugin {component.plugin_id} is not loaded"
            return _failure(message, "plugin_not_found")
        breaker = self._breaker if guarded else None
        refusal = breaker.refusal(owner, component) if breaker is not None else None
        if refusal is not None:
            return refusal
        reply = await self._invoke(owner, component, args, timeout)
        if breaker is not None:
            breaker.record(owner, component, reply)
        return reply

    async def _invoke(
        self,
        owner: ComponentInvoker,
        component: PluginComponent,
        args: dict[str, Any],
        timeout: float,
    ) -> dict[str, Any]:
        try:
            reply = await owner.invoke_component(
                component.plugin_id, component.kind, component.name, args, timeout
            )
        except Exception as exc:  # an owner breaking its promise must not reach the embedder
            log.exception("calling %s failed", component.key)
            return _failure(f"{type(exc).__name__}: {exc}", "internal")
        if not reply.get("success", False) and reply.get("error") and "error_code" not in reply:
            reply = {**reply, "error_code": "handler_failed"}  # the plugin's code raised
        return reply


class Background:
    """Fire-and-forget calls that are still owned: tracked, logged, awaited or cancelled."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, what: str, call: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        """Run ``call`` in the background; a failed reply is logged as a warning, never raised."""
        task = asyncio.get_running_loop().create_task(self._run(what, call))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _run(what: str, call: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        try:
            reply = await call()
        except Exception:
            log.exception("background %s failed", what)
            return
        if not reply.get("success", False):
            log.warning("background %s failed: %s", what, reply.get("error", "unknown error"))

    @property
    def pending(self) -> int:
        """Background calls not finished yet."""
        return len(self._tasks)

    async def drain(self, timeout: float) -> bool:
        """Wait until every background call has ended; False if ``timeout`` passed first."""
        if not self._tasks:
            return True
        _, pending = await asyncio.wait(set(self._tasks), timeout=timeout)
        return not pending

    async def aclose(self) -> None:
        """Cancel what is still running and wait for it to stop."""
        tasks = set(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _as_invoker(owner: object) -> ComponentInvoker | None:
    """The registry's owner of a plugin, when it can run components (a runner supervisor)."""
    return owner if isinstance(owner, ComponentInvoker) else None


def _failure(message: str, code: str) -> dict[str, Any]:
    return {"success": False, "error": message, "error_code": code}
