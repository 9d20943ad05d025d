"""A plugin's way to the host: capability calls and progress, bound to its plugin id.

Each loaded plugin gets its own :class:`Bridge` (its ``ctx`` calls through
it), so the plugin id on a ``capability.call`` is the runner's, never one the
plugin chose. :class:`HostError` is the host's error answer to a request of
the runner (a refused hello, a denied capability), as the service raises it.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from plughost_runner.plugins.invoker import call_deadline
from plughost_runner.process.capture import current_call, current_cancel
from plughost_sdk import wire
from plughost_sdk.errors import CapabilityError

__all__ = ["Bridge", "HostError", "HostLink"]


class HostError(Exception):
    """The host answered a request of this runner with an error."""

    def __init__(self, error: wire.WireError) -> None:
        super().__init__(error["message"])
        self.error = error


class HostLink(Protocol):
    """What a bridge needs of the runner's service."""

    async def request(
        self, method: wire.Method, body: Any, *, plugin: str | None = None, timeout: float
    ) -> Any: ...

    def send_progress(
        self,
        call: int,
        plugin_id: str,
        progress: float,
        total: float | None,
        message: str | None,
    ) -> None: ...


class Bridge:
    """Carries one plugin's capability calls; the plugin id is bound here, not by the plugin."""

    def __init__(self, service: HostLink, plugin_id: str) -> None:
        self._service = service
        self._plugin_id = plugin_id

    async def call_capability(
        self, plugin_id: str, capability: str, args: dict[str, Any], timeout_ms: int | None
    ) -> Any:
        del plugin_id  # the caller's claim is ignored: one plugin cannot act as another
        timeout = (timeout_ms or 30_000) / 1000
        deadline = call_deadline.get()
        if deadline is not None:
            timeout = max(0.001, min(timeout, deadline - asyncio.get_running_loop().time()))
        # The call being served: the host lets ctx.call_tool through only while it runs.
        body = {"capability": capability, "args": args, "call": current_call.get()}
        try:
            reply = await self._service.request(
                "capability.call", body, plugin=self._plugin_id, timeout=timeout
            )
        except HostError as exc:
            raise CapabilityError(exc.error["code"], exc.error["message"]) from None
        except TimeoutError:
            raise CapabilityError(
                "timeout", f"capability {capability} did not answer within {timeout:.3g} s"
            ) from None
        return reply.get("value") if isinstance(reply, dict) else reply

    def is_cancelled(self) -> bool:
        flag = current_cancel.get()
        return flag is not None and flag.is_set()

    def report_progress(self, progress: float, total: float | None, message: str | None) -> None:
        call = current_call.get()
        if call is None:
            return  # not inside a tool call: nobody to tell
        self._service.send_progress(call, self._plugin_id, progress, total, message)
