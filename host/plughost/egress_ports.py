"""The TCP ports a plugin's manifest asks for (``"network"``), served by its runner's gate.

A runner whose manifests ask for ports used to share the host's network
namespace, with Landlock filtering TCP by port. Sharing it also showed the
runner the host's socket tables: ``/proc/net/unix`` (every runner's socket
path), ``/proc/net/tcp`` (every connection of the host, those the gate opens
for neighbours included) and the same through ``NETLINK_SOCK_DIAG`` (``ss``).
No mount hides those from every process of a runner (``/proc/<pid>/net`` is
per process, and a child has a pid of its own). So such a runner has a
network namespace of its own like any other, and its gate
(:class:`plughost.egress.EgressGate`) opens what the manifest asks for, on
the host's network:

- ``connect``: a connection to any address on a listed port (as before, the
  host's loopback and private addresses included, and any name resolves);
- ``bind``: ``{"op": "listen", "address": ADDR, "port": PORT}``, a listening
  socket the host binds on a listed port (port 0, any free port, only with
  ``"any"``) and hands over, so a plugin serving connections from outside
  still accepts them.

What a manifest's ports no longer give: UDP, and TCP for a subprocess that
opens its own sockets (an HTTP client finds the runner's proxy, as with
grants).
"""

from __future__ import annotations

import errno
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["NO_PORTS", "ManifestPorts"]

_BACKLOG = 128


@dataclass(frozen=True, slots=True)
class ManifestPorts:
    """The ports a runner's manifests ask for; None means every port."""

    connect: frozenset[int] | None = frozenset()
    bind: frozenset[int] | None = frozenset()

    @classmethod
    def of(cls, connect: Iterable[int] | None, bind: Iterable[int] | None) -> ManifestPorts:
        """From port lists as :func:`plughost.runners.sandbox` reads manifests (None: any)."""
        return cls(
            None if connect is None else frozenset(connect),
            None if bind is None else frozenset(bind),
        )

    def __bool__(self) -> bool:
        return self.connect is None or self.bind is None or bool(self.connect or self.bind)

    @property
    def connects_anywhere(self) -> bool:
        """Whether some port may be connected to (any name then resolves)."""
        return self.connect is None or bool(self.connect)

    def connects(self, port: int) -> bool:
        """Whether a connection to ``port`` (on any address) is asked for."""
        return self.connect is None or port in self.connect

    def listen(self, given: str, port: int) -> tuple[dict[str, Any], socket.socket | None]:
        """A listening socket on ``given``:``port`` of the host's network, if the manifest asks.

        Returns the gate's answer and the socket to hand over (None on a refusal).
        """
        if not (self.bind is None or (port != 0 and port in self.bind)):
            wanted = "any" if port == 0 else str(port)
            return _refusal(
                errno.EACCES,
                f'plughost sandbox: listening on port {port} needs "bind": [{wanted}] in the '
                "manifest's network field",
            ), None
        try:
            address = ipaddress.ip_address(given or "0.0.0.0")
        except ValueError:
            return _refusal(errno.EINVAL, f"{given!r} is not an address to listen on"), None
        family = socket.AF_INET if address.version == 4 else socket.AF_INET6
        listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((str(address), port))
            listener.listen(_BACKLOG)
        except OSError as exc:
            listener.close()
            code = exc.errno or errno.EADDRNOTAVAIL
            return _refusal(code, f"{address}:{port}: {exc.strerror or exc}"), None
        return {"ok": True, "port": listener.getsockname()[1]}, listener


NO_PORTS = ManifestPorts()
"""A runner whose manifests ask for no network."""


def _refusal(code: int, message: str) -> dict[str, Any]:
    return {"ok": False, "errno": code, "error": message}
