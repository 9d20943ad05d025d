"""A plugin whose manifest asks for no network has none, not even the host's loopback.

Before runners were sandboxed, a plugin with no grants reached the host's
loopback MCP HTTP port (and ran its neighbours' tools through it) and could
listen for connections on every interface. A listener in the test process
stands for ``plughost serve --mcp-http 127.0.0.1:PORT`` here.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from plughost.host import PluginHost
from plughost.runners import sandbox
from tests.conftest import fast_settings
from tests.security.sandboxed import Attack, plant_plugins, require

shared = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def loopback() -> Iterator[list[int]]:
    """Two listening loopback ports, as the host's MCP HTTP server would have."""
    servers = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]
    try:
        yield [int(server.getsockname()[1]) for server in servers]
    finally:
        for server in servers:
            server.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def attack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Attack]:
    root = tmp_path_factory.mktemp("network")
    plugins = plant_plugins(root)
    settings = fast_settings(root)
    folders = [plugins / "hostile_intruder", plugins / "echo"]
    async with PluginHost(folders, settings=settings) as host:
        yield Attack(host, plugins, settings.data_dir)


@shared
async def test_a_plugin_without_network_cannot_reach_the_hosts_loopback_port(
    attack: Attack, loopback: list[int]
) -> None:
    require(attack.host, "network_namespace")

    verdict = await attack.attempt("intrude_connect", host="127.0.0.1", port=loopback[0])

    assert not verdict["allowed"], f"reached the host's loopback: {verdict['detail']}"


@shared
async def test_a_plugin_without_network_cannot_listen_for_connections(attack: Attack) -> None:
    require(attack.host, "landlock_network")

    verdict = await attack.attempt("intrude_listen")

    assert not verdict["allowed"]


@shared
async def test_the_runners_status_names_its_network_namespace(attack: Attack) -> None:
    require(attack.host, "network_namespace")

    status = {s.plugin_id: s for s in attack.host.status()}["tests.hostile-intruder"]

    assert "network_namespace" in status.sandbox and "landlock" in status.sandbox


async def test_a_plugin_granted_one_port_reaches_that_port_only(
    tmp_path: Path, loopback: list[int]
) -> None:
    granted, other = loopback
    plugins = plant_plugins(tmp_path)
    manifest_file = plugins / "hostile_intruder" / "_manifest.json"
    manifest = json.loads(manifest_file.read_text())
    manifest["network"] = {"connect": [granted]}
    manifest_file.write_text(json.dumps(manifest))
    settings = fast_settings(tmp_path)
    async with PluginHost([plugins / "hostile_intruder"], settings=settings) as host:
        require(host, "landlock_network")
        attack = Attack(host, plugins, settings.data_dir)

        reached = await attack.attempt("intrude_connect", host="127.0.0.1", port=granted)
        refused = await attack.attempt("intrude_connect", host="127.0.0.1", port=other)

        assert reached["allowed"], reached["detail"]
        assert not refused["allowed"]
        [status] = host.status()
        assert "network_namespace" in status.sandbox  # its gate opens the port


async def test_without_a_network_namespace_landlock_still_refuses_tcp(
    tmp_path: Path, loopback: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kernel or container without user namespaces: the TCP refusal falls to Landlock."""
    real_probe = sandbox.probe_support

    async def without_namespaces(**kwargs: Any) -> sandbox.SandboxSupport:
        found = await real_probe(**kwargs)
        namespaces = {"user_namespace", "network_namespace", "pid_namespace"}
        return sandbox.SandboxSupport(found.offered - namespaces, {}, found.landlock_abi)

    monkeypatch.setattr("plughost.startup.probe_support", without_namespaces)
    plugins = plant_plugins(tmp_path)
    settings = fast_settings(tmp_path)
    async with PluginHost([plugins / "hostile_intruder"], settings=settings) as host:
        require(host, "landlock_network")
        attack = Attack(host, plugins, settings.data_dir)

        verdict = await attack.attempt("intrude_connect", host="127.0.0.1", port=loopback[0])

        assert not verdict["allowed"]
        [status] = host.status()
        assert "network_namespace" not in status.sandbox


@shared
async def test_a_plugin_cannot_reach_another_programs_unix_socket(
    attack: Attack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A socket like Docker's or D-Bus's: Landlock does not govern them, the mounts hide them."""
    require(attack.host, "user_namespace")
    path = tmp_path_factory.mktemp("run") / "docker.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        server.listen()

        verdict = await attack.attempt("intrude_unix", path=str(path))

    assert not verdict["allowed"]


@shared
async def test_a_plugin_cannot_reach_a_neighbour_runners_socket(attack: Attack) -> None:
    require(attack.host, "user_namespace")
    runtime = attack.host.runtime_dir
    assert runtime is not None
    [neighbour] = list(runtime.glob("runner-tests-echo*.sock"))

    verdict = await attack.attempt("intrude_unix", path=str(neighbour))

    assert not verdict["allowed"], "reached a neighbour runner's socket on the host"
