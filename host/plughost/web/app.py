"""The console's HTTP surface: the page, a JSON API, a live stream and ``/metrics``.

====================================  ====================================================
``GET /``                             the page (``static/index.html``)
``GET /api/overview``                 plugins, runners and MCP servers, as the page shows
``GET /api/tools?session=ID``         every tool, enabled globally and in session ``ID``;
                                      commands, event handlers, hooks, APIs, home cards
``GET /api/feed?plugin=&level=``      the newest feed entries, filtered
``GET /api/stream``                   server-sent events: ``overview`` every second,
                                      ``feed`` for each new entry (a bounded number
                                      open at once: :mod:`plughost.web.streams`)
``POST /api/plugins/{id}/{action}``   ``reload``, ``enable`` or ``disable`` a plugin
``POST /api/tools/enabled``           ``{"full_name", "enabled", "session_id"?}``
``POST /api/components/enabled``      ``{"key": "KIND:plugin_id.name", "enabled"}``
``POST /api/call``                    ``{"tool", "arguments", "session_id"?}``: try a tool
``GET /metrics``                      Prometheus text format
====================================  ====================================================

Who may call what is :mod:`plughost.web.guard`'s business.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Protocol

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send

import plughost.web.snapshot as snapshot
from plughost import __version__
from plughost.host import PluginHost
from plughost.web.feed import ConsoleFeed, FeedEntry
from plughost.web.metrics import ConsoleMetrics
from plughost.web.stats import CallStats
from plughost.web.streams import StreamRefused, StreamSlots
from plughost.web.trial import try_tool

__all__ = ["STATIC", "ConsoleParts", "build_app"]

STATIC = Path(__file__).resolve().parent / "static"
_TICK = 1.0
_FEED_LIMIT = 1000
_RENDERED = 256  # feed entries kept rendered for the streams that have yet to send them
_PACE = 0.25  # seconds between two writes of feed entries to one stream


class ConsoleParts(Protocol):
    """What the routes read from (a :class:`~plughost.web.server.WebConsole`)."""

    host: PluginHost
    feed: ConsoleFeed
    stats: CallStats
    tracker: snapshot.EventTracker
    metrics: ConsoleMetrics
    closing: asyncio.Event
    started: float


def build_app(console: ConsoleParts) -> Starlette:
    """The console's routes over ``console``'s host, feed, statistics and metrics."""
    api = _Api(console)
    routes = [
        Route("/", api.page),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
        Route("/api/overview", api.overview),
        Route("/api/tools", api.tools),
        Route("/api/feed", api.feed),
        Route("/api/stream", api.stream),
        Route("/api/plugins/{plugin_id}/{action}", api.plugin_action, methods=["POST"]),
        Route("/api/tools/enabled", api.tool_enabled, methods=["POST"]),
        Route("/api/components/enabled", api.component_enabled, methods=["POST"]),
        Route("/api/call", api.call, methods=["POST"]),
        Route("/metrics", api.metrics),
    ]
    return Starlette(routes=routes)


class _Api:
    def __init__(self, console: ConsoleParts) -> None:
        self._console = console
        self._host = console.host
        self._calls = itertools.count(1)
        self.slots = StreamSlots()
        self._overview_sse = ("", -_TICK)  # one overview a tick for every stream together
        self._rendered: OrderedDict[int, str] = OrderedDict()

    async def page(self, request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"cache-control": "no-store"})

    def _overview(self) -> dict[str, Any]:
        console = self._console
        return {
            "time": time.time(),
            "version": __version__,
            "started": console.started,
            "plugins": snapshot.plugins(self._host, console.stats, console.tracker),
            "mcp": snapshot.mcp_servers(self._host),
            "sandbox": snapshot.host_sandbox(self._host),
            "feed_size": console.feed.size,
        }

    async def overview(self, request: Request) -> Response:
        return _json(self._overview())

    async def tools(self, request: Request) -> Response:
        session = request.query_params.get("session", "")
        return _json(
            {
                "session": session,
                "tools": await snapshot.tools(self._host, session),
                "components": snapshot.components(self._host),
            }
        )

    async def feed(self, request: Request) -> Response:
        params = request.query_params
        limit = _int(params.get("limit"), 200)
        entries = self._console.feed.recent(
            plugin_id=params.get("plugin") or None,
            level=params.get("level") or None,
            limit=min(max(limit, 0), _FEED_LIMIT),
        )
        return _json({"entries": [e.to_dict() for e in entries]})

    async def stream(self, request: Request) -> Response:
        client = request.client.host if request.client is not None else ""
        try:
            self.slots.take(client)
        except StreamRefused as exc:
            return JSONResponse({"error": str(exc)}, exc.status, headers={"retry-after": "5"})
        return _HeldStream(
            self._events(),
            release=lambda: self.slots.give_back(client),
            media_type="text/event-stream",
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )

    async def _events(self) -> AsyncIterator[str]:
        closing = self._console.closing
        yield "retry: 1000\n\n"
        with self._console.feed.subscription() as queue:
            yield self._shared_overview()
            next_tick = time.monotonic() + _TICK
            while not closing.is_set():
                try:
                    async with asyncio.timeout(max(0.0, next_tick - time.monotonic())):
                        entries = [await queue.get()]
                except TimeoutError:
                    next_tick = time.monotonic() + _TICK
                    yield self._shared_overview()
                    continue
                while not queue.empty():
                    entries.append(queue.get_nowait())
                yield "".join(self._rendered_entry(entry) for entry in entries)
                # What arrives meanwhile waits in the queue and goes in the next write: a
                # stream wakes a few times a second, not once per entry (once per call).
                await asyncio.sleep(_PACE)

    def _shared_overview(self) -> str:
        """The overview event, made at most twice a tick however many streams send it."""
        text, made = self._overview_sse
        now = time.monotonic()
        if now - made >= _TICK / 2:
            text = _sse("overview", self._overview())
            self._overview_sse = (text, now)
        return text

    def _rendered_entry(self, entry: FeedEntry) -> str:
        """A feed entry's event, rendered once for every stream that sends it."""
        text = self._rendered.get(entry.seq)
        if text is None:
            text = self._rendered[entry.seq] = _sse("feed", entry.to_dict())
            if len(self._rendered) > _RENDERED:
                self._rendered.popitem(last=False)
        return text

    async def plugin_action(self, request: Request) -> Response:
        plugin_id = request.path_params["plugin_id"]
        action = request.path_params["action"]
        if plugin_id not in self._host.sources:
            return _error(404, f"no plugin {plugin_id!r}")
        if action == "reload":
            served = await self._host.reload_plugin(plugin_id)
            return _json({"plugin_id": plugin_id, "reloaded": served})
        if action in ("enable", "disable"):
            try:
                self._host.components.set_plugin_enabled(plugin_id, action == "enable")
            except KeyError as exc:
                return _error(409, str(exc.args[0]))
            return _json({"plugin_id": plugin_id, "enabled": action == "enable"})
        if action == "grant":
            body = await _body(request)
            destination, path = body.get("destination"), body.get("path")
            try:
                if isinstance(destination, str):
                    grants = await self._host.grant_network(plugin_id, [destination])
                    return _json({"plugin_id": plugin_id, "network": grants})
                if isinstance(path, str):
                    paths = await self._host.grant_write(plugin_id, path)
                    return _json({"plugin_id": plugin_id, "write": [str(p) for p in paths]})
            except ValueError as exc:
                return _error(400, str(exc))
            return _error(400, 'send {"destination": "api.example.com"} or {"path": "/srv/x"}')
        return _error(404, f"no action {action!r}; use reload, enable, disable or grant")

    async def tool_enabled(self, request: Request) -> Response:
        body = await _body(request)
        full_name, enabled = body.get("full_name"), body.get("enabled")
        session = body.get("session_id") or ""
        if not isinstance(full_name, str) or not isinstance(enabled, bool):
            return _error(400, 'send {"full_name": "plugin_id.tool", "enabled": true|false}')
        try:
            if session:
                self._host.components.set_enabled_for_session(full_name, str(session), enabled)
            else:
                self._host.components.set_enabled(full_name, enabled)
        except KeyError as exc:
            return _error(404, str(exc.args[0]))
        return _json({"full_name": full_name, "enabled": enabled, "session_id": session})

    async def component_enabled(self, request: Request) -> Response:
        body = await _body(request)
        key, enabled = body.get("key"), body.get("enabled")
        if not isinstance(key, str) or not isinstance(enabled, bool):
            return _error(400, 'send {"key": "KIND:plugin_id.name", "enabled": true|false}')
        try:
            self._host.components.set_component_enabled(key, enabled)
        except KeyError as exc:
            return _error(404, str(exc.args[0]))
        return _json({"key": key, "enabled": enabled})

    async def call(self, request: Request) -> Response:
        body = await _body(request)
        tool, arguments = body.get("tool"), body.get("arguments", {})
        if not isinstance(tool, str) or not isinstance(arguments, dict | str):
            return _error(400, 'send {"tool": NAME, "arguments": {...} or "JSON text"}')
        call_id = f"console_{next(self._calls)}"
        session = str(body.get("session_id") or "")
        return _json(
            await try_tool(self._host, tool, arguments, call_id=call_id, session_id=session)
        )

    async def metrics(self, request: Request) -> Response:
        return Response(self._console.metrics.render(), media_type=CONTENT_TYPE_LATEST)


class _HeldStream(StreamingResponse):
    """A streaming response that gives its stream slot back however it ends."""

    def __init__(self, content: AsyncIterator[str], *, release: Callable[[], None], **kw: Any):
        super().__init__(content, **kw)
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()


async def _body(request: Request) -> dict[str, Any]:
    try:
        data = json.loads(await request.body() or b"{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text else default
    except ValueError:
        return default


def _dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, default=str)


def _json(data: Any) -> Response:
    return Response(_dumps(data), media_type="application/json")


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)


def _sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {_dumps(data)}\n\n"
