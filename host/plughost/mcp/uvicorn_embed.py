"""uvicorn inside the host's own event loop: the plumbing shared by the MCP server and the console.

Lives here: :class:`EmbeddedUvicorn` (uvicorn that leaves Ctrl-C and SIGTERM to
the embedding program), :func:`bind` (a listening socket made before anything is
served, so the address works the moment the server says it is ready),
:func:`is_loopback`, and the pieces :func:`plughost.mcp.server.serve_http` uses
to learn when uvicorn has started and to stop it without tearing it apart
mid-request (:func:`signal_startup`, :func:`run_uvicorn`, :func:`first_of`).

Kept apart from :mod:`plughost.mcp.server` so that reading the server means
reading MCP, and so that :mod:`plughost.web`, which embeds uvicorn the same way,
shares this module without importing the MCP SDK: nothing here imports ``mcp``.

What does not live here: the ASGI apps themselves, and the decision of what to
bind (each caller checks its own address and its ``allow_remote``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Generator

import anyio
import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "EmbeddedUvicorn",
    "bind",
    "first_of",
    "is_loopback",
    "run_uvicorn",
    "signal_startup",
]


class EmbeddedUvicorn(uvicorn.Server):
    """uvicorn without its own signal handlers: the embedding program owns Ctrl-C and SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def signal_startup(app: ASGIApp, started: anyio.Event) -> ASGIApp:
    """Wrap ``app`` so that ``started`` is set once its lifespan startup completed."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await app(scope, receive, send)
            return

        async def watch(message: Message) -> None:
            await send(message)
            if message["type"] == "lifespan.startup.complete":
                started.set()

        await app(scope, receive, watch)

    return wrapped


async def first_of(*events: anyio.Event) -> None:
    """Return once any of ``events`` is set."""
    async with anyio.create_task_group() as tg:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        for event in events:
            tg.start_soon(wait, event)


async def run_uvicorn(server: uvicorn.Server, sock: socket.socket, stopped: anyio.Event) -> None:
    """Serve on ``sock`` until uvicorn exits, then set ``stopped``."""
    # Shielded so that cancelling the caller asks uvicorn to shut down (should_exit)
    # instead of tearing it apart mid-request; its shutdown is bounded by the grace.
    try:
        with anyio.CancelScope(shield=True):
            await server.serve(sockets=[sock])
    finally:
        stopped.set()


def bind(host: str, port: int) -> socket.socket:
    """Return a non-blocking socket bound to ``host`` (no brackets) and listening.

    Raises:
        OSError: The address cannot be bound (for example, the port is taken).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # Named TCP, as getaddrinfo would: asyncio turns Nagle's algorithm off only on
    # connections it knows to be TCP, and with it on, a response's second write
    # waits for the client's delayed ACK (some 40 ms on Linux).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address, ``localhost`` or ``[::1]``) is a loopback address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
