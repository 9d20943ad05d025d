"""The one wording of every way a call to a runner can fail, as a failed tool result.

A call that times out, is refused by the runner, meets a crash or gets a reply
it cannot read becomes a :class:`ToolExecutionResult` with an ``error_code``
and a message that says what happened and what to do. Component calls reuse
the wording with their own noun (``hook handler rewrite of plugin ...``).
"""

from __future__ import annotations

from typing import Any

from plughost.runners.channel import RemoteError
from plughost_sdk.errors import RunnerCrashedError
from plughost_sdk.models import ToolExecutionResult

__all__ = ["KIND_WORDS", "call_failure", "component_failure", "component_reply"]

KIND_WORDS = {
    "COMMAND": "command",
    "EVENT_HANDLER": "event handler",
    "HOOK_HANDLER": "hook handler",
    "API": "API",
}


def call_failure(
    exc: Exception,
    tool: str,
    plugin_id: str,
    timeout: float,
    capped: bool = False,
    what: str = "tool",
) -> ToolExecutionResult:
    """The failed result of a call that raised ``exc``: one wording per failure."""
    if isinstance(exc, TimeoutError) or (isinstance(exc, RemoteError) and exc.code == "timeout"):
        # The runner's deadline is a hair earlier than ours, so either side may report first.
        limit = " (the plugin's wall-clock limit, limits.call_seconds)" if capped else ""
        message = (
            f"{what} {tool} of plugin {plugin_id} did not finish within {timeout:g} s{limit}; "
            "try again later or with a smaller request"
        )
        return ToolExecutionResult.failure(tool, message, "timeout")
    if isinstance(exc, RemoteError):
        return ToolExecutionResult.failure(tool, exc.error["message"], exc.code)
    if isinstance(exc, RunnerCrashedError):
        message = (
            f"plugin {plugin_id} crashed while running {what} {tool} ({exc}); it is being "
            "restarted, so the call may be retried"
        )
        return ToolExecutionResult.failure(tool, message, "plugin_crashed")
    return ToolExecutionResult.failure(
        tool, f"bad reply from plugin {plugin_id}: {exc}", "bad_payload"
    )


def component_failure(
    exc: Exception, name: str, plugin_id: str, timeout: float, kind: str, capped: bool = False
) -> dict[str, Any]:
    """The reply of a component call that raised ``exc`` (as :func:`call_failure` words it)."""
    failed = call_failure(exc, name, plugin_id, timeout, capped, what=KIND_WORDS.get(kind, kind))
    return {"success": False, "error": failed.error_message, "error_code": failed.error_code}


def component_reply(reply: Any) -> dict[str, Any]:
    """A runner's reply to a component call, or a failure when it is not a dict."""
    if not isinstance(reply, dict):
        return {"success": False, "error": "bad reply from the runner", "error_code": "internal"}
    return reply
