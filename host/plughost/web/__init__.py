"""The operator's console: a live web page over a running host, ``/metrics`` and traces.

Lives here: :class:`WebConsole` (serves the page, its JSON API, a live stream
of server-sent events and ``/metrics`` with uvicorn inside the caller's event
loop), the capped feed of events and log records, per-plugin call statistics,
the Prometheus collectors, and the static page itself (``static/``: HTML,
JavaScript and CSS shipped as package data, with no build step).

May import every other part of ``plughost`` except ``plughost.cli``, which
imports this package (``plughost serve --web``). Nothing outside ``cli``
imports it, so ``import plughost`` never loads starlette or prometheus_client.
"""

from __future__ import annotations

from plughost.web.server import WebConsole

__all__ = ["WebConsole"]
