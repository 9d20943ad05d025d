"""Network grants: which hosts and ports an operator lets a plugin (or an MCP server) reach.

A grant is a string an operator writes in ``plughost.toml``
(``network_grants``), through ``plughost grant``, or by the console's button:

========================  ===============================================
``api.example.com``       that name, ports 80 and 443
``api.example.com:8443``  that name, port 8443
``*.example.org``         any name below example.org (not example.org)
``*``                     any name at all, ports 80 and 443
``*:*``                   any name, any port
``203.0.113.7:5000``      that address (IPv6 as ``[2001:db8::1]:443``)
``localhost:6379``        the host's own loopback, that port: nothing else reaches it
========================  ===============================================

Where a name leads is decided after the host resolves it, so a plugin cannot
reach more by pointing a granted name elsewhere: a name never leads to a
loopback, link-local (cloud metadata), multicast or unspecified address; a
wildcard leads only to public (globally routed) addresses; a name the operator
wrote out may also lead to a private address (an intranet API). An address
grant leads to that address only.

Lives here: parsing and matching. Not here: resolving names and connecting
(:mod:`plughost.egress`).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "DEFAULT_PORTS",
    "Destination",
    "Grants",
    "checked_grants",
    "grant_for",
    "parse_destination",
    "reachable_by_name",
]

DEFAULT_PORTS = (80, 443)
_ANY_PORT = 0
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True, slots=True)
class Destination:
    """One parsed grant: a name pattern or an address, and the ports it opens."""

    text: str
    name: str  # lower-case name, "*", "*.suffix", or "" for an address grant
    address: IPAddress | None
    ports: tuple[int, ...]  # (0,) means any port

    def allows_port(self, port: int) -> bool:
        return _ANY_PORT in self.ports or port in self.ports

    def matches_name(self, name: str) -> bool:
        if not self.name:
            return False
        if self.name == "*":
            return True
        if self.name.startswith("*."):
            return name.endswith(self.name[1:])
        return name == self.name

    @property
    def wildcard(self) -> bool:
        return self.name.startswith("*")


def parse_destination(text: str) -> Destination:
    """Parse one grant.

    Raises:
        ValueError: naming what is wrong and showing the accepted shapes.
    """
    raw = text.strip()
    if "://" in raw or "/" in raw:
        raise ValueError(
            f"{text!r} is a URL, not a network grant; write only its host and port, "
            "for example 'api.example.com' or 'api.example.com:8443'"
        )
    host, ports = _split_port(raw)
    host = host.lower().rstrip(".")
    if host == "localhost":
        host = "127.0.0.1"
    address: IPAddress | None = None
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        if not _is_name_pattern(host):
            raise ValueError(
                f"{text!r} is not a network grant; write a host name ('api.example.com'), a "
                "wildcard ('*.example.org', '*'), an address ('203.0.113.7', '[2001:db8::1]') "
                "or 'localhost', each optionally followed by ':PORT' or ':*'"
            ) from None
    return Destination(raw, "" if address else host, address, ports)


def checked_grants(grants: list[str]) -> list[str]:
    """``grants`` unchanged, once each parses (a settings validator's check).

    Raises:
        ValueError: the first that does not, as :func:`parse_destination` says.
    """
    for grant in grants:
        parse_destination(grant)
    return grants


def _split_port(raw: str) -> tuple[str, tuple[int, ...]]:
    if raw.startswith("[") and "]" in raw:  # [IPv6] or [IPv6]:port
        host, _, rest = raw[1:].partition("]")
        return host, _ports(raw, rest[1:]) if rest.startswith(":") else DEFAULT_PORTS
    if raw.count(":") == 1:
        host, port = raw.split(":")
        return host, _ports(raw, port)
    return raw, DEFAULT_PORTS


def _ports(raw: str, port: str) -> tuple[int, ...]:
    if port == "*":
        return (_ANY_PORT,)
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{raw!r}: the port must be a number from 1 to 65535, or '*'")
    return (int(port),)


def _is_name_pattern(host: str) -> bool:
    if host == "*":
        return True
    labels = host[2:].split(".") if host.startswith("*.") else host.split(".")
    return bool(labels) and all(
        label and len(label) < 64 and all(c.isalnum() or c in "-_" for c in label)
        for label in labels
    )


class Grants:
    """The destinations one runner's plugins may reach, and how to tell a refusal."""

    def __init__(self, grants: Iterable[str]) -> None:
        self.destinations = tuple(parse_destination(g) for g in grants)

    def __bool__(self) -> bool:
        return bool(self.destinations)

    def names(self, name: str) -> bool:
        """Whether any grant could let ``name`` through, on some port."""
        return any(d.matches_name(name) for d in self.destinations)

    def allows(self, name: str, port: int, address: IPAddress) -> bool:
        """Whether ``name`` (or "" for an address given as such) at ``address`` is granted."""
        if name and not reachable_by_name(address):
            return False
        for destination in self.destinations:
            if not destination.allows_port(port):
                continue
            if destination.address is not None:
                if not name and destination.address == address:
                    return True
            elif destination.matches_name(name) and (not destination.wildcard or address.is_global):
                return True
        return False

    def allowed(self, name: str, port: int, addresses: Sequence[IPAddress]) -> list[IPAddress]:
        """The addresses among ``addresses`` a connection to ``name``:``port`` may use."""
        return [a for a in addresses if self.allows(name, port, a)]


def reachable_by_name(address: IPAddress) -> bool:
    """Whether a name may lead to ``address`` at all (never the host's own or metadata)."""
    return not (
        address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_unspecified
        or address.is_reserved
    )


def grant_for(name: str, port: int) -> str:
    """The grant an operator adds to let ``name``:``port`` through."""
    host = f"[{name}]" if ":" in name else name
    if host == "127.0.0.1":
        host = "localhost"
    return host if port in DEFAULT_PORTS and not _is_address(name) else f"{host}:{port}"


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
