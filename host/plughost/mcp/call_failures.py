"""The failed result of an upstream MCP tool call, by what went wrong.

One wording for the task path (:class:`~plughost.mcp.provider.MCPToolProvider`)
and the direct lane (:mod:`plughost.mcp.direct_lane`), so a model reads the same
words whichever way its call went: a lost connection says the call may have run,
a deadline names ``tool_timeout``, a server's refusal keeps its JSON-RPC code.
"""

from __future__ import annotations

import logging

import mcp_types as types
from mcp import MCPError
from pydantic import ValidationError

from plughost.mcp.delivery import OutcomeUnknownError
from plughost.mcp.session import describe_error
from plughost.mcp.status import ServerUnavailableError
from plughost_sdk.models import ToolExecutionResult

__all__ = ["call_failure"]

log = logging.getLogger(__name__)


def call_failure(
    name: str, server: str, target: str, timeout: float, exc: Exception
) -> ToolExecutionResult:
    """The failed result of a tool call to ``server`` that raised ``exc``."""
    if isinstance(exc, OutcomeUnknownError):
        message = f"MCP server {server!r} lost the connection during {target!r}: {exc}"
        return ToolExecutionResult.failure(name, message, "outcome_unknown")
    if isinstance(exc, TimeoutError):
        message = (
            f"MCP server {server!r} did not answer {target!r} within "
            f"{timeout:g} s (tool_timeout); the call was abandoned."
        )
        return ToolExecutionResult.failure(name, message, "timeout")
    if isinstance(exc, ServerUnavailableError):
        message = f"MCP server {server!r} is unavailable: {exc}"
        return ToolExecutionResult.failure(name, message, "server_unavailable")
    if isinstance(exc, MCPError):
        if exc.code == types.REQUEST_TIMEOUT:  # the server's own clock ran out first
            message = f"MCP server {server!r} reported a timeout: {exc.message}"
            return ToolExecutionResult.failure(name, message, "timeout")
        message = f"MCP server {server!r} refused {target!r}: {exc.message}"
        return ToolExecutionResult.failure(
            name, message, "tool_error", metadata={"mcp_error_code": exc.code}
        )
    if isinstance(exc, ValidationError):
        message = f"MCP server {server!r} sent a malformed result: {describe_error(exc)}"
        return ToolExecutionResult.failure(name, message, "invalid_result")
    log.error("mcp call failed server=%s tool=%s", server, target, exc_info=exc)
    message = f"MCP call to {server!r} failed: {describe_error(exc)}"
    return ToolExecutionResult.failure(name, message, "server_unavailable")
