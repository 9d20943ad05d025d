"""The official MCP client against a real ``plughost serve`` process over stdio and HTTP."""

from __future__ import annotations

import base64
import shutil
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ToolsListChanged
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.conftest import EXAMPLES
from tests.serving import serve_mcp_http


def _copy_examples(folder: Path) -> Path:
    root = folder / "plugins"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns("__pycache__", "README.md"))
    # BM25 alone: an embedding model loading in a worker thread would hold serve's
    # exit until it had loaded, and no test here ranks a search.
    (folder / "serve.toml").write_text('[search]\nsemantic = "off"\n')
    return root


@pytest.fixture
def plugins(tmp_path: Path) -> Path:
    """A private copy of the examples, so the test can edit a plugin."""
    return _copy_examples(tmp_path)


@pytest.fixture(scope="module")
def unedited_plugins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the examples that no test edits, for the tests that only list and call."""
    return _copy_examples(tmp_path_factory.mktemp("unedited"))


def serve_args(plugins: Path, *extra: str) -> list[str]:
    config = plugins.parent / "serve.toml"
    return [
        *("-m", "plughost", "serve", "--config", str(config), "--plugins", str(plugins)),
        *("--log-format", "json", *extra),
    ]


def _serve_http(plugins: Path) -> Iterator[tuple[str, str]]:
    """``plughost serve --mcp-http`` on a port of its own: its URL and the token it generated."""
    config = ["--config", str(plugins.parent / "serve.toml"), "--plugins", str(plugins)]
    with serve_mcp_http(plugins.parent / "mcp-token", *config) as served:
        yield served.url, served.token


@pytest.fixture
def http_server(plugins: Path) -> Iterator[tuple[str, str]]:
    """A serve of the test's own copy, which the test may edit (and so reload)."""
    yield from _serve_http(plugins)


@pytest.fixture(scope="module")
def unedited_http_server(unedited_plugins: Path) -> Iterator[tuple[str, str]]:
    """One serve of ``unedited_plugins`` for the module: each test opens its own session."""
    yield from _serve_http(unedited_plugins)


@asynccontextmanager
async def connect(
    transport: str, plugins: Path, request: pytest.FixtureRequest, http: str = "http_server"
) -> AsyncIterator[Client]:
    if transport == "stdio":
        target = StdioServerParameters(
            command=sys.executable, args=serve_args(plugins, "--mcp-stdio"), cwd=plugins.parent
        )
        async with Client(target, cache=None) as client:
            yield client
        return
    url, token = request.getfixturevalue(http)
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as client,
    ):
        yield client


async def test_plughost_serve_answers_mcp_http_requests_without_its_token_with_401(
    unedited_http_server: tuple[str, str],
) -> None:
    url, token = unedited_http_server
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    async with create_mcp_http_client() as http:
        missing = await http.post(url, json=body)
        wrong = await http.post(url, json=body, headers={"Authorization": "Bearer not-it"})
        right = await http.post(url, json=body, headers={"Authorization": f"Bearer {token}"})

    assert missing.status_code == wrong.status_code == 401
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert right.status_code != 401


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_an_mcp_client_lists_and_calls_plugin_tools_through_plughost_serve(
    transport: str, unedited_plugins: Path, request: pytest.FixtureRequest
) -> None:
    async with connect(transport, unedited_plugins, request, "unedited_http_server") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        weather = await client.call_tool("get_weather", {"city": "Tokyo"})
        swatch = await client.call_tool(
            "render_swatch", {"color": "#ff0000", "width": 4, "height": 2}
        )
        bad = await client.call_tool("get_weather", {"cty": "Tokyo"})

    assert {"get_weather", "render_swatch", "search_web", "tool_search"} <= set(tools)
    assert "Parameter details:" in (tools["search_web"].description or "")
    assert tools["get_weather"].input_schema["required"] == ["city"]
    assert not weather.is_error
    assert "Tokyo" in weather.content[0].text  # type: ignore[union-attr]
    images = [block for block in swatch.content if isinstance(block, types.ImageContent)]
    assert len(images) == 1
    assert images[0].mime_type == "image/png"
    assert base64.b64decode(images[0].data).startswith(b"\x89PNG")
    assert bad.is_error
    assert "did you mean 'city'" in bad.content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_an_mcp_client_hears_list_changed_after_a_hot_reload(
    transport: str, plugins: Path, request: pytest.FixtureRequest
) -> None:
    plugin = plugins / "unit_converter" / "plugin.py"
    source = plugin.read_text()
    async with connect(transport, plugins, request) as client:
        before = {tool.name for tool in (await client.list_tools()).tools}
        async with client.listen(tools_list_changed=True) as changes:
            plugin.write_text(source.replace('"unit_convert"', '"convert_units"'))
            with anyio.fail_after(60):
                async for event in changes:
                    assert isinstance(event, ToolsListChanged)
                    names = {tool.name for tool in (await client.list_tools()).tools}
                    if "convert_units" in names:
                        break
        converted = await client.call_tool(
            "convert_units", {"value": 1, "from_unit": "km", "to_unit": "m"}
        )

    assert "unit_convert" in before
    assert "unit_convert" not in names
    assert not converted.is_error, converted.content
