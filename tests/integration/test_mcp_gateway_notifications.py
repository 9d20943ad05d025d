"""An upstream server's change notifications reach the MCP clients of ``plughost serve``.

The upstream (tests/mcp_servers/watched_server.py, the SDK's lowlevel ``Server``
over stdio) logs every ``resources/subscribe`` and ``resources/unsubscribe`` it
receives, and changes its resources, tools and prompts when asked. The clients
are the official SDK's, over stdio and streamable HTTP, handshake-era
(``resources/subscribe``) and 2026-07-28 (``subscriptions/listen``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import psutil
import pytest
import pytest_asyncio
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning

from tests.mcp_servers.harness import HERE, plughost_client, plughost_serve_http, server_pids
from tests.mcp_servers.shared_client import SharedClient
from tests.processes import command_line
from tests.waiting import wait_until

# One event loop for the module: the shared stdio client lives on it from test to test.
pytestmark = pytest.mark.asyncio(loop_scope="module")

WATCHED = HERE / "watched_server.py"
URI = "test://watched/a"
MODERN_URI = "test://modern/a"  # served by a 2026-07-28 upstream


@pytest.fixture(scope="module")
def upstream_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The upstream's log: a file named in its args, so its sandbox lets it write there."""
    log = tmp_path_factory.mktemp("watched") / "subscriptions.log"
    log.touch()
    return log


def write_config(upstream_log: Path, name: str, *, modern: bool = True) -> Path:
    path = upstream_log.parent / f"{name}.toml"
    plugins = upstream_log.parent / "plugins"  # none: every tool comes from upstream
    plugins.mkdir(exist_ok=True)
    text = (
        f"[host]\nplugin_dirs = [{json.dumps(str(plugins))}]\n\n"
        f"[mcp.servers.watched]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(WATCHED))}, {json.dumps(str(upstream_log))}]\n"
        'protocol = "legacy"\n\n'
    )
    if modern:  # the same server on the 2026-07-28 protocol (what "auto" picks against SDK 2.x)
        text += (
            f"[mcp.servers.modern]\ncommand = {json.dumps(sys.executable)}\n"
            f'args = [{json.dumps(str(WATCHED))}, {json.dumps(str(upstream_log))}, "modern"]\n'
        )
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def config(upstream_log: Path) -> Path:
    return write_config(upstream_log, "plughost")


@pytest.fixture(scope="module")
def watched_only(upstream_log: Path) -> Path:
    """Only the handshake-era upstream: for a serve of its own whose tests use no other."""
    return write_config(upstream_log, "watched-only", modern=False)


@pytest.fixture(scope="module")
def http_server(config: Path) -> Iterator[tuple[str, str]]:
    with plughost_serve_http(config.parent / "token", "--config", str(config)) as served:
        yield served


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_stdio(config: Path) -> AsyncIterator[SharedClient]:
    """One handshake-era stdio client (and serve) for the tests that only need a session.

    Each test hears through a Heard of its own and uses URIs no other stdio test of
    the shared client subscribes to, so none depends on another's order or outcome.
    """
    shared = SharedClient(config, mode="legacy", callbacks=["message_handler"])
    try:
        yield shared
    finally:
        await shared.aclose()


class Heard:
    """The notifications a client received."""

    def __init__(self) -> None:
        self.messages: list[Any] = []

    async def __call__(self, message: Any) -> None:
        self.messages.append(message)

    def updated(self) -> list[str]:
        return [
            str(m.params.uri)
            for m in self.messages
            if isinstance(m, types.ResourceUpdatedNotification)
        ]

    def count(self, kind: type) -> int:
        return sum(isinstance(m, kind) for m in self.messages)


def upstream_lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


@contextlib.asynccontextmanager
async def connect(
    transport: str,
    config: Path,
    request: pytest.FixtureRequest,
    heard: Heard,
    mode: str,
    shared: SharedClient | None = None,
) -> AsyncIterator[Client]:
    """A session of its own over HTTP; over stdio the ``shared`` one, else a serve of ``config``."""
    if transport == "stdio" and shared is not None:
        yield await shared.attach(message_handler=heard)
        return
    served = request.getfixturevalue("http_server") if transport == "http" else None
    async with plughost_client(config, served, mode=mode, message_handler=heard) as client:
        yield client


