"""Hook handlers that run after hooks_a's, to show whether a chain went on."""

from __future__ import annotations

from typing import Any

from plughost_sdk import HookHandler, HookOrder, Plugin


def _step(kwargs: dict[str, Any], name: str) -> dict[str, Any]:
    return {"modified_kwargs": {**kwargs, "trail": [*kwargs.get("trail", []), name]}}


class HooksB(Plugin):
    @HookHandler("test.order", name="b_early", order=HookOrder.EARLY)
    async def b_early(self, **kwargs: Any) -> Any:
        return _step(kwargs, "b_early")

    @HookHandler("test.order", name="b_normal")
    async def b_normal(self, **kwargs: Any) -> Any:
        return _step(kwargs, "b_normal")

    @HookHandler("test.abort_action", name="after_abort_action")
    async def after_abort_action(self, **kwargs: Any) -> Any:
        return _step(kwargs, "b")

    @HookHandler("test.abort_policy", name="after_abort_policy", order=HookOrder.LATE)
    async def after_abort_policy(self, **kwargs: Any) -> Any:
        return _step(kwargs, "b")

    @HookHandler("test.skip_policy", name="after_skip_policy", order=HookOrder.LATE)
    async def after_skip_policy(self, **kwargs: Any) -> Any:
        return _step(kwargs, "b")

    @HookHandler("test.log_policy", name="after_log_policy", order=HookOrder.LATE)
    async def after_log_policy(self, **kwargs: Any) -> Any:
        return _step(kwargs, "b")

    @HookHandler("test.timeout", name="after_timeout", order=HookOrder.LATE)
    async def after_timeout(self, **kwargs: Any) -> Any:
        return _step(kwargs, "b")

    @HookHandler("test.crash", name="after_crash", order=HookOrder.LATE)
    async def after_crash(self, **kwargs: Any) -> Any:
        return _step(kwargs, "b")


def create_plugin() -> HooksB:
    return HooksB()
