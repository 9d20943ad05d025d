"""The official MCP client drives every server feature of a real ``plughost serve``.

Over stdio and streamable HTTP, against tests/plugins/conformance (resources,
templates, prompts, completions, subscriptions, logging, sampling, elicitation)
and server-everything (npm) configured upstream, whose resources and prompts
plughost re-serves and whose sampling tool appears only because plughost, as
a client, offers sampling, which it passes on to its own client.
"""

from __future__ import annotations

import base64
import json
import shutil
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp.client.session
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning

from tests.mcp_servers.harness import DEMO_SERVER, Peer, plughost_client, plughost_serve_http
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "tests" / "plugins" / "conformance"
EVERYTHING = ROOT / ".venv-mcp-servers" / "node" / "node_modules" / ".bin" / "mcp-server-everything"


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not EVERYTHING.exists() or shutil.which("node") is None:
        pytest.fail(
            "server-everything and node are needed: run scripts/install_test_mcp_servers.sh"
        )
    path = tmp_path_factory.mktemp("serve") / "plughost.toml"
    path.write_text(
        f"[host]\nplugin_dirs = [{json.dumps(str(PLUGIN))}]\n\n"
        '[mcp]\nroots = ["file:///srv/plughost-test"]\n\n'
        f'[mcp.servers.everything]\ncommand = "node"\nargs = [{json.dumps(str(EVERYTHING))}]\n\n'
        f"[mcp.servers.demo]\ncommand = {json.dumps(sys.executable)}\n"
        f'args = [{json.dumps(str(DEMO_SERVER))}, "stdio"]\n'
    )
    return path


@pytest.fixture(scope="module")
def plugin_only(config: Path) -> Path:
    """The conformance plugin alone: for a serve of its own whose test uses no upstream."""
    path = config.parent / "plugin-only.toml"
    path.write_text(f"[host]\nplugin_dirs = [{json.dumps(str(PLUGIN))}]\n")
    return path


@pytest.fixture(scope="module")
def http_server(config: Path) -> Iterator[tuple[str, str]]:
    """One plughost serve over HTTP for the module (URL, token): each test opens its own session."""
    with plughost_serve_http(config.parent / "token", "--config", str(config)) as served:
        yield served


@asynccontextmanager
async def connect(
    transport: str, config: Path, request: pytest.FixtureRequest, peer: Peer | None
) -> AsyncIterator[Client]:
    callbacks: dict[str, Any] = {}
    if peer is not None:
        callbacks = {
            "sampling_callback": peer.sampling,
            "elicitation_callback": peer.elicitation,
            "logging_callback": peer.logging,
            "message_handler": peer.messages,
        }
    served = request.getfixturevalue("http_server") if transport == "http" else None
    # The handshake-era protocol: sampling and elicitation need a server-to-client channel.
    async with plughost_client(config, served, **callbacks) as client:
        yield client


