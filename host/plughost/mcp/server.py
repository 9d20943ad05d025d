"""Serve a ToolRegistry over MCP, on stdio or streamable HTTP.

:func:`serve_stdio` and :func:`serve_http` run a
:class:`~plughost.mcp.registry_server.RegistryMCPServer` (the handlers and the
change notifications, re-exported here) on a transport, and end it in order:
once the host has drained its calls, every call a client is waiting on is
answered and written out before the transport closes.

HTTP binds loopback unless told otherwise: serving another interface needs
``allow_remote=True``, because the server runs tools for whoever connects and
has no authentication of its own. uvicorn runs inside the caller's event loop
(:mod:`plughost.mcp.uvicorn_embed`).

What does not live here: the CLI (``plughost serve --mcp-stdio`` /
``--mcp-http``), what the server answers (:mod:`plughost.mcp.registry_server`)
and result conversion (:mod:`plughost.mcp.content`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import anyio
import uvicorn
from starlette.types import ASGIApp

from plughost.mcp.bearer import require_bearer
from plughost.mcp.event_store import MemoryEventStore
from plughost.mcp.forwarding import CallForwarder
from plughost.mcp.input_rounds import DEFAULT_INPUT_TIMEOUT, DEFAULT_MAX_PARKED
from plughost.mcp.pagination import DEFAULT_PAGE_SIZE
from plughost.mcp.quick_answers import quick_answers_app
from plughost.mcp.registry_server import RegistryMCPServer, ToolSource
from plughost.mcp.shutdown import HttpActivity, stop_requested
from plughost.mcp.shutdown import written as written_out
from plughost.mcp.stdio_server import stdio_streams
from plughost.mcp.uvicorn_embed import (
    EmbeddedUvicorn,
    bind,
    first_of,
    is_loopback,
    run_uvicorn,
    signal_startup,
)
from plughost.own_services import OWN_SERVICES

__all__ = [
    "DEFAULT_HTTP_PORT",
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_SESSION_IDLE_TIMEOUT",
    "MCP_HTTP_PATH",
    "RegistryMCPServer",
    "is_loopback",
    "serve_http",
    "serve_stdio",
]

log = logging.getLogger(__name__)

DEFAULT_HTTP_PORT = 8765
DEFAULT_SESSION_IDLE_TIMEOUT = 600.0
"""Seconds an HTTP session may stay idle before it is closed."""
DEFAULT_MAX_SESSIONS = 500
"""HTTP sessions open at once, at most (each costs tens of kilobytes and a task)."""
MCP_HTTP_PATH = "/mcp"
SSE_RETRY_MS = 1000
"""The reconnection delay suggested to clients in each SSE stream's priming event."""
_SHUTDOWN_GRACE = 3.0


async def serve_stdio(
    registry: ToolSource,
    *,
    name: str = "plughost",
    page_size: int = DEFAULT_PAGE_SIZE,
    input_timeout: float = DEFAULT_INPUT_TIMEOUT,
    max_parked: int = DEFAULT_MAX_PARKED,
    stopping: asyncio.Event | None = None,
    written: asyncio.Event | None = None,
) -> None:
    """Serve ``registry`` over this process's stdin and stdout until stdin closes.

    While serving, stray writes to stdout go to stderr and reads of stdin find
    end-of-file, so nothing corrupts the protocol stream
    (:mod:`plughost.mcp.stdio_server`). Once ``stopping`` is set (the host has
    drained its calls), the server waits until every call it was answering has
    been answered and written out, then returns: no client loses a result to a
    shutdown. ``written`` is set at that moment: when stdin is not a pipe, leaving
    the SDK's stdio transport still waits for stdin to close (its reader is a
    thread that cannot be cancelled), so a program that exits need not wait for
    this to return.
    """
    bridge = RegistryMCPServer(
        registry,
        name=name,
        page_size=page_size,
        input_timeout=input_timeout,
        max_parked=max_parked,
        one_client=True,
    )
    log.info("mcp server serving on stdio name=%s", name)
    forwarder = CallForwarder(bridge)  # answers the calls that need nothing of the session
    async with (
        bridge.running(),
        stdio_streams() as (read_stream, write_stream),
        forwarder.serving(read_stream, write_stream) as (to_server, from_server),
        anyio.create_task_group() as tg,
    ):

        async def run() -> None:
            await bridge.server.run(
                to_server, from_server, bridge.server.create_initialization_options()
            )
            tg.cancel_scope.cancel()  # stdin closed

        tg.start_soon(run)
        if stopping is not None:
            await stopping.wait()
            await bridge.calls.quiet()
            await written_out(write_stream)
            if written is not None:
                written.set()
            tg.cancel_scope.cancel()


