"""Network grants, in real sandboxed runners, against stub hosts of the tests' own.

The plugin ``net_client`` is written the way published MaiBot plugins are:
aiohttp, httpx, requests, urllib, asyncio streams, a raw socket and a
subprocess. Granted ``api.example.com`` (pinned to a stub host), every client
reaches it unchanged; nothing else is reachable by any client, by address, by
another port, through a name pointed at the host's loopback, or from a
subprocess, and each refusal tells the operator which grant would allow it.
"""

from __future__ import annotations

import http.server
import json
import shutil
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import pytest_asyncio

from plughost.events import EventKind, LifecycleEvent
from plughost.host import PluginHost
from plughost.settings import HostSettings, RunnerSettings, WebSettings
from plughost.web import WebConsole
from tests.conftest import TEST_PLUGINS, fast_settings
from tests.security.sandboxed import require
from tests.security.stub_network import StubNetwork, stub_network

PLUGIN = "community.net-client"
shared = pytest.mark.asyncio(loop_scope="module")
CLIENTS = ["fetch_aiohttp", "fetch_httpx", "fetch_requests", "fetch_urllib"]


@pytest.fixture(scope="module")
def stubs() -> Iterator[StubNetwork]:
    with stub_network() as network:
        yield network


@pytest.fixture(scope="module")
def loopback() -> Iterator[int]:
    """A service on the host's own loopback, as the console or an MCP endpoint would be."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield int(server.getsockname()[1])


class Granted:
    def __init__(self, host: PluginHost, denials: list[LifecycleEvent]) -> None:
        self.host = host
        self.denials = denials

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = await self.host.invoke(tool, arguments)
        assert result.success, result.error_message
        assert isinstance(result.structured_content, dict)
        return result.structured_content


@pytest.fixture(scope="module")
def local_service() -> Iterator[int]:
    """An HTTP service on the host's loopback that the operator grants (``localhost:PORT``)."""

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"server": "local-service"}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield int(server.server_address[1])
        server.shutdown()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def granted(
    tmp_path_factory: pytest.TempPathFactory, stubs: StubNetwork, local_service: int
) -> AsyncIterator[Granted]:
    folder, settings = _plant(tmp_path_factory.mktemp("egress"))
    settings.network_grants = {PLUGIN: ["api.example.com", f"localhost:{local_service}"]}
    settings.runner.sandbox.hosts = {
        "api.example.com": stubs.granted,
        "other.example.net": stubs.other,
        "sneaky.example.com": "127.0.0.1",
    }
    denials: list[LifecycleEvent] = []
    async with PluginHost([folder], settings=settings) as host:
        host.events.add_callback(
            lambda e: denials.append(e) if e.kind is EventKind.NETWORK_DENIED else None
        )
        yield Granted(host, denials)


def _plant(root: Path) -> tuple[Path, HostSettings]:
    """A copy of ``net_client`` under ``root``, and fast settings whose data lives there.

    The heartbeat is the production one: these tests are about the network, and a busy
    machine can hold a runner's start past the tests' half-second window.
    """
    folder = root / "plugins" / "net_client"
    shutil.copytree(TEST_PLUGINS / "net_client", folder)
    production = RunnerSettings()
    heartbeat = {
        "heartbeat_interval": production.heartbeat_interval,
        "heartbeat_misses": production.heartbeat_misses,
    }
    return folder, fast_settings(root, **heartbeat)


def _served_by(outcome: dict[str, Any]) -> str:
    assert outcome["reached"], outcome.get("answer")
    body = outcome["answer"]
    return str(json.loads(body[body.index("{") :])["server"])


@shared
@pytest.mark.parametrize("client", CLIENTS)
async def test_every_http_client_reaches_a_granted_host_unchanged(
    granted: Granted, stubs: StubNetwork, client: str
) -> None:
    require(granted.host, "network_namespace")

    outcome = await granted.call(client, url="http://api.example.com/weather?city=tokyo")

    assert _served_by(outcome) == stubs.granted
    assert "GET /weather?city=tokyo" in outcome["answer"]


@shared
@pytest.mark.parametrize("client", ["fetch_socket", "fetch_streams"])
async def test_raw_sockets_and_asyncio_streams_reach_a_granted_host(
    granted: Granted, stubs: StubNetwork, client: str
) -> None:
    require(granted.host, "network_namespace")

    outcome = await granted.call(client, host="api.example.com", port=80)

    assert _served_by(outcome) == stubs.granted