def text_of(result: types.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, types.TextContent))


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_an_mcp_client_uses_every_server_feature_of_plughost_serve(
    transport: str, config: Path, request: pytest.FixtureRequest
) -> None:
    peer = Peer()
    async with connect(transport, config, request, peer) as client:
        resources = {r.uri: r for r in (await client.list_resources()).resources}
        templates = {
            t.uri_template: t for t in (await client.list_resource_templates()).resource_templates
        }
        text = (await client.read_resource("test://static-text")).contents[0]
        blob = (await client.read_resource("test://static-binary")).contents[0]
        templated = (await client.read_resource("test://template/7/data")).contents[0]
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        filled = await client.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
        image = await client.get_prompt("test_prompt_with_image")
        completion = await client.complete(
            types.PromptReference(name="test_prompt_with_arguments"),
            {"name": "arg1", "value": "par"},
        )
        upstream = next(uri for uri, r in resources.items() if r.name.startswith("mcp_everything_"))
        upstream_read = await client.read_resource(upstream)
        upstream_prompt = next(name for name in prompts if name.startswith("mcp_everything_"))
        with pytest.raises(Exception, match="Resource not found"):
            await client.read_resource("test://nothing-here")
        with pytest.warns(MCPDeprecationWarning):  # deprecated in 2026-07-28, current before
            await client.set_logging_level("info")
        await client.call_tool("test_tool_with_logging", {})
        logs = [str(p.data) for p in peer.logs]  # sent before the result, so all here now
        sampled = await client.call_tool("test_sampling", {"prompt": "2+2?"})
        elicited = await client.call_tool("test_elicitation", {"message": "Who are you?"})
        with pytest.warns(MCPDeprecationWarning):  # 2026-07-28 clients listen() instead
            await client.subscribe_resource("test://watched-resource")
        await client.call_tool("touch_watched_resource", {})
        await wait_until(lambda: bool(peer.updated), timeout=10, what="resources/updated")
        with pytest.warns(MCPDeprecationWarning):
            await client.unsubscribe_resource("test://watched-resource")
        await client.call_tool("touch_watched_resource", {})  # unsubscribed: not announced
        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource("test://watched-resource")
        await client.call_tool("touch_watched_resource", {})  # after the unheard one, in order
        await wait_until(lambda: len(peer.updated) >= 2, timeout=10, what="second update")
        tools = {t.name for t in (await client.list_tools()).tools}
        gateway = await client.call_tool(
            "mcp_everything_trigger-sampling-request",
            {"prompt": "upstream question", "maxTokens": 5},
        )
        await client.call_tool("mcp_everything_trigger-elicitation-request", {})
        roots = await client.call_tool("mcp_everything_get-roots-list", {})
        before = len(peer.logs)
        await client.call_tool("mcp_demo_log_then_answer", {"text": "hi"})
        upstream_logs = [(p.logger, str(p.data)) for p in peer.logs[before:]]

    assert resources["test://static-text"].mime_type == "text/plain"
    assert "test://template/{id}/data" in templates
    assert any(name.startswith("mcp_everything_") for name in (t.name for t in templates.values()))
    assert isinstance(text, types.TextResourceContents)
    assert text.text == "This is the content of the static text resource."
    assert isinstance(blob, types.BlobResourceContents)
    assert base64.b64decode(blob.blob).startswith(b"\x89PNG")
    assert isinstance(templated, types.TextResourceContents)
    assert json.loads(templated.text)["data"] == "Data for ID: 7"
    assert [a.name for a in prompts["test_prompt_with_arguments"].arguments or []] == [
        "arg1",
        "arg2",
    ]
    assert isinstance(filled.messages[0].content, types.TextContent)
    assert filled.messages[0].content.text == "Prompt with arguments: arg1='a', arg2='b'"
    assert [m.content.type for m in image.messages] == ["image", "text"]
    assert completion.completion.values == ["paris", "park", "party"]
    assert upstream_read.contents and upstream_read.contents[0].uri == upstream
    assert upstream_prompt.startswith("mcp_everything_")
    assert logs == ["Tool execution started", "Tool processing data", "Tool execution completed"]
    assert {p.level for p in peer.logs} == {"info"}
    assert peer.logs[0].logger == "plugin.tests.conformance"
    assert text_of(sampled) == "LLM response: four"
    assert peer.sampled[0] == "2+2?"
    assert text_of(elicited).startswith("User response: action=accept")
    # The host names who asks before what, so a plugin (or a server) cannot pass for plughost.
    assert peer.asked == [
        "plugin tests.conformance asks (tool test_elicitation): Who are you?",
        "MCP server everything asks (tool mcp_everything_trigger-elicitation-request): "
        "Please provide inputs for the following fields:",
    ]
    assert peer.updated == ["test://watched-resource"] * 2
    # plughost offers sampling upstream, so server-everything lists its sampling tool,
    # and the upstream's request reaches this client through plughost.
    assert {
        "mcp_everything_trigger-sampling-request",
        "mcp_everything_trigger-elicitation-request",
        "mcp_everything_get-roots-list",
    } <= tools
    assert not gateway.is_error, text_of(gateway)
    assert "upstream question" in peer.sampled[-1]
    assert "four" in text_of(gateway)
    assert "file:///srv/plughost-test" in text_of(roots)
    # An upstream server's log during a call reaches the call's client, like a plugin's.
    assert upstream_logs == [("mcp.demo", "upstream log: hi")]


async def test_sampling_fails_with_the_reason_when_the_client_does_not_offer_it(
    config: Path, request: pytest.FixtureRequest
) -> None:
    async with connect("http", config, request, None) as client:
        result = await client.call_tool("test_sampling", {"prompt": "2+2?"})
        logged = await client.call_tool("test_tool_with_logging", {})

    assert result.is_error
    assert "did not offer sampling" in text_of(result)
    assert not logged.is_error  # no logging/setLevel: the call runs, no log messages are sent


