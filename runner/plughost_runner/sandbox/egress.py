"""The runner's way to the network its plugins were granted: through the host's gate.

A sandboxed runner's network namespace is empty, so nothing a plugin does
reaches the network by itself; what stops a plugin is the kernel, not this
module. This module makes the granted part work for ordinary code: it puts
itself under Python's ``socket`` module, which aiohttp, httpx, requests,
urllib and asyncio all end in, so that

* ``getaddrinfo`` / ``gethostbyname`` ask the host's gate (``plughost.egress``)
  to resolve a name: the host resolves it, within the grants;
* ``connect`` / ``connect_ex`` of a TCP socket ask the gate to connect, and
  receive the connecting socket itself, put in place of the plugin's own
  (same descriptor number, same blocking mode, so an event loop waiting on it
  sees the connect complete as usual);
* with ``listen`` (the manifest asks for ``bind`` ports), ``bind`` of a TCP
  socket asks the gate for a socket listening on the host's network, put in
  the plugin's socket's place the same way (its ``listen`` then only sets the
  backlog again), so connections from outside reach it.

A refusal comes back as the error a library expects (``PermissionError`` for
a destination no grant covers, ``socket.gaierror`` for a name), with the grant
that would allow it in the message. A subprocess with its own resolver or
socket code gets no help here and, in the empty namespace, no network.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import os
import select
import socket
from typing import Any

__all__ = ["install"]

_ASK_SECONDS = 30.0

_real_getaddrinfo = socket.getaddrinfo
_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_bind = socket.socket.bind
_gate = ""
_local: set[tuple[str, int]] = set()  # the runner's own proxy: connected directly


def install(
    gate: str,
    proxy: socket.socket | None = None,
    proxied: tuple[str, int] | None = None,
    *,
    listen: bool = False,
) -> None:
    """Route name lookups and TCP connects of this process through the gate at ``gate``.

    With ``proxy`` (a listening socket on the namespace's loopback), also serve
    ``HTTP(S)_PROXY`` for native clients and subprocesses (:mod:`.egress_proxy`);
    ``proxied`` is such a proxy served by another process (a sandboxed MCP
    server's init). Either way this process's own Python clients keep the
    direct path: they are not sent through it. With ``listen``, TCP ``bind``
    goes through the gate too.
    """
    set_gate(gate)
    if proxy is not None:
        from plughost_runner.sandbox import egress_proxy

        proxied = proxy.getsockname()[:2]
        egress_proxy.start(proxy, open_through_gate)
    socket.getaddrinfo = _getaddrinfo
    socket.gethostbyname = _gethostbyname
    socket.gethostbyname_ex = _gethostbyname_ex
    socket.socket.connect = _connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = _connect_ex  # type: ignore[method-assign,assignment]
    if listen:
        socket.socket.bind = _bind  # type: ignore[method-assign,assignment]
    if proxied is not None:
        _local.add((str(proxied[0]), int(proxied[1])))
        _hide_proxy(f"http://{proxied[0]}:{proxied[1]}")


def set_gate(gate: str) -> None:
    """Where :func:`open_through_gate` asks (for a process that only proxies)."""
    global _gate
    _gate = gate


def _hide_proxy(url: str) -> None:
    """Leave ``url`` out of what ``urllib.request.getproxies`` (and so requests, httpx) see."""
    import urllib.request

    real = urllib.request.getproxies

    def getproxies() -> dict[str, str]:
        return {k: v for k, v in real().items() if v.rstrip("/") != url}

    urllib.request.getproxies = getproxies
    urllib.request.getproxies_environment = getproxies
    socket.getaddrinfo = _getaddrinfo
    socket.gethostbyname = _gethostbyname
    socket.gethostbyname_ex = _gethostbyname_ex
    socket.socket.connect = _connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = _connect_ex  # type: ignore[method-assign,assignment]


def _ask(request: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
    """One request to the gate: its JSON answer and the descriptor it handed over, if any."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as channel:
        channel.settimeout(_ASK_SECONDS)
        _real_connect(channel, _gate)
        channel.sendall(json.dumps(request).encode() + b"\n")
        data, fds, _, _ = socket.recv_fds(channel, 65536, 1)
        while data and not data.endswith(b"\n"):
            more = channel.recv(65536)
            if not more:
                break
            data += more
    if not data:
        for fd in fds:
            os.close(fd)
        raise ConnectionError(errno.ECONNRESET, "plughost sandbox: the host's gate gave no answer")
    answer: dict[str, Any] = json.loads(data)
    return answer, fds[0] if fds else None


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _resolve(host: str) -> list[str]:
    answer, _ = _ask({"op": "resolve", "host": host})
    if not answer.get("ok"):
        code = socket.EAI_NONAME
        raise socket.gaierror(code, str(answer.get("error") or f"{host}: not resolved"))
    return [str(a) for a in answer.get("addresses", [])]


def _getaddrinfo(
    host: bytes | str | None,
    port: bytes | str | int | None,
    family: int = 0,
    type: int = 0,
    proto: int = 0,
    flags: int = 0,
) -> list[Any]:
    name = host.decode() if isinstance(host, bytes) else host
    # The namespace has no configured address, so AI_ADDRCONFIG would answer "no such name".
    flags &= ~socket.AI_ADDRCONFIG
    if not name or _is_address(name) or name == "localhost" or flags & socket.AI_NUMERICHOST:
        return _real_getaddrinfo(host, port, family, type, proto, flags)
    found: list[Any] = []
    for address in _resolve(name):
        kind = socket.AF_INET6 if ":" in address else socket.AF_INET
        if family in (0, kind):
            numeric = flags | socket.AI_NUMERICHOST
            found += _real_getaddrinfo(address, port, kind, type, proto, numeric)
    if not found:
        raise socket.gaierror(socket.EAI_FAMILY, f"{name}: no address of the family asked for")
    return found


def _gethostbyname(name: str) -> str:
    if _is_address(name) or name == "localhost":
        return name
    v4 = [a for a in _resolve(name) if ":" not in a]
    if not v4:
        raise socket.gaierror(socket.EAI_FAMILY, f"{name}: no IPv4 address")
    return v4[0]


def _gethostbyname_ex(name: str) -> tuple[str, list[str], list[str]]:
    if _is_address(name) or name == "localhost":
        return name, [], [name]
    return name, [], [a for a in _resolve(name) if ":" not in a]


def _through_gate(sock: socket.socket, address: Any) -> bool:
    return (
        sock.family in (socket.AF_INET, socket.AF_INET6)
        and sock.type == socket.SOCK_STREAM
        and isinstance(address, tuple)
        and len(address) >= 2
        and (address[0], address[1]) not in _local
    )


def open_through_gate(host: str, port: int) -> socket.socket:
    """A connected TCP socket to ``host``:``port``, made by the gate (the proxy's way out).

    Raises:
        OSError: refused (``PermissionError``, with the gate's message) or unreachable.
    """
    from plughost_runner.sandbox.egress_proxy import connected

    if host == "localhost":  # as Python's own resolver answers it: the loopback address
        address = "127.0.0.1"
    elif _is_address(host):
        address = host
    else:
        named, _ = _ask({"op": "resolve", "host": host})
        if not named.get("ok"):
            code = int(named.get("errno") or errno.EHOSTUNREACH)
            code = code if code > 0 else errno.EHOSTUNREACH  # -2: the host could not resolve it
            raise OSError(code, str(named.get("error") or f"{host}: not resolved"))
        address = str(named["addresses"][0])
    answer, handed = _ask({"op": "connect", "address": address, "port": port})
    if not answer.get("ok") or handed is None:
        code = int(answer.get("errno") or errno.ECONNREFUSED)
        raise OSError(code, str(answer.get("error") or os.strerror(code)))
    return connected(socket.socket(fileno=handed), _ASK_SECONDS)


def _connect(self: socket.socket, address: Any) -> None:
    if not _through_gate(self, address):
        return _real_connect(self, address)
    code = _open(self, address)
    if code:
        raise OSError(code, os.strerror(code))
    return None


def _connect_ex(self: socket.socket, address: Any) -> int:
    if not _through_gate(self, address):
        return _real_connect_ex(self, address)
    try:
        return _open(self, address)
    except OSError as exc:
        return exc.errno or errno.EIO


def _open(sock: socket.socket, address: tuple[Any, ...]) -> int:
    """Put the gate's connecting socket in ``sock``'s place; return 0, EINPROGRESS or raise."""
    _take_from_gate(sock, "connect", address, errno.ECONNREFUSED)
    timeout = sock.gettimeout()
    if timeout == 0.0:
        return errno.EINPROGRESS  # its event loop waits for writability, then SO_ERROR
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLOUT)
    if not poller.poll(None if timeout is None else int(timeout * 1000)):
        raise TimeoutError(errno.ETIMEDOUT, "timed out")
    return int(sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))


def _bind(self: socket.socket, address: Any) -> None:
    """Bind a TCP socket on the host's network: the gate listens, this socket becomes it."""
    if not _through_gate(self, address):
        return _real_bind(self, address)
    _take_from_gate(self, "listen", address, errno.EACCES)
    return None


def _take_from_gate(sock: socket.socket, op: str, address: Any, refused: int) -> None:
    """Ask the gate to ``op`` (connect, listen) ``address``; its socket takes ``sock``'s place.

    Raises:
        OSError: the gate refused, with its errno (``refused`` if it gave none) and reason.
    """
    host, port = str(address[0]), int(address[1])
    answer, handed = _ask({"op": op, "address": host, "port": port})
    if not answer.get("ok") or handed is None:
        code = int(answer.get("errno") or refused)
        raise OSError(code, str(answer.get("error") or os.strerror(code)))
    timeout = sock.gettimeout()
    try:
        os.dup2(handed, sock.fileno(), inheritable=False)
    finally:
        os.close(handed)
    sock.settimeout(timeout)  # the descriptor's blocking mode, as the plugin had set it
