"""Label values of ``/metrics`` that come from outside the host, each from a bounded set.

Every distinct label value is a series that Prometheus keeps, and the host's
registry keeps too, for the life of the process. Some values are chosen by
others: a plugin picks the ``error_code`` of each failure it returns, a client
(or a model) the name of each tool it calls, a remote runner its own id. So:

- **Error codes** are one of :data:`KNOWN_ERROR_CODES` (those the host, the
  runner and the SDK give failures); any other is counted as ``other``.
- **Tool names** are the name of the tool that ran; a name that matched no tool
  is counted as ``(no such tool)``, never as itself.
- **Tools, runners and plugins** keep their own value for the first
  :data:`MAX_VALUES` distinct values of each label (more than a host ever
  serves); the ones after those are counted as ``other``.

What does not live here: the metrics themselves (:mod:`plughost.web.metrics`).
"""

from __future__ import annotations

from typing import Final

from plughost_sdk import wire

__all__ = ["KNOWN_ERROR_CODES", "MAX_VALUES", "NO_SUCH_TOOL", "OTHER", "LabelValues", "error_code"]

OTHER: Final = "other"
NO_SUCH_TOOL: Final = "(no such tool)"
MAX_VALUES: Final = 1024
"""Distinct values one label keeps before the rest are counted as ``other``."""

KNOWN_ERROR_CODES: Final = frozenset(
    {
        *wire.ERROR_CODES,
        # what the SDK makes of a handler's return value or exception
        "tool_error",
        "plugin_exception",
        "invalid_result",
        # the registry, the providers and the tool search
        "tool_not_found",
        "tool_not_visible",
        "tool_not_discovered",
        "tool_disabled",
        "invalid_arguments",
        "registry_error",
        "provider_error",
        "server_unavailable",
        "outcome_unknown",
        # components (commands, handlers, APIs) and the runner's own limits
        "handler_failed",
        "circuit_open",
        "resource_limit",
        "api_not_found",
        "api_offline",
        "ambiguous",
        "not_public",
        "bad_arguments",
        "aborted",
        "error",
    }
)
"""The error codes the host counts by name (the wire's, the SDK's and the host's own)."""


def error_code(code: str | None) -> str:
    """The ``code`` label of a failure: a known code, else ``other``."""
    code = code or "error"
    return code if code in KNOWN_ERROR_CODES else OTHER


class LabelValues:
    """The values one label keeps: the first ``limit`` distinct ones, then ``other``."""

    def __init__(self, limit: int = MAX_VALUES) -> None:
        self._limit = limit
        self._seen: set[str] = set()

    def __call__(self, value: str) -> str:
        """``value`` itself while it is one of the first ``limit``, else ``other``."""
        if value in self._seen:
            return value
        if len(self._seen) >= self._limit:
            return OTHER
        self._seen.add(value)
        return value
