"""The TCP services this process serves (the console, MCP over HTTP), which no plugin reaches.

A plugin granted ``localhost:PORT`` reaches that port of the host's loopback
through its egress gate (:mod:`plughost.egress`). Had the operator granted the
port of the host's own console or MCP HTTP server, or a port of a bound
address of this machine, the plugin would reach the operator's view of every
plugin, or call tools with the host's rights. A plugin that can reach the
host's loopback is not an operator: whatever the grants, the gate refuses the
ports this process serves on, on every address of this machine, and says why.
Both servers still ask for their token too; this is the second wall.

Each server registers its bound address while it listens (:meth:`OwnServices.serving`)
in :data:`OWN_SERVICES`, one registry per process, since every gate of this
process connects with this process's network and every one of its services
is this host's own.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import socket
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["OWN_SERVICES", "OwnService", "OwnServices"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True, slots=True)
class OwnService:
    """One listening service of this process."""

    name: str  # "console", "MCP HTTP server"
    address: IPAddress
    port: int


class OwnServices:
    """The services this process listens on, and whether a destination is one of them."""

    def __init__(self) -> None:
        self._services: list[OwnService] = []

    @contextlib.contextmanager
    def serving(self, name: str, address: str, port: int) -> Iterator[OwnService]:
        """Count ``name`` on ``address``:``port`` as this host's own while inside."""
        service = OwnService(name, ipaddress.ip_address(address.strip("[]")), port)
        self._services.append(service)
        try:
            yield service
        finally:
            self._services.remove(service)

    def at(self, address: IPAddress, port: int) -> OwnService | None:
        """The service a connection to ``address``:``port`` would reach, if it is this host's.

        Any address of this machine counts, not only the one a service is bound
        to: a loopback address, ``0.0.0.0`` or ``::`` (which reach the
        loopback), an address mapped from one of those, or an address of one of
        its interfaces (a service bound to a wildcard answers there too).
        Whether an address is this machine's is asked of the kernel (a socket
        may bind it), and only for a port a service listens on.
        """
        listening = [s for s in self._services if s.port == port]
        if not listening:
            return None
        mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
        target = mapped if mapped is not None else address
        if target.is_loopback or target.is_unspecified or _is_local(target):
            return listening[0]
        return None


def _is_local(address: IPAddress) -> bool:
    """Whether ``address`` belongs to this machine (the kernel lets a socket bind it)."""
    family = socket.AF_INET if address.version == 4 else socket.AF_INET6
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((str(address), 0))
        except OSError as exc:
            return exc.errno != errno.EADDRNOTAVAIL
    return True


OWN_SERVICES = OwnServices()
"""This process's services; the console and the MCP HTTP server register here."""