async def subscribe(client: Client, uri: str, *, unsubscribe: bool = False) -> None:
    with warnings.catch_warnings():  # deprecated in 2026-07-28, current before
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        if unsubscribe:
            await client.unsubscribe_resource(uri)
        else:
            await client.subscribe_resource(uri)


async def until_logged(log: Path, line: str, count: int = 1) -> None:
    await wait_until(
        lambda: upstream_lines(log).count(line) >= count, timeout=15, what=f"upstream got {line!r}"
    )


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_subscription_to_an_upstream_resource_is_made_upstream_and_relayed(
    transport: str,
    config: Path,
    upstream_log: Path,
    request: pytest.FixtureRequest,
    shared_stdio: SharedClient,
) -> None:
    heard = Heard()
    before = upstream_lines(upstream_log)
    async with connect(transport, config, request, heard, "legacy", shared_stdio) as client:
        uris = [str(r.uri) for r in (await client.list_resources()).resources]
        await subscribe(client, URI)
        await until_logged(upstream_log, f"subscribe {URI}", before.count(f"subscribe {URI}") + 1)
        await client.call_tool("mcp_watched_touch", {"uri": URI})
        await wait_until(lambda: URI in heard.updated(), timeout=15, what="the update relayed")
        await subscribe(client, URI, unsubscribe=True)
        await until_logged(
            upstream_log, f"unsubscribe {URI}", before.count(f"unsubscribe {URI}") + 1
        )

    assert URI in uris  # re-served under the server's own URI
    assert heard.updated() == [URI]