@shared
@pytest.mark.parametrize("client", CLIENTS)
async def test_no_client_reaches_a_host_that_is_not_granted(granted: Granted, client: str) -> None:
    require(granted.host, "network_namespace")

    outcome = await granted.call(client, url="http://other.example.net/")

    assert not outcome["reached"]
    assert "other.example.net" in outcome["answer"]
    assert "plughost grant community.net-client other.example.net" in outcome["answer"]


@shared
async def test_another_address_or_another_port_of_a_granted_host_is_refused(
    granted: Granted, stubs: StubNetwork
) -> None:
    require(granted.host, "network_namespace")

    other = await granted.call("fetch_socket", host=stubs.other, port=80)
    other_port = await granted.call("fetch_socket", host="api.example.com", port=8080)

    for outcome in (other, other_port):
        assert not outcome["reached"]
        assert outcome["answer"].startswith("PermissionError")
    assert "api.example.com:8080" in other_port["answer"]


@shared
async def test_the_hosts_loopback_is_out_of_reach_by_address_and_by_name(
    granted: Granted, loopback: int
) -> None:
    require(granted.host, "network_namespace")

    direct = await granted.call("fetch_socket", host="127.0.0.1", port=loopback)
    by_name = await granted.call("fetch_socket", host="localhost", port=loopback)
    pointed = await granted.call("fetch_socket", host="sneaky.example.com", port=80)

    assert not direct["reached"] and not by_name["reached"] and not pointed["reached"]


@shared
async def test_a_subprocess_with_its_own_socket_code_reaches_nothing(
    granted: Granted, stubs: StubNetwork
) -> None:
    """The kernel holds the line: the runner's namespace has no network of its own."""
    require(granted.host, "network_namespace")

    outcome = await granted.call("fetch_subprocess", host=stubs.granted, port=80)

    assert not outcome["reached"]
    refusal = outcome["answer"].lower()  # Landlock's, or the empty namespace's
    assert "permission denied" in refusal or "unreachable" in refusal


@shared
async def test_a_refusal_is_an_event_naming_the_plugin_the_destination_and_the_grant(
    granted: Granted,
) -> None:
    require(granted.host, "network_namespace")

    await granted.call("fetch_urllib", url="http://other.example.net:8080/")
    denial = next(e for e in granted.denials if e.details["destination"] == "other.example.net")

    assert denial.plugin_id == PLUGIN
    assert denial.details["grant"] == "other.example.net"
    assert "network_grants" in denial.message and "plughost grant" in denial.message
    [status] = granted.host.status()
    gate = granted.host.runner_for(PLUGIN)
    assert gate is not None and gate.gate is not None
    assert gate.gate.denied["other.example.net"] >= 1
    assert status.plugin_id == PLUGIN


async def test_a_wildcard_grant_never_leads_to_a_private_address(
    tmp_path: Path, stubs: StubNetwork
) -> None:
    """MaiBot plugins' default, '*': public hosts only, so not the operator's intranet."""
    folder, settings = _plant(tmp_path)
    settings.runner.sandbox.hosts = {"intranet.example.com": stubs.granted}
    async with PluginHost([folder], settings=settings) as host:
        require(host, "network_namespace")
        runner = host.runner_for(PLUGIN)
        assert runner is not None and runner.gate is not None
        assert [d.text for d in runner.gate.grants.destinations] == ["*"]

        result = await host.invoke("fetch_socket", {"host": "intranet.example.com", "port": 80})

        assert isinstance(result.structured_content, dict)
        assert not result.structured_content["reached"]
        assert "PermissionError" in result.structured_content["answer"]


async def test_a_plugin_with_no_grant_has_no_gate_and_no_network(
    tmp_path: Path, stubs: StubNetwork
) -> None:
    folder, settings = _plant(tmp_path)
    settings.network_grants = {PLUGIN: []}  # the operator caps the MaiBot default
    async with PluginHost([folder], settings=settings) as host:
        require(host, "network_namespace")
        runner = host.runner_for(PLUGIN)

        result = await host.invoke("fetch_socket", {"host": stubs.granted, "port": 80})

        assert runner is not None and runner.gate is None
        assert isinstance(result.structured_content, dict)
        assert not result.structured_content["reached"]


async def test_learn_mode_lets_a_plugin_through_and_records_the_grants_it_needed(
    tmp_path: Path, stubs: StubNetwork, loopback: int
) -> None:
    folder, settings = _plant(tmp_path)
    settings.network_grants = {PLUGIN: []}
    settings.runner.sandbox.learn = True
    settings.runner.sandbox.hosts = {"api.example.com": stubs.granted}
    async with PluginHost([folder], settings=settings) as host:
        require(host, "network_namespace")

        reached = await host.invoke("fetch_httpx", {"url": "http://api.example.com:8080/"})
        own = await host.invoke("fetch_socket", {"host": "127.0.0.1", "port": loopback})
        learned = host.learned_network()

    assert isinstance(reached.structured_content, dict) and reached.structured_content["reached"]
    assert isinstance(own.structured_content, dict) and not own.structured_content["reached"]
    assert learned == {PLUGIN: ["api.example.com:8080"]}


