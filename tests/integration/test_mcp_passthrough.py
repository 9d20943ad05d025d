"""Through ``plughost serve``, published MCP servers answer exactly as they do directly.

The official MCP client calls server-everything, server-filesystem, mcp-server-time
and mcp-server-git (installed by scripts/install_test_mcp_servers.sh) once directly
and once through a real ``plughost serve`` (stdio and streamable HTTP) that has them
as upstreams, and compares the JSON: tool results (content blocks in their order,
annotations, embedded resources, ``structuredContent``, ``isError``) and tool
definitions (title, every annotation hint, ``outputSchema``, ``execution``) are
equal, apart from the namespaced tool names.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from plughost.tools.naming import qualified_name
from tests.mcp_servers.harness import PUBLISHED, plughost_client, plughost_serve_http

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "tests" / "plugins" / "echo"
NODE_BIN = PUBLISHED / "node" / "node_modules" / ".bin"
# A dynamic resource of server-everything says when it was made: the one difference.
_CLOCK = re.compile(r"\d{1,2}:\d{2}:\d{2}\s?[AP]M")


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    missing = [
        str(path)
        for path in (
            NODE_BIN / "mcp-server-everything",
            NODE_BIN / "mcp-server-filesystem",
            PUBLISHED / "bin" / "mcp-server-time",
            PUBLISHED / "bin" / "mcp-server-git",
        )
        if not path.exists()
    ]
    if missing or shutil.which("node") is None or shutil.which("git") is None:
        pytest.fail(
            f"node, git and the published MCP servers are needed ({missing} missing): "
            "run scripts/install_test_mcp_servers.sh"
        )
    base = tmp_path_factory.mktemp("passthrough")
    files, repo = base / "files", base / "repo"
    files.mkdir()
    (files / "note.txt").write_text("a note\n")
    # A picture of 100 KB: its base64 must travel once, not once more as text.
    (files / "picture.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 400)
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README.md").write_text("hello\n")
    return {"base": base, "files": files, "repo": repo}


def upstreams(places: dict[str, Path]) -> dict[str, tuple[str, list[str]]]:
    """Each server's command and arguments, the same directly and through plughost."""
    return {
        "everything": ("node", [str(NODE_BIN / "mcp-server-everything")]),
        "files": ("node", [str(NODE_BIN / "mcp-server-filesystem"), str(places["files"])]),
        "time": (str(PUBLISHED / "bin" / "mcp-server-time"), ["--local-timezone", "UTC"]),
        "git": (
            str(PUBLISHED / "bin" / "mcp-server-git"),
            ["--repository", str(places["repo"])],
        ),
    }


def calls(places: dict[str, Path]) -> list[tuple[str, str, dict[str, Any]]]:
    files = places["files"]
    return [
        ("everything", "get-tiny-image", {}),
        ("everything", "get-annotated-message", {"messageType": "error", "includeImage": True}),
        ("everything", "get-resource-reference", {"resourceType": "Text", "resourceId": 1}),
        ("everything", "get-structured-content", {"location": "New York"}),
        ("everything", "get-resource-links", {"count": 2}),
        ("everything", "echo", {"message": "through"}),
        ("files", "read_media_file", {"path": str(files / "picture.png")}),
        ("files", "read_text_file", {"path": str(files / "note.txt")}),
        ("files", "read_text_file", {"path": str(files / "absent.txt")}),
        (
            "time",
            "convert_time",
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
        ),
        ("git", "git_status", {"repo_path": str(places["repo"])}),
    ]


@pytest.fixture(scope="module")
def config(places: dict[str, Path]) -> Path:
    lines = [f"[host]\nplugin_dirs = [{json.dumps(str(PLUGIN))}]\n"]
    for name, (command, args) in upstreams(places).items():
        lines.append(
            f"[mcp.servers.{name}]\ncommand = {json.dumps(command)}\nargs = {json.dumps(args)}\n"
        )
    path = places["base"] / "plughost.toml"
    path.write_text("\n".join(lines))
    return path


