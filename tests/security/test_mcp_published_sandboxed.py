"""Published MCP servers, sandboxed by default, with the grants a user would naturally give.

From the registries (``scripts/install_test_mcp_servers.sh``): the filesystem
server on one root directory, the memory server with its file, the git server
on one repository, and the fetch server with a network grant to a stub host
of the tests' own. Each works; what it was not given stays out of reach.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from plughost.mcp.config import MCPServerConfig
from plughost.mcp.provider import MCPToolProvider
from plughost_sdk.models import ToolExecutionResult, ToolInvocation
from tests.mcp_servers.harness import PUBLISHED
from tests.security.stub_network import StubNetwork, stub_network

NODE_BIN = PUBLISHED / "node" / "node_modules" / ".bin"
shared = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def stubs() -> Iterator[StubNetwork]:
    with stub_network() as network:
        yield network


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("published")
    found = {name: root / name for name in ("notes", "memory", "repo", "secrets", "data")}
    for path in found.values():
        path.mkdir()
    (found["secrets"] / "key").write_text("sk-not-for-servers")
    repo = found["repo"]
    for command in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "config", "user.email", "tests@example.com"],
        ["git", "config", "user.name", "tests"],
    ):
        subprocess.run(command, cwd=repo, check=True)
    (repo / "README.md").write_text("hello\n")
    subprocess.run(["git", "add", "README.md"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "first"], cwd=repo, check=True)
    return found


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def provider(places: dict[str, Path], stubs: StubNetwork) -> AsyncIterator[MCPToolProvider]:
    data = places["data"]
    servers = {
        "files": MCPServerConfig(
            command=str(NODE_BIN / "mcp-server-filesystem"),
            args=[str(places["notes"])],
            data_dir=str(data / "files"),
        ),
        "memory": MCPServerConfig(
            command=str(NODE_BIN / "mcp-server-memory"),
            env={"MEMORY_FILE_PATH": str(places["memory"] / "memory.jsonl")},
            write=[str(places["memory"])],
            data_dir=str(data / "memory"),
        ),
        "git": MCPServerConfig(
            command=str(PUBLISHED / "bin" / "mcp-server-git"),
            args=["--repository", str(places["repo"])],
            data_dir=str(data / "git"),
        ),
        "fetch": MCPServerConfig(
            command=str(PUBLISHED / "bin" / "mcp-server-fetch"),
            args=["--ignore-robots-txt", "--allow-private-ips"],  # the stub host is private
            network=[f"{stubs.granted}:80"],
            data_dir=str(data / "fetch"),
        ),
    }
    provider = MCPToolProvider(servers)
    try:
        await provider.list_tools()
        yield provider
    finally:
        await provider.close()


async def _call(provider: MCPToolProvider, tool: str, **arguments: Any) -> ToolExecutionResult:
    return await provider.invoke(ToolInvocation(tool_name=tool, arguments=arguments))


@shared
async def test_every_published_server_starts_sandboxed(provider: MCPToolProvider) -> None:
    status = provider.status()

    for name in ("files", "memory", "git", "fetch"):
        assert status[name].state.value == "connected", status[name]
        assert {"no_new_privs", "landlock", "seccomp"} <= set(status[name].sandbox), status[name]


@shared
async def test_the_filesystem_server_writes_its_root_and_reads_nothing_else(
    provider: MCPToolProvider, places: dict[str, Path]
) -> None:
    note = places["notes"] / "todo.md"
    written = await _call(provider, "mcp_files_write_file", path=str(note), content="- milk")
    secret = await _call(provider, "mcp_files_read_text_file", path=str(places["secrets"] / "key"))

    assert written.success, written.error_message
    assert note.read_text() == "- milk"
    assert "sk-not-for-servers" not in f"{secret.content} {secret.error_message}"


@shared
async def test_the_memory_server_keeps_its_graph_in_the_file_it_was_given(
    provider: MCPToolProvider, places: dict[str, Path]
) -> None:
    entity = {"name": "plughost", "entityType": "project", "observations": ["sandboxed"]}
    made = await _call(provider, "mcp_memory_create_entities", entities=[entity])

    assert made.success, made.error_message
    saved = (places["memory"] / "memory.jsonl").read_text()
    assert json.loads(saved.splitlines()[0])["name"] == "plughost"


@shared
async def test_the_git_server_commits_to_its_one_repository(
    provider: MCPToolProvider, places: dict[str, Path]
) -> None:
    repo = places["repo"]
    (repo / "notes.txt").write_text("sandboxed\n")

    added = await _call(provider, "mcp_git_git_add", repo_path=str(repo), files=["notes.txt"])
    committed = await _call(provider, "mcp_git_git_commit", repo_path=str(repo), message="notes")
    log = subprocess.run(
        ["git", "log", "--oneline"], cwd=repo, capture_output=True, text=True, check=True
    )

    assert added.success and committed.success, committed.error_message
    assert "notes" in log.stdout.splitlines()[0]


@shared
async def test_the_fetch_server_reaches_its_granted_host_and_no_other(
    provider: MCPToolProvider, stubs: StubNetwork
) -> None:
    granted = await _call(provider, "mcp_fetch_fetch", url=f"http://{stubs.granted}/page")
    other = await _call(provider, "mcp_fetch_fetch", url=f"http://{stubs.other}/page")

    assert granted.success, granted.error_message
    assert stubs.granted in str(granted.content)
    assert not other.success or stubs.other not in str(other.content)
    assert provider.status()["fetch"].denied >= 1


async def test_a_server_started_through_npx_runs_sandboxed(tmp_path: Path) -> None:
    """npx finds the installed package offline and execs node under the same sandbox."""
    config = MCPServerConfig(
        command="npx",
        args=["--no-install", "mcp-server-memory"],
        cwd=str(PUBLISHED / "node"),
        env={"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")},
        write=[str(tmp_path)],
        data_dir=str(tmp_path / "data"),
        connect_timeout=30,
    )
    provider = MCPToolProvider({"memory": config})
    try:
        tools = await provider.list_tools()
        status = provider.status()["memory"]
    finally:
        await provider.close()

    assert "mcp_memory_read_graph" in {t.name for t in tools}
    assert {"pid_namespace", "landlock", "seccomp"} <= set(status.sandbox), status
