"""OpenTelemetry spans for tool calls, made only when the embedding program traces.

plughost never configures OpenTelemetry and never imports it on its own: importing
``opentelemetry.trace`` costs more than a whole tool call. A program that traces
has set up an SDK (``opentelemetry-sdk``), which imports the API; from then on
every call through :class:`~plughost.tools.registry.ToolRegistry` opens a
``plughost.tool_call`` span, and a call that goes to a runner opens a child
``plughost.runner_call`` span around the round trip to the runner process.
Without an SDK (only the API, or nothing) :func:`start_span` yields ``None`` and costs
one dictionary lookup.
"""

from __future__ import annotations

import contextlib
import os
import sys
from contextlib import AbstractContextManager
from typing import Any

__all__ = ["TRACER_NAME", "start_span", "tracing"]

TRACER_NAME = "plughost"


_NO_SPAN: AbstractContextManager[None] = contextlib.nullcontext()
"""Shared by every untraced call: entering it costs less than making a generator."""

_MISSING = object()

_PROVIDER_FROM_ENV = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
"""Whether the environment names a tracer provider (read once, when this module loads)."""


def tracing() -> bool:
    """Whether the program traces: a call path asks before building a span's attributes."""
    trace = sys.modules.get("opentelemetry.trace")
    return trace is not None and not _no_sdk(trace)


def start_span(name: str, attributes: dict[str, Any]) -> AbstractContextManager[Any]:
    """Open a span named ``name`` as the current span, if the program traces.

    Returns:
        A context manager giving the span (set attributes or a status on it), or
        None when nothing traces.
    """
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None or _no_sdk(trace):
        return _NO_SPAN
    span: AbstractContextManager[Any] = trace.get_tracer(TRACER_NAME).start_as_current_span(
        name, attributes=attributes
    )
    return span


def _no_sdk(trace: Any) -> bool:
    """True while no tracer provider was installed (the API's proxy is still in place).

    Asked twice on every call. The API's ``get_tracer_provider()`` looks the
    environment up each time while no provider is installed (about 1.5 µs, as much
    as the registry's own lookup of the tool), and the MCP SDK imports the API, so
    every host that uses MCP would pay it. The API's global is read directly
    instead; the API itself is asked only when that global is not where this
    module expects it, or when the environment names a provider (which the API
    loads on first use).
    """
    provider = getattr(trace, "_TRACER_PROVIDER", _MISSING)
    if provider is None and not _PROVIDER_FROM_ENV:
        return True
    if provider is None or provider is _MISSING:
        provider = trace.get_tracer_provider()
    return isinstance(provider, trace.ProxyTracerProvider)
