"""An HTTP proxy on the runner's own loopback, for code that does not use Python's sockets.

The socket layer (:mod:`.egress`) serves everything built on Python's
``socket`` module. A native client inside the runner (curl_cffi, primp, a
Rust or C extension) and a subprocess (``curl``, a Go binary) open sockets of
their own, which in the runner's empty network namespace reach nothing. Most
of them honour ``HTTP_PROXY``/``HTTPS_PROXY``, so the runner listens on its
namespace's ``127.0.0.1`` (nothing of the host's is there) and sets those
variables: a ``CONNECT host:port`` (or an ``http://`` request in absolute
form) is resolved and connected by the host's gate exactly as a Python
``connect`` is, within the same grants, refused with a ``403`` that carries
the gate's message (and counted by the host as a refusal).

Python's own clients (requests, httpx, urllib, aiohttp with ``trust_env``)
read the same variables; for them ``urllib.request.getproxies`` leaves this
proxy out, so they keep the direct path through the socket layer.

The listening socket is bound before Landlock confines the runner (which then
allows connects to that one port); the accept loop is a thread that sleeps in
``accept`` while nothing asks, and each proxied connection is served by
threads that copy bytes until either side closes.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading
from collections.abc import Callable

__all__ = ["ENV", "connected", "start"]

_HEAD_LIMIT = 16384
_HEAD_SECONDS = 30.0
ENV = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")

Opener = Callable[[str, int], socket.socket]
"""Connect ``host``:``port`` through the gate; raise OSError (or gaierror) when refused."""


def start(listener: socket.socket, opener: Opener) -> str:
    """Serve ``listener`` in a thread, point the proxy variables at it; return its URL."""
    host, port = listener.getsockname()[:2]
    url = f"http://{host}:{port}"
    threading.Thread(
        target=_accept, args=(listener, opener), name="plughost-egress-proxy", daemon=True
    ).start()
    for name in ENV:
        os.environ[name] = url
    return url


def _accept(listener: socket.socket, opener: Opener) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_serve, args=(client, opener), daemon=True).start()


def _serve(client: socket.socket, opener: Opener) -> None:
    with client:
        client.settimeout(_HEAD_SECONDS)
        try:
            head, rest = _read_head(client)
            method, target, version = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
        except (OSError, ValueError, UnicodeDecodeError):
            return
        try:
            host, port, first = _destination(method, target, version, head)
            upstream = opener(host, port)
        except (OSError, ValueError) as exc:
            _refuse(client, exc)
            return
        with upstream:
            client.settimeout(None)
            if method == "CONNECT":
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                first = b""
            _pipe(client, upstream, first + rest)


def _read_head(client: socket.socket) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = client.recv(4096)
        if not chunk or len(data) > _HEAD_LIMIT:
            raise ValueError("no request head")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head + b"\r\n\r\n", rest


def _destination(method: str, target: str, version: str, head: bytes) -> tuple[str, int, bytes]:
    """(host, port, the request head to send upstream) of a proxy request."""
    if method == "CONNECT":
        host, _, port = target.rpartition(":")
        return host.strip("[]"), int(port), b""
    if not target.startswith("http://"):
        raise ValueError(f"a proxy request needs CONNECT or an http:// URL, not {target[:80]!r}")
    authority, slash, path = target[len("http://") :].partition("/")
    host, _, port = authority.rpartition(":") if ":" in authority else (authority, "", "80")
    origin = f"{method} {slash}{path} {version}".encode("latin-1")
    return host.strip("[]"), int(port or 80), origin + head[head.index(b"\r\n") :]


def _refuse(client: socket.socket, exc: BaseException) -> None:
    body = str(exc).encode("utf-8", errors="replace")
    status = b"403 Forbidden" if isinstance(exc, PermissionError) else b"502 Bad Gateway"
    head = b"HTTP/1.1 " + status + b"\r\nContent-Type: text/plain; charset=utf-8\r\n"
    with contextlib.suppress(OSError):
        client.sendall(head + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)


def _pipe(client: socket.socket, upstream: socket.socket, pending: bytes) -> None:
    if pending:
        upstream.sendall(pending)
    back = threading.Thread(target=_copy, args=(upstream, client), daemon=True)
    back.start()
    _copy(client, upstream)
    back.join()


def _copy(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def connected(handed: socket.socket, timeout: float | None) -> socket.socket:
    """Wait for the gate's connecting socket to finish its connect; raise if it failed."""
    poller = select.poll()
    poller.register(handed.fileno(), select.POLLOUT)
    if not poller.poll(None if timeout is None else int(timeout * 1000)):
        handed.close()
        raise TimeoutError("timed out connecting")
    code = handed.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if code:
        handed.close()
        raise OSError(code, os.strerror(code))
    handed.setblocking(True)
    return handed
