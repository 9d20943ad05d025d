"""Hook handlers in every slot and with every error policy (paired with hooks_b)."""

from __future__ import annotations

import asyncio
from typing import Any

from plughost_sdk import ErrorPolicy, HookHandler, HookMode, HookOrder, Plugin


def _step(kwargs: dict[str, Any], name: str) -> dict[str, Any]:
    return {"modified_kwargs": {**kwargs, "trail": [*kwargs.get("trail", []), name]}}


class HooksA(Plugin):
    @HookHandler("test.order", name="a_late", order=HookOrder.LATE)
    async def a_late(self, **kwargs: Any) -> Any:
        return _step(kwargs, "a_late")

    @HookHandler("test.order", name="a_early", order=HookOrder.EARLY)
    def a_early(self, **kwargs: Any) -> Any:  # sync: runs in the runner's thread pool
        return _step(kwargs, "a_early")

    @HookHandler("test.order", name="a_observer", mode=HookMode.OBSERVE, order=HookOrder.EARLY)
    async def a_observer(self, trail: list[str], **kwargs: Any) -> Any:
        trail.append("observer was here")  # its own copy: never seen by the caller
        await self.ctx.call_capability("test.record", seen=list(trail))
        return _step(kwargs, "observer")

    @HookHandler("test.abort_action", name="stop_here", order=HookOrder.EARLY)
    async def stop_here(self, **kwargs: Any) -> Any:
        return {"action": "abort", "custom_result": "stopped on purpose"}

    @HookHandler("test.abort_policy", name="fails_abort", error_policy=ErrorPolicy.ABORT)
    async def fails_abort(self, **kwargs: Any) -> Any:
        raise RuntimeError("abort-policy handler failed")

    @HookHandler("test.skip_policy", name="fails_skip", error_policy=ErrorPolicy.SKIP)
    async def fails_skip(self, **kwargs: Any) -> Any:
        raise RuntimeError("skip-policy handler failed")

    @HookHandler("test.log_policy", name="fails_log", error_policy=ErrorPolicy.LOG)
    async def fails_log(self, **kwargs: Any) -> Any:
        raise RuntimeError("log-policy handler failed")

    @HookHandler("test.timeout", name="too_slow", timeout_ms=200)
    async def too_slow(self, **kwargs: Any) -> Any:
        await asyncio.sleep(30)
        return _step(kwargs, "too_slow")


def create_plugin() -> HooksA:
    return HooksA()
