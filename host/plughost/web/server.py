"""WebConsole: the operator's console served by uvicorn inside the host's own event loop.

::

    async with PluginHost(settings=settings) as host, WebConsole(host) as console:
        print("console at", console.login_url)      # the token travels in the fragment
        ...

or, inside a task group, ``await console.run(ready=event)`` until cancelled.
The console attaches itself to the host while it runs (an event callback, a
call observer on ``host.tools``, a log handler on the root logger) and detaches
when it stops. The socket is bound before anything is served, so the URL works
the moment :meth:`WebConsole.run` signals ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import socket
import time
from collections.abc import Generator
from types import TracebackType

import uvicorn

from plughost.events import LifecycleEvent
from plughost.host import PluginHost
from plughost.mcp.uvicorn_embed import EmbeddedUvicorn, is_loopback
from plughost.own_services import OWN_SERVICES
from plughost.settings import WebSettings
from plughost.web.app import build_app
from plughost.web.feed import ConsoleFeed, FeedLogHandler
from plughost.web.guard import ConsoleGuard
from plughost.web.metrics import ConsoleMetrics, call_source
from plughost.web.snapshot import EventTracker
from plughost.web.stats import CallStats
from plughost_sdk.models import ToolExecutionResult, ToolSpec

__all__ = ["WebConsole"]

log = logging.getLogger(__name__)

_SHUTDOWN_GRACE = 3.0


class WebConsole:
    """Serves the console for one host; see the module docstring."""

    def __init__(self, host: PluginHost, settings: WebSettings | None = None) -> None:
        """Check the address; nothing is bound until :meth:`run`.

        Raises:
            ValueError: the address is malformed, or not loopback without ``allow_remote``.
        """
        self.host = host
        self.settings = settings or host.settings.web
        self.bind_host, self.bind_port = _parse_address(self.settings.address or "127.0.0.1:0")
        if not self.settings.allow_remote and not is_loopback(self.bind_host):
            raise ValueError(
                f"refusing to serve the console on {self.bind_host!r}: it is not a loopback "
                "address; bind 127.0.0.1, or allow it (serve.allow_remote / web.allow_remote) "
                "and give the token only to operators"
            )
        self.token = self.settings.token or secrets.token_urlsafe(24)
        self.host.redactor.add(self.token)
        self.stats = CallStats()
        self.tracker = EventTracker(host.settings.runner.restart_window)
        self.metrics = ConsoleMetrics(host)
        self.feed = ConsoleFeed(self.settings.feed_size, asyncio.get_running_loop())
        self.closing = asyncio.Event()
        self.started = time.time()
        self.port: int | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        """The console's address, once bound."""
        shown = f"[{self.bind_host}]" if ":" in self.bind_host else self.bind_host
        return f"http://{shown}:{self.port}/"

    @property
    def login_url(self) -> str:
        """The address with the token in its fragment (never sent to the server by a browser)."""
        return f"{self.url}#token={self.token}"

    async def __aenter__(self) -> WebConsole:
        ready = asyncio.Event()
        self._task = asyncio.create_task(self.run(ready=ready))
        waiter = asyncio.create_task(ready.wait())
        await asyncio.wait({self._task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if self._task.done():
            self._task.result()  # raises why it could not start
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def run(self, *, ready: asyncio.Event | None = None) -> None:
        """Serve until cancelled; set ``ready`` once the address is bound.

        Raises:
            OSError: the address cannot be bound (the port is taken, say).
        """
        sock = socket.create_server(
            (self.bind_host.strip("[]"), self.bind_port),
            family=socket.AF_INET6 if ":" in self.bind_host else socket.AF_INET,
            backlog=128,
        )
        sock.setblocking(False)
        self.port = int(sock.getsockname()[1])
        app = ConsoleGuard(build_app(self), self.token, loopback_bind=is_loopback(self.bind_host))
        config = uvicorn.Config(
            app,
            log_config=None,
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=int(_SHUTDOWN_GRACE),
        )
        server = EmbeddedUvicorn(config)
        # Plugins never reach it, whatever their network grants (plughost.own_services).
        own = OWN_SERVICES.serving("console", str(sock.getsockname()[0]), self.port)
        with self._attached(), contextlib.closing(sock), own:
            serving = asyncio.create_task(server.serve(sockets=[sock]))
            log.info("console serving on %s", self.url)
            if ready is not None:
                ready.set()
            try:
                await asyncio.shield(serving)
            finally:
                self.closing.set()  # ends the live streams, so uvicorn can finish
                server.should_exit = True
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(serving), _SHUTDOWN_GRACE + 2)

    @contextlib.contextmanager
    def _attached(self) -> Generator[None, None, None]:
        for past in self.host.events.history():
            self._on_event(past)
        handler = FeedLogHandler(self.feed)
        root = logging.getLogger()
        root.addHandler(handler)
        self.host.events.add_callback(self._on_event)
        self.host.tools.add_call_observer(self._on_call)
        try:
            yield
        finally:
            self.host.tools.remove_call_observer(self._on_call)
            self.host.events.remove_callback(self._on_event)
            root.removeHandler(handler)

    def _on_event(self, event: LifecycleEvent) -> None:
        self.feed.add_event(event)
        self.tracker.observe(event)
        self.metrics.observe_event(event)

    def _on_call(self, spec: ToolSpec | None, result: ToolExecutionResult, seconds: float) -> None:
        self.stats.record(call_source(spec), seconds, result.success)
        self.metrics.observe_call(spec, result, seconds)


def _parse_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ValueError(f"the console address must be HOST:PORT, got {address!r}")
    return host or "127.0.0.1", int(port)
