"""The host's own listening services are recognised on every address of this machine."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from plughost.own_services import OwnServices


def test_a_service_is_found_on_loopback_wildcard_and_mapped_addresses_while_it_serves() -> None:
    services = OwnServices()
    with services.serving("console", "127.0.0.1", 8770):
        found = [
            services.at(ipaddress.ip_address(address), 8770)
            for address in ("127.0.0.1", "127.0.0.2", "0.0.0.0", "::1", "::ffff:127.0.0.1")
        ]
        other_port = services.at(ipaddress.ip_address("127.0.0.1"), 8771)
        elsewhere = services.at(ipaddress.ip_address("203.0.113.9"), 8770)
    after = services.at(ipaddress.ip_address("127.0.0.1"), 8770)

    assert [s.name if s else None for s in found] == ["console"] * 5
    assert other_port is None and elsewhere is None
    assert after is None


def _interface_address() -> str | None:
    """An address of one of this machine's interfaces other than the loopback, if any."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # a route lookup only: nothing is sent
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if ipaddress.ip_address(address).is_loopback else address


def test_a_service_on_a_wildcard_is_found_on_the_machines_interface_address() -> None:
    address = _interface_address()
    if address is None:
        pytest.skip("this machine has no interface address besides the loopback")
    services = OwnServices()
    with services.serving("MCP HTTP server", "0.0.0.0", 8765):
        found = services.at(ipaddress.ip_address(address), 8765)
        remote = services.at(ipaddress.ip_address("198.51.100.7"), 8765)

    assert found is not None and found.name == "MCP HTTP server"
    assert remote is None
