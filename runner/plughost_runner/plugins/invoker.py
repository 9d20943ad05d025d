"""Run one tool call inside the runner: kwargs, sync or async, deadline, normalization.

Async handlers run on the runner's event loop; sync handlers run in a thread
pool so they cannot stall the loop (and with it the heartbeat and every other
call). A sync handler that overstays its deadline cannot be interrupted, so it
is counted as *stuck*; the heartbeat reports stuck calls and the host recycles
the runner.

An async handler that blocks anyway (``time.sleep``, ``requests.get``, a long
computation) holds the whole loop for one *step* of its coroutine. Every step
is timed: while one runs, :attr:`Invoker.step` says which handler it is, since
when and until which deadline, so the runner's pulse thread can keep the host
informed (see :mod:`plughost_runner.link.pulse`); a step longer than
:attr:`Invoker.slow_step` is logged when it ends, naming the handler, how long
it blocked and what to write instead.

The pulse thread sends on the runner's socket only while a step runs, under
:attr:`Invoker.lock` and with :attr:`Invoker.pulsing` set; a step that ends sees
the flag and waits for that send before the loop touches the socket again.
Both sides write their flag before reading the other's (under the GIL these
are ordered), so either the step sees the pulse or the pulse sees no step, and
the common case takes no lock at all.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from plughost_runner.process.capture import current_plugin
from plughost_runner.process.limits import describe_limit_error
from plughost_sdk.declarations import ToolDeclaration
from plughost_sdk.models import ToolExecutionResult
from plughost_sdk.resources import PromptDeclaration, ResourceDeclaration
from plughost_sdk.results import (
    ResultFields,
    normalize_exception,
    normalized_fields,
    result_fields,
)

__all__ = ["Callee", "Handler", "Invoker", "Step", "call_deadline"]

log = logging.getLogger("plughost_runner")


@dataclass(frozen=True, slots=True)
class Handler:
    """A tool's (or a resource's, or a prompt's) bound method and how to call it."""

    declaration: ToolDeclaration | ResourceDeclaration | PromptDeclaration
    function: Callable[..., Any]
    is_async: bool
    accepts_any: bool
    accepted: frozenset[str]
    adapt_result: Callable[[Any], Any] | None = None
    """Applied to the return value before normalization (MaiBot's reading of it)."""


call_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "plughost_call_deadline", default=None
)
"""The loop-clock deadline of the call being served; capability calls inherit it."""


class Callee(Protocol):
    """A plugin callable and how to call it: a tool's or a component's handler."""

    @property
    def function(self) -> Callable[..., Any]: ...
    @property
    def is_async(self) -> bool: ...
    @property
    def accepts_any(self) -> bool: ...
    @property
    def accepted(self) -> frozenset[str]: ...


@dataclass(slots=True)
class Step:
    """The async handler whose coroutine step is running on the loop right now.

    Attributes:
        plugin_id: Its plugin.
        handler: Its name (the tool's name for a tool).
        started: When the current step began (``time.monotonic()``).
        deadline: When its call's deadline passes (``time.monotonic()``).
    """

    plugin_id: str
    handler: str
    started: float
    deadline: float


class Invoker:
    """Calls handlers and keeps count of sync calls still running past their deadline.

    Args:
        max_threads: Worker threads for sync handlers.
        lock: Guards :attr:`step` (and, in the runner, its socket).
    """

    def __init__(self, max_threads: int = 32, lock: threading.RLock | None = None) -> None:
        self._pool = ThreadPoolExecutor(max_workers=max_threads, thread_name_prefix="plughost-tool")
        self._threads_running: dict[int, float] = {}
        self._next = 0
        self.lock = lock if lock is not None else threading.RLock()
        self.step: Step | None = None
        """The async handler step running now, or None."""
        self.pulsing = False
        """Set by the pulse thread, under :attr:`lock`, while it may send."""
        self.slow_step = 1.0
        """A step at least this long (seconds) is logged as blocking the event loop."""

    def stuck_calls(self) -> int:
        """Sync calls still running although their deadline passed (safe from any thread)."""
        now = time.monotonic()
        return sum(1 for deadline in list(self._threads_running.values()) if deadline < now)

    async def invoke(
        self, plugin_id: str, handler: Handler, arguments: dict[str, Any], timeout: float
    ) -> ResultFields:
        """Run ``handler`` with ``arguments`` under ``timeout`` seconds.

        Returns:
            The normalized result's fields (see :func:`plughost_sdk.results.normalized_fields`):
            the runner sends them on and never needs the model.

        Raises:
            TimeoutError: the call passed its deadline.
        """
        name = handler.declaration.name
        try:
            # What call() does, without its coroutine in between: a tool call is the hot path.
            with _CallScope(plugin_id, timeout):
                value = await self._started(plugin_id, handler, arguments, timeout, name)
        except TimeoutError:
            raise
        except Exception as exc:
            limit = describe_limit_error(exc, plugin_id)
            if limit is not None:
                return result_fields(ToolExecutionResult.failure(name, limit, "resource_limit"))
            return result_fields(normalize_exception(name, exc))
        if handler.adapt_result is not None:
            try:
                value = handler.adapt_result(value)
            except Exception as exc:  # the adapter reads plugin data; never let it escape
                return result_fields(normalize_exception(name, exc))
        return normalized_fields(name, value)

    async def call(
        self,
        plugin_id: str,
        target: Callee,
        arguments: dict[str, Any],
        timeout: float,
        *,
        name: str = "",
    ) -> Any:
        """Run any plugin callable (a tool, a command, a hook handler...) and return its value.

        Args:
            plugin_id: The plugin the callable belongs to.
            target: The callable.
            arguments: Its keyword arguments (filtered to what it accepts).
            timeout: Seconds until its deadline.
            name: How logs name it; its qualified name by default.

        Raises:
            TimeoutError: the call passed its deadline.
            Exception: whatever the plugin's code raised.
        """
        with _CallScope(plugin_id, timeout):
            return await self._started(plugin_id, target, arguments, timeout, name)

    def _started(
        self, plugin_id: str, target: Callee, arguments: dict[str, Any], timeout: float, name: str
    ) -> Awaitable[Any]:
        """Start ``target``: its coroutine, stepped and timed, or its run in a worker thread."""
        kwargs = _filter_kwargs(target, arguments)
        if target.is_async:
            label = name or getattr(target.function, "__qualname__", "handler")
            step = Step(plugin_id, label, 0.0, time.monotonic() + timeout)
            return _TimedSteps(target.function(**kwargs), self, step)
        return self._run_sync(target, kwargs, timeout)

    async def _run_sync(self, target: Callee, kwargs: dict[str, Any], timeout: float) -> Any:
        self._next += 1
        key = self._next
        self._threads_running[key] = time.monotonic() + timeout
        context = contextvars.copy_context()
        call = functools.partial(context.run, target.function, **kwargs)
        thread_future = self._pool.submit(call)
        # Done only when the thread really returns, not when the waiting task gives up.
        thread_future.add_done_callback(lambda _: self._threads_running.pop(key, None))
        return await asyncio.wrap_future(thread_future)

    def shutdown(self) -> None:
        """Stop accepting work; running threads are abandoned (the process is exiting)."""
        self._pool.shutdown(wait=False, cancel_futures=True)


