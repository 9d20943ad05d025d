"""Run one tool call inside the runner: kwargs, sync or async, deadline, normalization.

Async handlers run on the runner's event loop; sync handlers run in a thread
pool so they cannot stall the loop (and with it the heartbeat and every other
call). A sync handler that overstays its deadline cannot be interrupted, so it
is counted as *stuck*; the heartbeat reports stuck calls and the host recycles
the runner.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from plughost_runner.capture import current_plugin
from plughost_runner.limits import describe_limit_error
from plughost_runner.loader import Handler
from plughost_sdk.models import ToolExecutionResult
from plughost_sdk.results import normalize_exception, normalize_result

__all__ = ["Callee", "Invoker", "call_deadline"]

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


class Invoker:
    """Calls handlers and keeps count of sync calls still running past their deadline."""

    def __init__(self, max_threads: int = 32) -> None:
        self._pool = ThreadPoolExecutor(max_workers=max_threads, thread_name_prefix="plughost-tool")
        self._threads_running: dict[int, float] = {}
        self._next = 0

    def stuck_calls(self) -> int:
        """Sync calls still running although their deadline passed."""
        now = time.monotonic()
        return sum(1 for deadline in self._threads_running.values() if deadline < now)

    async def invoke(
        self, plugin_id: str, handler: Handler, arguments: dict[str, Any], timeout: float
    ) -> ToolExecutionResult:
        """Run ``handler`` with ``arguments`` under ``timeout`` seconds.

        Raises:
            TimeoutError: the call passed its deadline.
        """
        name = handler.declaration.name
        try:
            value = await self.call(plugin_id, handler, arguments, timeout)
        except TimeoutError:
            raise
        except Exception as exc:
            limit = describe_limit_error(exc)
            if limit is not None:
                return ToolExecutionResult.failure(name, limit, "resource_limit")
            return normalize_exception(name, exc)
        if handler.adapt_result is not None:
            try:
                value = handler.adapt_result(value)
            except Exception as exc:  # the adapter reads plugin data; never let it escape
                return normalize_exception(name, exc)
        return normalize_result(name, value)

    async def call(
        self, plugin_id: str, target: Callee, arguments: dict[str, Any], timeout: float
    ) -> Any:
        """Run any plugin callable (a tool, a command, a hook handler...) and return its value.

        Raises:
            TimeoutError: the call passed its deadline.
            Exception: whatever the plugin's code raised.
        """
        kwargs = _filter_kwargs(target, arguments)
        loop = asyncio.get_running_loop()
        plugin_token = current_plugin.set(plugin_id)
        deadline_token = call_deadline.set(loop.time() + timeout)
        try:
            async with asyncio.timeout(timeout):
                if target.is_async:
                    return await target.function(**kwargs)
                return await self._run_sync(target, kwargs, timeout)
        finally:
            call_deadline.reset(deadline_token)
            current_plugin.reset(plugin_token)

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


def _filter_kwargs(target: Callee, arguments: dict[str, Any]) -> dict[str, Any]:
    if target.accepts_any:
        return arguments
    return {k: v for k, v in arguments.items() if k in target.accepted}
