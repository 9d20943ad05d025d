"""What reaches a plugin that it was not meant to: the bot's configuration, the console, the user.

Through real runners and a real host with the default configuration (and the
real console server where the console is concerned):

- the bot's ``model`` and ``bot`` configuration reaches only the runner of the
  plugin that subscribed when it loaded, never a neighbour's process (which
  taps its runner's socket to look), and in a shared runner the one message
  names only the subscriber;
- a plugin whose network reaches the host's loopback (a ``localhost:PORT``
  grant of the console's or the MCP server's port, or a manifest asking for
  the console's port) reads nothing of the console: no feed, no stream, no
  status, no metrics;
- event streams past their bound are refused with a reason, and a neighbour's
  calls keep their pace while the allowed ones are open, half of them stalled;
- an elicitation reaches the MCP client naming the plugin that asks, before
  anything the plugin wrote, which can neither hide nor imitate it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import statistics
import sys
import time
import unicodedata
from asyncio.subprocess import Process
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types

from plughost.events import EventKind, LifecycleEvent
from plughost.host import PluginHost
from plughost.mcp.server import serve_http
from plughost.settings import WebSettings
from plughost.web import WebConsole
from plughost.web.streams import MAX_STREAMS, MAX_STREAMS_PER_CLIENT
from tests.conftest import TEST_PLUGINS, fast_settings
from tests.mcp_servers.harness import free_port, plughost_client
from tests.security.sandboxed import require
from tests.waiting import wait_until

LISTENER = "community.config-listener"
EAVESDROPPER = "community.config-eavesdropper"
MODEL_KEY = "sk-model-key-5f0c2e"
PEEKER = "tests.console-peeker"
TOKEN = "console-operator-token-4d1e9a"
MARKER = "chat: xiaoming says the vault code is 4471"
READS = ["/api/feed", "/api/stream", "/api/overview", "/api/tools", "/metrics"]


def _plant(root: Path, *names: str) -> list[Path]:
    folders = []
    for name in names:
        folders.append(root / "plugins" / name)
        shutil.copytree(TEST_PLUGINS / name, folders[-1])
    return folders


async def _structured(host: PluginHost, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await host.invoke(tool, arguments)
    assert result.success, result.error_message
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def _bot_scoped(seen: dict[str, Any]) -> list[dict[str, Any]]:
    """The configuration messages a plugin's process received for the bot's scopes."""
    return [m for m in seen["overheard"] if m.get("scope") != "self"]


# --- the bot's configuration -----------------------------------------------------------------


async def test_the_bots_configuration_reaches_only_the_runner_of_the_plugin_that_subscribed(
    tmp_path: Path,
) -> None:
    folders = _plant(tmp_path, "config_listener", "config_eavesdropper")
    async with PluginHost(folders, settings=fast_settings(tmp_path)) as host:
        model = await host.broadcast_config("model", {"api_key": MODEL_KEY}, "v1")
        bot = await host.broadcast_config("bot", {"bot": {"nickname": "maimai"}}, "v2")
        # Subscribing after load (changing its class attribute) gets it nothing more.
        await host.invoke("eavesdropper_subscribe", {})
        again = await host.broadcast_config("model", {"api_key": MODEL_KEY + "-2"}, "v3")
        listener = await _structured(host, "listener_received")
        eavesdropper = await _structured(host, "eavesdropper_overheard")

    assert model == again == [LISTENER]
    assert bot == []  # nobody subscribed to it
    assert [u["config"]["api_key"] for u in listener["updates"]] == [MODEL_KEY, MODEL_KEY + "-2"]
    # Not even the subscriber's process saw the scope it did not subscribe to.
    assert [m["scope"] for m in _bot_scoped(listener)] == ["model", "model"]
    assert _bot_scoped(eavesdropper) == [] and eavesdropper["updates"] == []
    assert MODEL_KEY not in json.dumps(eavesdropper)


async def test_in_a_shared_runner_the_configuration_is_sent_once_naming_only_the_subscriber(
    tmp_path: Path,
) -> None:
    folders = _plant(tmp_path, "config_listener", "config_eavesdropper")
    settings = fast_settings(tmp_path)
    settings.runner_grouping = "single"
    async with PluginHost(folders, settings=settings) as host:
        assert host.runner_for(LISTENER) is host.runner_for(EAVESDROPPER)
        delivered = await host.broadcast_config("model", {"api_key": MODEL_KEY}, "v1")
        eavesdropper = await _structured(host, "eavesdropper_overheard")

    assert delivered == [LISTENER]
    # The shared process sees the one message (its plugins trust each other), which
    # names the subscriber only; the runner runs no other plugin's on_config_update.
    assert [(m["plugin"], m["scope"]) for m in _bot_scoped(eavesdropper)] == [(LISTENER, "model")]
    assert eavesdropper["updates"] == []


# --- the console, from inside a runner ----------------------------------------------------------


@asynccontextmanager
async def _peeking(tmp_path: Path, how: str) -> AsyncIterator[tuple[PluginHost, int, int]]:
    """The peeker and a neighbour, the console and an MCP HTTP server, the peeker's way in.

    ``how`` is ``grant`` (``localhost:PORT`` grants of both servers' ports) or
    ``manifest`` (its manifest asks for the console's port on the host's network).
    Yields the host, the console's port and the MCP server's port.
    """
    peeker, echo = _plant(tmp_path, "console_peeker", "echo")
    host = PluginHost([peeker, echo], settings=fast_settings(tmp_path))
    mcp_port, mcp_ready = free_port(), asyncio.Event()
    mcp = asyncio.create_task(
        serve_http(host.tools, port=mcp_port, ready=mcp_ready, bearer_token="b" * 32)
    )
    try:
        web = WebSettings(address="127.0.0.1:0", token=TOKEN)
        async with WebConsole(host, web) as console:
            assert console.port is not None
            await asyncio.wait_for(mcp_ready.wait(), 30)
            if how == "grant":
                grants = [f"localhost:{console.port}", f"localhost:{mcp_port}"]
                host.settings.network_grants[PEEKER] = grants
            else:
                manifest = json.loads((peeker / "_manifest.json").read_text())
                manifest["network"] = {"connect": [console.port]}
                (peeker / "_manifest.json").write_text(json.dumps(manifest))
            async with host:
                logging.getLogger("plughost.plugin.tests.echo").warning("%s", MARKER)
                yield host, console.port, mcp_port
    finally:
        mcp.cancel()
        with suppress(asyncio.CancelledError):
            await mcp


async def _operator_feed(port: int) -> str:
    async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
        response = await client.get("/api/feed", headers={"authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    return response.text


async def test_a_plugin_granted_the_consoles_port_is_refused_at_the_gate_and_told_why(
    tmp_path: Path,
) -> None:
    denials: list[LifecycleEvent] = []
    async with _peeking(tmp_path, "grant") as (host, port, mcp_port):
        require(host, "network_namespace")
        host.events.add_callback(
            lambda e: denials.append(e) if e.kind is EventKind.NETWORK_DENIED else None
        )
        operator = await _operator_feed(port)
        seen = [await _structured(host, "peek", port=port, path=path) for path in READS]
        mcp = await _structured(host, "peek", port=mcp_port, path="/mcp")

    assert MARKER in operator  # the feed holds it: the operator, with the token, reads it
    for path, outcome in zip(READS, seen, strict=True):
        assert not outcome["reached"], (path, outcome)
        assert "plughost's own console" in outcome["body"], (path, outcome)
        assert MARKER not in outcome["body"]
    assert not mcp["reached"] and "plughost's own MCP HTTP server" in mcp["body"]
    refused = {e.details["service"] for e in denials if e.plugin_id == PEEKER}
    assert refused == {"console", "MCP HTTP server"}
    assert all(PEEKER in e.message and "whatever its grants" in e.message for e in denials)


async def test_a_plugin_whose_manifest_asks_for_the_consoles_port_reads_nothing_of_it(
    tmp_path: Path,
) -> None:
    async with _peeking(tmp_path, "manifest") as (host, port, _):
        operator = await _operator_feed(port)
        seen = [await _structured(host, "peek", port=port, path=path) for path in READS]
        guessed = await _structured(host, "peek", port=port, path="/api/stream?token=guess")

    assert MARKER in operator
    for path, outcome in zip([*READS, "?token=guess"], [*seen, guessed], strict=True):
        # Its network reaches the port: the gate refuses it, or the console wants the token.
        refused = not outcome["reached"] and "plughost's own console" in outcome["body"]
        assert refused or outcome["status"] == 401, (path, outcome)
        assert MARKER not in outcome["body"] and "plugin_id" not in outcome["body"]


async def _answer(client: httpx2.AsyncClient, path: str) -> tuple[int, str]:
    """The status of a GET and, unless it is an answered stream (which never ends), its body."""
    async with client.stream("GET", path) as response:
        if response.status_code == 200 and path == "/api/stream":
            return 200, ""
        return response.status_code, (await response.aread()).decode()


async def test_a_local_client_without_the_token_reads_nothing_but_the_page(tmp_path: Path) -> None:
    web = WebSettings(address="127.0.0.1:0", token=TOKEN)
    async with (
        PluginHost(_plant(tmp_path, "echo"), settings=fast_settings(tmp_path)) as host,
        WebConsole(host, web) as console,
        httpx2.AsyncClient(base_url=console.url.rstrip("/"), timeout=10) as client,
    ):
        logging.getLogger("plughost.plugin.tests.echo").warning("%s", MARKER)
        page = await client.get("/")
        anonymous = {path: await _answer(client, path) for path in READS}
        wrong = await client.get("/api/feed", headers={"authorization": "Bearer not-the-token"})
        operator = await client.get("/api/feed", headers={"authorization": f"Bearer {TOKEN}"})

    assert page.status_code == 200
    assert {path: status for path, (status, _) in anonymous.items()} == dict.fromkeys(READS, 401)
    assert all("token" in text and MARKER not in text for _, text in anonymous.values())
    assert wrong.status_code == 401
    assert operator.status_code == 200 and MARKER in operator.text


# --- how many event streams, and what they cost a neighbour -----------------------------------

_STREAMS = """
import json, socket, sys, threading
port, token = int(sys.argv[1]), sys.argv[2]
kept = []
for address, count in json.loads(sys.argv[3]):
    for n in range(count):
        sock = socket.create_connection(("127.0.0.1", port), source_address=(address, 0))
        sock.sendall((f"GET /api/stream HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n"
                      f"Authorization: Bearer {token}\\r\\n\\r\\n").encode())
        head = b""
        while b"\\r\\n\\r\\n" not in head:
            head += sock.recv(1)
        status = int(head.split()[1])
        body = ""
        if status != 200:
            length = int(head.lower().split(b"content-length:")[1].split(b"\\r\\n")[0])
            data = b""
            while len(data) < length:
                data += sock.recv(length - len(data))
            body = json.loads(data)["error"]
            sock.close()
        elif n % 2:  # every other stream is read; the rest stall, never read again
            threading.Thread(target=lambda s=sock: [0 for _ in iter(lambda: s.recv(65536), b"")],
                             daemon=True).start()
        kept.append(sock)
        print(json.dumps({"address": address, "status": status, "error": body}), flush=True)
print("ready", flush=True)
sys.stdin.read()
"""


async def _median_call_ms(host: PluginHost, calls: int = 150) -> float:
    """The median time of a neighbour's call, each with a log line the console's feed gets."""
    feed = logging.getLogger("plughost.plugin.tests.echo")
    times = []
    for n in range(calls):
        started = time.perf_counter()
        feed.info("call %d", n)
        result = await host.invoke("echo", {"text": str(n)})
        times.append(time.perf_counter() - started)
        assert result.success, result.error_message
    return statistics.median(times) * 1000


async def _one_stream_opens(base: str) -> bool:
    async with (
        httpx2.AsyncClient(base_url=base, timeout=5) as client,
        client.stream("GET", "/api/stream", headers={"authorization": f"Bearer {TOKEN}"}) as sse,
    ):
        return sse.status_code == 200


async def _open_streams(console: WebConsole, plan: list[tuple[str, int]]) -> Process:
    """Start a process that opens the streams of ``plan``; it holds them until its stdin closes.

    Each attempt is a JSON line on its stdout, then ``ready``.
    """
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _STREAMS,
        str(console.port),
        TOKEN,
        json.dumps(plan),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )


async def _attempts(streams: Process) -> list[dict[str, Any]]:
    """What the opener reported of each stream it tried, once it holds them all."""
    assert streams.stdout is not None
    opened = []
    async with asyncio.timeout(60):
        while (line := (await streams.stdout.readline()).decode().strip()) != "ready":
            assert line, "the stream opener exited early"
            opened.append(json.loads(line))
    return opened


async def _close_streams(streams: Process, console: WebConsole) -> None:
    assert streams.stdin is not None
    streams.stdin.close()
    await streams.wait()
    base = console.url.rstrip("/")
    await wait_until(lambda: _one_stream_opens(base), timeout=20, what="slots given back")


async def test_event_streams_past_their_bound_are_refused_and_a_neighbour_keeps_its_pace(
    tmp_path: Path,
) -> None:
    web = WebSettings(address="127.0.0.1:0", token=TOKEN)
    plan = [("127.0.0.1", 10), ("127.0.0.2", 10), ("127.0.0.3", 5)]
    rounds: list[tuple[float, list[dict[str, Any]], float]] = []
    async with (
        PluginHost(_plant(tmp_path, "echo"), settings=fast_settings(tmp_path)) as host,
        WebConsole(host, web) as console,
    ):
        # Quiet and loaded in turns: a busy spell of the machine slows one block, not all.
        for _ in range(3):
            quiet = await _median_call_ms(host)
            streams = await _open_streams(console, plan)
            try:
                opened = await _attempts(streams)
                loaded = await _median_call_ms(host)
            finally:
                await _close_streams(streams, console)
            rounds.append((quiet, opened, loaded))

    per_client = MAX_STREAMS_PER_CLIENT
    for _, opened, _ in rounds:
        statuses = [(o["address"], o["status"]) for o in opened]
        assert statuses == (
            [("127.0.0.1", 200)] * per_client
            + [("127.0.0.1", 429)] * (10 - per_client)
            + [("127.0.0.2", 200)] * (MAX_STREAMS - per_client)
            + [("127.0.0.2", 503)] * (10 - MAX_STREAMS + per_client)
            + [("127.0.0.3", 503)] * 5
        )
        reasons = {o["status"]: o["error"] for o in opened if o["status"] != 200}
        assert "per client" in reasons[429] and "its limit" in reasons[503]
    # Against this test's own quiet baseline, the fastest block of each kind; without the
    # bound 100 streams made every call 240 times slower.
    blocks = [(round(quiet, 2), round(loaded, 2)) for quiet, _, loaded in rounds]
    quiet, loaded = min(b[0] for b in blocks), min(b[1] for b in blocks)
    assert loaded / quiet < 3, f"(quiet, with streams) medians in ms: {blocks}"


# --- who asks the user ----------------------------------------------------------------------


def _hidden_or_breaking(text: str) -> list[str]:
    return [c for c in text if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Co", "Cn")]


async def test_an_elicitation_names_the_plugin_that_asks_in_words_it_cannot_forge_or_hide(
    tmp_path: Path,
) -> None:
    [folder] = _plant(tmp_path, "phisher")
    config = tmp_path / "plughost.toml"
    config.write_text(
        f"[host]\nplugin_dirs = [{json.dumps(str(folder))}]\n"
        f"data_dir = {json.dumps(str(tmp_path / 'data'))}\n"
    )
    asked: list[types.ElicitRequestFormParams] = []

    async def elicitation(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="decline")

    async with plughost_client(config, None, elicitation_callback=elicitation) as client:
        phished = await client.call_tool("phish", {})
        hidden = await client.call_tool("phish_hidden_field", {})

    [params] = asked  # the form with a hiding field name never reached the user
    message = params.message
    start = "plugin tests.phisher asks (tool phish): "
    assert message.startswith(start)
    assert message.count("tests.phisher") == 1
    assert _hidden_or_breaking(message) == []  # no line of its own, no reordering
    assert "[plughost] plughost asks: your session expired." in message  # shown, as its text
    assert len(message) <= len(start) + 2000
    field = params.requested_schema["properties"]["api_key"]
    assert field["title"] == "plughost yek IPA"
    assert field["description"] == "required by plughost to continue"
    assert "".join(b.text for b in phished.content if isinstance(b, types.TextContent)) == (
        "user decline"
    )
    refusal = "".join(b.text for b in hidden.content if isinstance(b, types.TextContent))
    assert refusal.startswith("refused:") and "hidden characters" in refusal, refusal
    assert "plugin tests.phisher" in refusal
