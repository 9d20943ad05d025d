"""What a call that could not run returns, and how its span is described.

The registry routes every call; when the tool does not exist or its provider
breaks, the caller (often a model) still gets exactly one result, written so
it can act on it: the names it may have meant, or which provider failed and
how. Kept apart from :mod:`plughost.tools.registry` so the routing reads on
its own.
"""

from __future__ import annotations

import difflib
import logging
from typing import Any

from plughost_sdk.models import ToolExecutionResult, ToolSpec

__all__ = ["describe_span", "not_found", "provider_failed", "provider_returned"]

# The registry's logger: these are the registry's records, wherever the code lives.
log = logging.getLogger("plughost.tools.registry")

_SUGGESTIONS = 3
_LISTED_IN_ERRORS = 20


def not_found(name: str, names: list[str]) -> ToolExecutionResult:
    """``tool_not_found`` for ``name``: close names first, then the tools there are."""
    by_lower = {n.lower(): n for n in reversed(names)}
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=_SUGGESTIONS, cutoff=0.6)
    message = f"Tool not found: {name}."
    if close:
        message += f" Did you mean: {', '.join(by_lower[c] for c in close)}?"
    shown = ", ".join(names[:_LISTED_IN_ERRORS]) or "none"
    extra = len(names) - _LISTED_IN_ERRORS
    message += f"\nAvailable tools: {shown}" + (f" (and {extra} more)." if extra > 0 else ".")
    return ToolExecutionResult.failure(name, message, "tool_not_found")


def provider_failed(tool: str, provider: str, exc: Exception) -> ToolExecutionResult:
    """``provider_error``: the provider raised instead of returning a result."""
    log.exception("tool provider raised tool=%s provider=%s", tool, provider, exc_info=exc)
    message = f"Tool {tool} failed in provider {provider}: {type(exc).__name__}: {exc}"
    return ToolExecutionResult.failure(tool, message, "provider_error")


def provider_returned(tool: str, provider: str, result: object) -> ToolExecutionResult:
    """``provider_error``: the provider returned something that is not a result."""
    log.error("tool provider returned %s tool=%s", type(result).__name__, tool)
    message = (
        f"Tool {tool} failed in provider {provider}: it returned a "
        f"{type(result).__name__} instead of a ToolExecutionResult"
    )
    return ToolExecutionResult.failure(tool, message, "provider_error")


def describe_span(span: Any, spec: ToolSpec | None, result: ToolExecutionResult) -> None:
    """Name the provider and the outcome on a call's span (OpenTelemetry is imported here)."""
    from opentelemetry.trace import Status, StatusCode

    if spec is not None:
        span.set_attribute("plughost.provider", spec.provider_name)
        span.set_attribute("plughost.provider_type", spec.provider_type)
        plugin_id = spec.metadata.get("plugin_id")
        if isinstance(plugin_id, str):
            span.set_attribute("plughost.plugin_id", plugin_id)
    if not result.success:
        span.set_attribute("plughost.error_code", result.error_code or "")
        span.set_status(Status(StatusCode.ERROR, result.error_code or "failed"))
