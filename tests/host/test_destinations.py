"""Network grants: what an operator writes, and where each lets a plugin go."""

from __future__ import annotations

import ipaddress

import pytest
from pydantic import ValidationError

from plughost.destinations import Grants, grant_for, parse_destination
from plughost.settings import HostSettings

PUBLIC = ipaddress.ip_address("93.184.215.14")
PRIVATE = ipaddress.ip_address("10.20.30.40")
LOOPBACK = ipaddress.ip_address("127.0.0.1")
METADATA = ipaddress.ip_address("169.254.169.254")


def test_a_bare_name_opens_ports_80_and_443_only() -> None:
    grants = Grants(["api.example.com"])

    assert grants.allows("api.example.com", 443, PUBLIC)
    assert grants.allows("api.example.com", 80, PUBLIC)
    assert not grants.allows("api.example.com", 8443, PUBLIC)
    assert not grants.allows("www.example.com", 443, PUBLIC)


def test_a_port_or_any_port_can_be_named() -> None:
    assert Grants(["api.example.com:8443"]).allows("api.example.com", 8443, PUBLIC)
    assert Grants(["api.example.com:*"]).allows("api.example.com", 5432, PUBLIC)
    assert not Grants(["api.example.com:8443"]).allows("api.example.com", 443, PUBLIC)


def test_a_wildcard_covers_names_below_it_but_not_the_name_itself() -> None:
    grants = Grants(["*.example.org"])

    assert grants.allows("cdn.example.org", 443, PUBLIC)
    assert grants.allows("a.b.example.org", 443, PUBLIC)
    assert not grants.allows("example.org", 443, PUBLIC)
    assert not grants.allows("evilexample.org", 443, PUBLIC)


def test_a_wildcard_leads_only_to_public_addresses() -> None:
    grants = Grants(["*"])

    assert grants.allows("anything.example", 443, PUBLIC)
    assert not grants.allows("intranet.example", 443, PRIVATE)


def test_a_name_written_out_may_lead_to_a_private_address_but_never_to_the_hosts_own() -> None:
    grants = Grants(["intranet.example.com"])

    assert grants.allows("intranet.example.com", 443, PRIVATE)
    assert not grants.allows("intranet.example.com", 443, LOOPBACK)
    assert not grants.allows("intranet.example.com", 80, METADATA)


def test_an_address_grant_opens_that_address_only_and_never_by_name() -> None:
    grants = Grants(["203.0.113.7:5000", "[2001:db8::1]:443"])

    assert grants.allows("", 5000, ipaddress.ip_address("203.0.113.7"))
    assert grants.allows("", 443, ipaddress.ip_address("2001:db8::1"))
    assert not grants.allows("", 5000, ipaddress.ip_address("203.0.113.8"))
    assert not grants.allows("some.name", 5000, ipaddress.ip_address("203.0.113.7"))


def test_localhost_is_reachable_only_when_granted_as_such() -> None:
    assert Grants(["localhost:6379"]).allows("", 6379, LOOPBACK)
    assert not Grants(["*:*"]).allows("", 6379, LOOPBACK)
    assert not Grants(["*:*"]).allows("localhost.example", 6379, LOOPBACK)


@pytest.mark.parametrize(
    "text", ["http://api.example.com", "api.example.com:99999", "a..b", "*.*", "api.example.com:x"]
)
def test_a_malformed_grant_is_refused_with_the_accepted_shapes(text: str) -> None:
    with pytest.raises(ValueError, match=r"grant|port"):
        parse_destination(text)


def test_the_settings_name_the_plugin_whose_grant_is_malformed() -> None:
    with pytest.raises(ValidationError, match=r"network_grants\.author\.weather"):
        HostSettings(network_grants={"author.weather": ["https://api.example.com"]})


@pytest.mark.parametrize(
    ("host", "port", "grant"),
    [
        ("api.example.com", 443, "api.example.com"),
        ("api.example.com", 8443, "api.example.com:8443"),
        ("203.0.113.7", 443, "203.0.113.7:443"),
        ("2001:db8::1", 443, "[2001:db8::1]:443"),
        ("127.0.0.1", 6379, "localhost:6379"),
    ],
)
def test_the_grant_to_suggest_is_one_that_parses_and_allows_the_refused_destination(
    host: str, port: int, grant: str
) -> None:
    suggested = grant_for(host, port)
    name = "" if ":" in host or host[0].isdigit() else host
    address = ipaddress.ip_address(host) if not name else PUBLIC

    assert suggested == grant
    assert Grants([suggested]).allows(name, port, address)