async def serve_http(
    registry: ToolSource,
    host: str = "127.0.0.1",
    port: int = DEFAULT_HTTP_PORT,
    *,
    ready: asyncio.Event | None = None,
    announce: Callable[[str], None] | None = None,
    allow_remote: bool = False,
    name: str = "plughost",
    bearer_token: str | None = None,
    session_idle_timeout: float | None = DEFAULT_SESSION_IDLE_TIMEOUT,
    max_sessions: int | None = DEFAULT_MAX_SESSIONS,
    page_size: int = DEFAULT_PAGE_SIZE,
    input_timeout: float = DEFAULT_INPUT_TIMEOUT,
    max_parked: int = DEFAULT_MAX_PARKED,
    stopping: asyncio.Event | None = None,
) -> None:
    """Serve ``registry`` over streamable HTTP at ``http://{host}:{port}/mcp`` until cancelled.

    Once ``stopping`` is set (the host has drained its calls), the server waits
    until every call it was answering has been answered, then shuts down, so
    that no client loses a result to a shutdown.

    Each client holds a session; one that sends nothing for ``session_idle_timeout``
    seconds is closed (its client gets HTTP 404 and starts a new one), and while
    ``max_sessions`` are open a new session is refused with HTTP 503.

    Args:
        registry: The tools to serve.
        host: The interface to bind; loopback by default.
        port: The TCP port (0 picks a free one, logged at INFO).
        ready: Set once the server accepts connections.
        announce: Called with the server's URL (the real port when ``port`` is 0) once
            it accepts connections, before ``ready`` is set.
        allow_remote: Required to bind anything but a loopback address.
        name: The server name clients see.
        bearer_token: When given, every request must carry ``Authorization: Bearer <it>``
            (``plughost serve --mcp-http`` always gives one, see :mod:`plughost.mcp.bearer`).
        session_idle_timeout: Seconds before an idle session is closed; None keeps it forever.
        max_sessions: Open sessions at most; None for no limit.
        page_size: Tools per ``tools/list`` page.
        input_timeout: Seconds a call parked for a 2026-07-28 client's answer is kept.
        max_parked: Calls parked for a client's answer at once, at most; past it a
            plugin's question is refused (the plugin sees why).

    Raises:
        ValueError: ``host`` is not a loopback address and ``allow_remote`` is False.
        OSError: The address cannot be bound (for example, the port is taken).
    """
    if not allow_remote and not is_loopback(host):
        raise ValueError(
            f"refusing to serve MCP on {host!r}: it is not a loopback address, and the "
            "server runs tools for anyone who can connect, without authentication; "
            "bind 127.0.0.1 (the default) or pass allow_remote=True"
        )
    host = host.strip("[]")
    bridge = RegistryMCPServer(
        registry,
        name=name,
        page_size=page_size,
        input_timeout=input_timeout,
        max_parked=max_parked,
    )
    # On 127.0.0.1, localhost and ::1 the SDK refuses foreign Host/Origin headers
    # (DNS rebinding protection).
    # The event store makes every SSE stream open with a priming event and a retry
    # hint, and lets a client that lost a stream resume it with Last-Event-ID.
    # A request whose answer comes first and at once gets it as one JSON body.
    app: ASGIApp = quick_answers_app(
        bridge.server,
        path=MCP_HTTP_PATH,
        host=host,
        session_idle_timeout=session_idle_timeout,
        max_sessions=max_sessions,
        event_store=MemoryEventStore(),
        retry_interval=SSE_RETRY_MS,
    )
    if bearer_token is not None:
        app = require_bearer(app, bearer_token)
    activity = HttpActivity()
    app = activity.wrap(app)
    started = anyio.Event()
    config = uvicorn.Config(
        signal_startup(app, started),
        http="httptools",  # C, not h11's pure Python: about 7% less CPU per call
        log_config=None,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=int(_SHUTDOWN_GRACE),
    )
    server = EmbeddedUvicorn(config)
    sock = bind(host, port)  # bound and listening before serving: no startup race
    address = sock.getsockname()
    # Plugins never reach it, whatever their network grants (plughost.own_services).
    own = OWN_SERVICES.serving("MCP HTTP server", str(address[0]), int(address[1]))
    with contextlib.closing(sock), own:
        async with bridge.running(), anyio.create_task_group() as tg:
            stopped = anyio.Event()
            tg.start_soon(run_uvicorn, server, sock, stopped)
            try:
                await first_of(started, stopped)
                if started.is_set():
                    shown = f"[{address[0]}]" if ":" in address[0] else address[0]
                    url = f"http://{shown}:{address[1]}{MCP_HTTP_PATH}"
                    log.info("mcp server serving on %s", url)
                    if announce is not None:
                        announce(url)
                    if ready is not None:
                        ready.set()
                if stopping is not None and await stop_requested(stopped, stopping):
                    await bridge.calls.quiet()  # every call answered; uvicorn sends the rest
                    await activity.settled()  # and what clients ask on receiving an answer
                    server.should_exit = True
                await stopped.wait()
            finally:
                server.should_exit = True