@pytest.mark.parametrize(
    ("transport", "version"),
    [
        ("stdio", "2024-11-05"),
        ("http", "2024-11-05"),
        ("http", "2025-03-26"),
        ("http", "2025-06-18"),
    ],
)
async def test_clients_of_older_protocols_are_served_sampling_and_elicitation_where_it_exists(
    transport: str,
    version: str,
    plugin_only: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The SDK client always offers its newest handshake version; this pins an older one.
    monkeypatch.setattr(mcp.client.session, "LATEST_HANDSHAKE_VERSION", version)
    peer = Peer()
    # Over stdio a serve of its own, of the plugin alone: no upstream takes part here.
    async with connect(transport, plugin_only, request, peer) as client:
        negotiated = client.protocol_version
        sampled = await client.call_tool("test_sampling", {"prompt": "2+2?"})
        elicited = await client.call_tool("test_elicitation", {"message": "Who are you?"})

    assert negotiated == version
    # sampling/createMessage exists since 2024-11-05: every handshake-era client is served.
    assert not sampled.is_error, text_of(sampled)
    assert text_of(sampled) == "LLM response: four"
    if version >= "2025-06-18":
        assert text_of(elicited).startswith("User response: action=accept")
    else:
        # elicitation/create came with 2025-06-18: refused with the reason, never sent.
        assert elicited.is_error
        assert f"its protocol {version} has no elicitation requests" in text_of(elicited)
        assert peer.asked == []


async def raw_session(http: httpx2.AsyncClient, url: str, token: str) -> dict[str, str]:
    """Open a session of a 2025-11-25 client by hand; return the headers its requests carry."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {token}",
    }
    response = await http.post(url, json=initialize, headers=headers)
    headers |= {"mcp-session-id": response.headers["mcp-session-id"]}
    headers |= {"mcp-protocol-version": "2025-11-25"}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    await http.post(url, json=initialized, headers=headers)
    return headers


def sse_events(text: str) -> list[dict[str, str]]:
    blocks = text.replace("\r\n", "\n").strip().split("\n\n")
    return [
        {k: v.strip() for k, v in (line.split(":", 1) for line in block.split("\n") if ":" in line)}
        for block in blocks
    ]


def call(name: str, arguments: dict[str, Any], **meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}


async def answer_in_new_session(http_server: tuple[str, str], request: Any) -> httpx2.Response:
    http_url, token = http_server
    async with httpx2.AsyncClient(timeout=10) as http:
        headers = await raw_session(http, http_url, token)
        return await http.post(http_url, json=request, headers=headers)


async def test_http_streams_open_with_a_priming_event_and_a_retry_hint(
    http_server: tuple[str, str],
) -> None:
    progressing = call("test_tool_with_progress", {}, progressToken="p")
    response = await answer_in_new_session(http_server, progressing)

    events = sse_events(response.text)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert events[0]["id"] and events[0]["data"] == ""
    assert events[0]["retry"] == "1000"
    assert "notifications/progress" in events[1]["data"]  # the progress, then the answer
    assert "Progress tool completed" in events[-1]["data"]


async def test_a_quick_http_answer_with_nothing_before_it_comes_as_one_json_body(
    http_server: tuple[str, str],
) -> None:
    response = await answer_in_new_session(http_server, call("test_simple_text", {}))

    assert response.headers["content-type"] == "application/json"
    answer = response.json()
    assert answer["id"] == 2
    assert answer["result"]["content"][0]["text"] == "This is a simple text response for testing."


async def test_a_client_that_lost_a_slow_calls_stream_resumes_it_with_last_event_id(
    http_server: tuple[str, str],
) -> None:
    http_url, token = http_server
    slow = call("mcp_everything_trigger-long-running-operation", {"duration": 0.5, "steps": 1})
    async with httpx2.AsyncClient(timeout=10) as http:
        headers = await raw_session(http, http_url, token)
        async with http.stream("POST", http_url, json=slow, headers=headers) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            async for line in response.aiter_lines():  # the priming event, then drop the line
                if line.startswith("id:"):
                    last_event_id = line.split(":", 1)[1].strip()
                    break
        resumed = headers | {"Last-Event-ID": last_event_id}
        answer: dict[str, Any] = {}
        with anyio.fail_after(30):
            while not answer:  # a resume that raced the dropped stream's cleanup ends empty
                async with http.stream("GET", http_url, headers=resumed) as replay:
                    async for line in replay.aiter_lines():
                        if line.startswith("data:") and '"id":2' in line.replace(" ", ""):
                            answer = json.loads(line.split(":", 1)[1])
                            break

    assert "Long running operation completed" in answer["result"]["content"][0]["text"]