async def test_a_grant_given_while_serving_lets_the_plugin_through_without_a_restart(
    tmp_path: Path, stubs: StubNetwork
) -> None:
    folder, settings = _plant(tmp_path)
    settings.network_grants = {PLUGIN: []}
    settings.runner.sandbox.hosts = {"api.example.com": stubs.granted}
    async with PluginHost([folder], settings=settings) as host:
        require(host, "network_namespace")
        before = await host.invoke("fetch_urllib", {"url": "http://api.example.com/"})

        grants = await host.grant_network(PLUGIN, ["api.example.com"])
        after = await host.invoke("fetch_urllib", {"url": "http://api.example.com/"})
        [status] = host.status()

    assert isinstance(before.structured_content, dict) and not before.structured_content["reached"]
    assert isinstance(after.structured_content, dict) and after.structured_content["reached"]
    assert grants == ["api.example.com"] and status.network == ("api.example.com",)


async def test_the_console_shows_a_refusal_and_its_grant_button_lets_the_plugin_through(
    tmp_path: Path, stubs: StubNetwork
) -> None:
    token = "egress-console-token-0123456789"
    folder, settings = _plant(tmp_path)
    settings.network_grants = {PLUGIN: ["api.example.com"]}
    settings.runner.sandbox.hosts = {"other.example.net": stubs.other}
    web = WebSettings(address="127.0.0.1:0", token=token)
    async with (
        PluginHost([folder], settings=settings) as host,
        WebConsole(host, web) as console,
        httpx2.AsyncClient(base_url=console.url.rstrip("/"), timeout=10) as client,
    ):
        require(host, "network_namespace")
        url = {"url": "http://other.example.net/"}
        refused = await host.invoke("fetch_requests", url)
        reader = {"authorization": f"Bearer {token}"}
        feed = (await client.get("/api/feed", params={"plugin": PLUGIN}, headers=reader)).json()[
            "entries"
        ]
        [denial] = [e for e in feed if e["kind"] == "network.denied"]
        anonymous = await client.post(
            f"/api/plugins/{PLUGIN}/grant", json={"destination": denial["details"]["grant"]}
        )
        granted = await client.post(
            f"/api/plugins/{PLUGIN}/grant",
            json={"destination": denial["details"]["grant"]},
            headers={"authorization": f"Bearer {token}"},
        )
        reached = await host.invoke("fetch_requests", url)
        metrics = (await client.get("/metrics", headers=reader)).text

    assert (
        isinstance(refused.structured_content, dict) and not refused.structured_content["reached"]
    )
    assert denial["details"]["grant"] == "other.example.net"
    assert anonymous.status_code in (401, 403)
    assert granted.json()["network"] == ["api.example.com", "other.example.net"]
    assert isinstance(reached.structured_content, dict) and reached.structured_content["reached"]
    assert f'plughost_network_denied{{kind="plugin",name="{PLUGIN}"}} 1.0' in metrics


@shared
@pytest.mark.parametrize("program", ["curl", "curl-tunnel", "python"])
async def test_a_subprocess_that_honours_the_proxy_variables_reaches_a_granted_host_only(
    granted: Granted, stubs: StubNetwork, program: str
) -> None:
    """curl (absolute-form and CONNECT) and a fresh interpreter, through the runner's proxy."""
    require(granted.host, "network_namespace")

    reached = await granted.call("fetch_child", url="http://api.example.com/x", program=program)
    refused = await granted.call("fetch_child", url="http://other.example.net/", program=program)

    assert _served_by(reached) == stubs.granted
    assert not refused["reached"] and "403" in refused["answer"]
    runner = granted.host.runner_for(PLUGIN)
    assert runner is not None and runner.gate is not None
    assert runner.gate.denied["other.example.net"] >= 1


@shared
@pytest.mark.parametrize("program", ["curl", "curl-tunnel", "python"])
async def test_a_granted_localhost_port_is_reached_by_name_through_the_proxy(
    granted: Granted, local_service: int, program: str
) -> None:
    require(granted.host, "network_namespace")

    url = f"http://localhost:{local_service}/"
    reached = await granted.call("fetch_child", url=url, program=program)

    assert _served_by(reached) == "local-service"
