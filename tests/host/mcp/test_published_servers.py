"""MCPToolProvider against MCP servers published by others, installed from the registries.

``scripts/install_test_mcp_servers.sh`` puts them in ``.venv-mcp-servers``: the
Python ``mcp-server-time`` from PyPI (in its own virtualenv) and the TypeScript
``@modelcontextprotocol/server-everything`` from npm (run with node, and speaking
the handshake-era protocol, so the client's fallback is exercised too). When they
cannot be installed, the tests fail and say why: they never skip.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import AsyncIterator
from typing import Any

import pytest

from plughost.mcp.config import MCPServerConfig
from plughost.mcp.provider import MCPToolProvider
from plughost_sdk.models import ToolInvocation
from tests.mcp_servers.harness import INSTALL_SCRIPT, PUBLISHED

TIME_SERVER = PUBLISHED / "bin" / "mcp-server-time"
EVERYTHING_SERVER = PUBLISHED / "node" / "node_modules" / ".bin" / "mcp-server-everything"


@pytest.fixture(scope="module")
def published_servers() -> None:
    """Install the published servers (a no-op once installed), or fail loudly."""
    try:
        done = subprocess.run(
            ["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=600
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{INSTALL_SCRIPT.name} did not finish within 600 s")
    if done.returncode != 0:
        pytest.fail(
            f"could not install the published MCP servers with {INSTALL_SCRIPT} "
            f"(exit {done.returncode}):\n{done.stderr[-3000:]}"
        )
    missing = [str(path) for path in (TIME_SERVER, EVERYTHING_SERVER) if not path.exists()]
    if missing:
        pytest.fail(f"{INSTALL_SCRIPT.name} succeeded but these are missing: {missing}")
    if shutil.which("node") is None:
        pytest.fail("node is needed to run @modelcontextprotocol/server-everything")


@pytest.fixture
async def provider(published_servers: None) -> AsyncIterator[MCPToolProvider]:
    servers = {
        "time": MCPServerConfig(command=str(TIME_SERVER), args=["--local-timezone", "UTC"]),
        "everything": MCPServerConfig(command="node", args=[str(EVERYTHING_SERVER)]),
    }
    provider = MCPToolProvider(servers)
    try:
        yield provider
    finally:
        await provider.close()


async def call(provider: MCPToolProvider, name: str, **arguments: Any) -> Any:
    return await provider.invoke(ToolInvocation(tool_name=name, arguments=arguments))


async def test_published_servers_list_their_tools_under_prefixed_names(
    provider: MCPToolProvider,
) -> None:
    specs = {spec.name: spec for spec in await provider.list_tools()}
    status = provider.status()

    assert {"mcp_time_get_current_time", "mcp_time_convert_time"} <= set(specs)
    assert {"mcp_everything_echo", "mcp_everything_get-tiny-image"} <= set(specs)
    assert specs["mcp_time_get_current_time"].tool_id == "mcp:time:get_current_time"
    assert specs["mcp_time_get_current_time"].metadata["read_only"] is True
    assert status["time"].protocol_version == "2026-07-28"
    assert status["everything"].protocol_version != "2026-07-28"  # the handshake fallback
    for name in ("time", "everything"):  # each runs sandboxed, with what this kernel grants
        assert "no_new_privs" in status[name].sandbox, status[name]
        assert status[name].network == ()


async def test_time_server_answers_with_text_and_structured_content(
    provider: MCPToolProvider,
) -> None:
    result = await call(provider, "mcp_time_get_current_time", timezone="UTC")

    assert result.success, result.error_message
    assert '"timezone": "UTC"' in result.content
    assert result.structured_content["timezone"] == "UTC"


async def test_everything_server_echoes_and_returns_an_image_as_bytes(
    provider: MCPToolProvider,
) -> None:
    echoed = await call(provider, "mcp_everything_echo", message="hi there")
    image = await call(provider, "mcp_everything_get-tiny-image")

    assert echoed.content == "Echo: hi there"
    assert image.success, image.error_message
    [item] = [item for item in image.content_items if item.content_type == "image"]
    assert item.mime_type == "image/png"
    assert item.data is not None and item.data.startswith(b"\x89PNG")


async def test_everything_server_prompt_and_resource_work_as_tools(
    provider: MCPToolProvider,
) -> None:
    prompt = await call(provider, "mcp_everything_prompt_args-prompt", city="Lyon")
    resource = await call(provider, "mcp_everything_resource_features_md")

    assert prompt.success, prompt.error_message
    assert "Lyon" in prompt.content
    assert resource.success, resource.error_message
    assert resource.content.strip()