@pytest.fixture(scope="module")
def http_server(config: Path) -> Iterator[tuple[str, str]]:
    with plughost_serve_http(config.parent / "token", "--config", str(config)) as served:
        yield served


@asynccontextmanager
async def through_plughost(
    transport: str, config: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Client]:
    served = request.getfixturevalue("http_server") if transport == "http" else None
    async with plughost_client(config, served) as client:
        yield client


@asynccontextmanager
async def direct(places: dict[str, Path]) -> AsyncIterator[dict[str, Client]]:
    async with AsyncExitStack() as stack:
        clients: dict[str, Client] = {}
        for name, (command, args) in upstreams(places).items():
            target = StdioServerParameters(command=command, args=args)
            client = Client(target, cache=None)  # as plughost connects: 2026 first
            clients[name] = await stack.enter_async_context(client)
        yield clients


def as_json(model: types.CallToolResult | types.Tool) -> Any:
    text = json.dumps(model.model_dump(by_alias=True, mode="json", exclude_none=True))
    return json.loads(_CLOCK.sub("<clock>", text))


def served_name(server: str, tool: str) -> str:
    return qualified_name("mcp", server, tool)


Answers = tuple[list[Any], dict[str, Any]]
"""The calls' results in order, and the tool definitions by served name."""


async def _direct_answers(places: dict[str, Path]) -> Answers:
    results: list[Any] = []
    definitions: dict[str, Any] = {}
    async with direct(places) as clients:
        for server, tool, arguments in calls(places):
            results.append(as_json(await clients[server].call_tool(tool, arguments)))
        for server, client in clients.items():
            for listed_tool in (await client.list_tools()).tools:
                listed = as_json(listed_tool)
                listed["name"] = served_name(server, listed_tool.name)
                definitions[listed["name"]] = listed
    return results, definitions


async def _served_answers(places: dict[str, Path], client: Client) -> Answers:
    results = [
        as_json(await client.call_tool(served_name(server, tool), arguments))
        for server, tool, arguments in calls(places)
    ]
    definitions = {t.name: as_json(t) for t in (await client.list_tools()).tools}
    return results, definitions


@pytest.fixture(scope="module")
def upstream_answers(places: dict[str, Path]) -> Answers:
    """What the upstreams answer when called directly, once for every test."""
    return anyio.run(_direct_answers, places)


@pytest.fixture(scope="module", params=["stdio", "http"])
def served_answers(
    request: pytest.FixtureRequest, places: dict[str, Path], config: Path
) -> Answers:
    """What a client of ``plughost serve`` gets for the same calls, over each transport."""

    async def ask() -> Answers:
        async with through_plughost(request.param, config, request) as client:
            return await _served_answers(places, client)

    return anyio.run(ask)


def test_upstream_results_reach_a_client_of_plughost_serve_as_the_upstream_sent_them(
    places: dict[str, Path], upstream_answers: Answers, served_answers: Answers
) -> None:
    expected, got = upstream_answers[0], served_answers[0]

    for (server, tool, _), want, have in zip(calls(places), expected, got, strict=True):
        assert have == want, f"{server} {tool}"
    image, annotated, reference, structured, _, _, media = got[:7]
    assert [b["type"] for b in image["content"]] == ["text", "image", "text"]
    assert annotated["content"][0]["annotations"]["audience"] == ["user", "assistant"]
    assert [b["type"] for b in reference["content"]] == ["text", "resource", "text"]
    assert structured["structuredContent"] and len(structured["content"]) == 1
    assert [b["type"] for b in media["content"]] == ["image"]  # no JSON copy as text
    assert got[8]["isError"] is True


def test_upstream_tool_definitions_are_re_served_with_every_field(
    upstream_answers: Answers, served_answers: Answers
) -> None:
    expected, served = upstream_answers[1], served_answers[1]

    for name, listed in expected.items():
        assert served.get(name) == listed, name
    commit = served[served_name("git", "git_commit")]
    assert commit["annotations"]["destructiveHint"] is False
    weather = served[served_name("everything", "get-structured-content")]
    assert weather["outputSchema"]["properties"]["temperature"]["type"] == "number"
    assert weather["execution"] == {"taskSupport": "forbidden"}