class _CallScope:
    """One plugin call's context and deadline, around awaiting it.

    Inside, :data:`current_plugin` and :data:`call_deadline` name the call (its
    capability calls inherit them), and at the deadline the current task is
    cancelled: the cancellation leaves the block as ``TimeoutError`` unless
    someone else cancelled the task too (then it stays a cancellation), exactly
    as ``asyncio.timeout`` does it, at a fraction of its cost on every call.
    """

    __slots__ = ("_cancelling", "_deadline_token", "_expired", "_handle", "_plugin_token", "_task")

    def __init__(self, plugin_id: str, timeout: float) -> None:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a plugin call's deadline needs a task")
        loop = task.get_loop()
        when = loop.time() + timeout
        self._task = task
        self._cancelling = task.cancelling()
        self._expired = False
        self._handle = loop.call_at(when, self._expire)
        self._plugin_token = current_plugin.set(plugin_id)
        self._deadline_token = call_deadline.set(when)

    def _expire(self) -> None:
        self._expired = True
        self._task.cancel()

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, _: Any
    ) -> None:
        self._handle.cancel()
        call_deadline.reset(self._deadline_token)
        current_plugin.reset(self._plugin_token)
        if not self._expired:
            return
        if self._task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:
            raise TimeoutError from exc


class _TimedSteps:
    """Drives a handler's coroutine one step at a time, recording each step on the invoker.

    Awaiting it delegates every ``send``/``throw`` of the task to the handler's
    coroutine, so the handler runs exactly as if awaited directly.
    """

    __slots__ = ("_coro", "_invoker", "_step")

    def __init__(self, coro: Coroutine[Any, Any, Any], invoker: Invoker, step: Step) -> None:
        self._coro = coro
        self._invoker = invoker
        self._step = step

    def __await__(self) -> Generator[Any, Any, Any]:
        return self  # an iterator with send/throw/close, which await delegates to

    def __iter__(self) -> _TimedSteps:
        return self

    def __next__(self) -> Any:
        return self.send(None)

    def send(self, value: Any) -> Any:
        return self._run(self._coro.send, value)

    def throw(self, *args: Any) -> Any:
        return self._run(self._coro.throw, *args)

    def close(self) -> None:
        self._coro.close()

    def _run(self, resume: Callable[..., Any], *args: Any) -> Any:
        invoker, step = self._invoker, self._step
        started = step.started = time.monotonic()
        invoker.step = step
        try:
            return resume(*args)
        finally:
            invoker.step = None
            if invoker.pulsing:  # the pulse thread may be sending: the socket is its own until
                with invoker.lock:  # it is done, and the loop must not touch it before
                    pass
            took = time.monotonic() - started
            if took >= invoker.slow_step:
                _warn_blocked(step, took)


def _warn_blocked(step: Step, took: float) -> None:
    log.warning(
        "async handler %s of plugin %s blocked the event loop for %.1f s in one step: "
        "the heartbeat, log forwarding and every other call of this runner waited. "
        "Make it a plain def (it then runs in a worker thread), or move the blocking "
        "work into await asyncio.to_thread(...), or use an async library",
        step.handler,
        step.plugin_id,
        took,
    )


def _filter_kwargs(target: Callee, arguments: dict[str, Any]) -> dict[str, Any]:
    if target.accepts_any:
        return arguments
    return {k: v for k, v in arguments.items() if k in target.accepted}