async def test_the_upstream_subscription_ends_when_the_last_client_leaves(
    config: Path, upstream_log: Path, request: pytest.FixtureRequest
) -> None:
    start = upstream_lines(upstream_log)
    first, second = Heard(), Heard()
    async with connect("http", config, request, first, "legacy") as one:
        async with connect("http", config, request, second, "legacy") as two:
            await subscribe(one, URI)
            await subscribe(two, URI)
            await subscribe(one, URI, unsubscribe=True)
            await one.call_tool("mcp_watched_touch", {"uri": URI})
            await wait_until(lambda: URI in second.updated(), timeout=15, what="B hears it")
            while_held = upstream_lines(upstream_log)[len(start) :]
        # B left without unsubscribing: its session ended, and with it the last holder.
        await until_logged(
            upstream_log, f"unsubscribe {URI}", start.count(f"unsubscribe {URI}") + 1
        )

    assert while_held == [f"subscribe {URI}"]  # once for both clients, still held after A left
    assert first.updated() == []


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_2026_client_listening_to_an_upstream_resource_hears_its_updates(
    transport: str, watched_only: Path, upstream_log: Path, request: pytest.FixtureRequest
) -> None:
    before = upstream_lines(upstream_log)
    # Over stdio a serve of its own: a 2026-07-28 session, unlike the shared one.
    async with connect(transport, watched_only, request, Heard(), "auto") as client:
        assert client.protocol_version == "2026-07-28"
        async with client.listen(resource_subscriptions=[URI]) as events:
            await until_logged(
                upstream_log, f"subscribe {URI}", before.count(f"subscribe {URI}") + 1
            )
            await client.call_tool("mcp_watched_touch", {"uri": URI})
            event = await anext(aiter(events))
        await until_logged(
            upstream_log, f"unsubscribe {URI}", before.count(f"unsubscribe {URI}") + 1
        )

    assert getattr(event, "uri", None) == URI


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_upstream_list_changes_reach_the_client(
    transport: str, config: Path, request: pytest.FixtureRequest, shared_stdio: SharedClient
) -> None:
    heard = Heard()
    async with connect(transport, config, request, heard, "legacy", shared_stdio) as client:
        tools_before = {t.name for t in (await client.list_tools()).tools}
        await client.call_tool("mcp_watched_grow", {"kind": "tool"})
        await wait_until(
            lambda: heard.count(types.ToolListChangedNotification) >= 1, timeout=15, what="tools"
        )
        tools_after = {t.name for t in (await client.list_tools()).tools}
        resources_before = {str(r.uri) for r in (await client.list_resources()).resources}
        await client.call_tool("mcp_watched_grow", {"kind": "resource"})
        await wait_until(
            lambda: heard.count(types.ResourceListChangedNotification) >= 2,
            timeout=15,
            what="resources",
        )
        resources_after = {str(r.uri) for r in (await client.list_resources()).resources}
        prompts_before = {p.name for p in (await client.list_prompts()).prompts}
        await client.call_tool("mcp_watched_grow", {"kind": "prompt"})
        await wait_until(
            lambda: heard.count(types.PromptListChangedNotification) >= 3,
            timeout=15,
            what="prompts",
        )
        prompts_after = {p.name for p in (await client.list_prompts()).prompts}

    assert len(tools_after - tools_before) == 1
    assert len(resources_after - resources_before) == 1
    assert len(prompts_after - prompts_before) == 1


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_subscription_to_a_2026_upstream_rides_its_listen_stream(
    transport: str,
    config: Path,
    upstream_log: Path,
    request: pytest.FixtureRequest,
    shared_stdio: SharedClient,
) -> None:
    heard = Heard()
    before = upstream_lines(upstream_log)
    async with connect(transport, config, request, heard, "legacy", shared_stdio) as client:
        await subscribe(client, MODERN_URI)
        listened = upstream_lines(upstream_log)[len(before) :]
        await client.call_tool("mcp_modern_touch", {"uri": MODERN_URI})
        await wait_until(lambda: MODERN_URI in heard.updated(), timeout=15, what="relayed")
        await subscribe(client, MODERN_URI, unsubscribe=True)
        await until_logged(
            upstream_log, f"unlisten {MODERN_URI}", before.count(f"unlisten {MODERN_URI}") + 1
        )

    # Acknowledged before resources/subscribe returned: the stream carried the URI by then.
    assert f"listen {MODERN_URI}" in listened
    assert heard.updated() == [MODERN_URI]


async def test_an_upstream_subscription_is_made_again_after_the_server_restarts(
    upstream_log: Path, request: pytest.FixtureRequest
) -> None:
    heard = Heard()
    # A serve of its own (it kills that serve's upstream), known by its config's name.
    config = write_config(upstream_log, "restarted", modern=False)
    async with connect("stdio", config, request, heard, "legacy") as client:
        await subscribe(client, URI)
        # Connected (on a busy machine the upstream's first connect may time out and retry).
        await wait_until(lambda: _answers(client), timeout=30, what="the upstream connected")
        made = upstream_lines(upstream_log).count(f"subscribe {URI}")
        # The host's pid of this gateway's upstream: not the sandbox's helpers, not the
        # one the module's HTTP gateway or shared stdio gateway started.
        gateway = [p for p in psutil.Process().children() if str(config) in command_line(p)]
        below = {c.pid for g in gateway for c in g.children(recursive=True)}
        legacy = [
            pid
            for pid in server_pids(str(upstream_log))
            if pid in below and command_line(psutil.Process(pid))[-1:] == [str(upstream_log)]
        ]
        assert len(legacy) == 1, legacy
        os.kill(legacy[0], signal.SIGKILL)
        # The next call reconnects (a new process): the subscription is made there again.
        await wait_until(lambda: _answers(client), timeout=15, what="a new upstream process")
        await until_logged(upstream_log, f"subscribe {URI}", made + 1)
        await client.call_tool("mcp_watched_touch", {"uri": URI})
        await wait_until(lambda: URI in heard.updated(), timeout=15, what="the update relayed")


async def _answers(client: Client) -> bool:
    return not (await client.call_tool("mcp_watched_whoami", {})).is_error


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))
