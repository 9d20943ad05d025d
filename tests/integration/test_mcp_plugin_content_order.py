"""A plugin's text and media items reach an MCP client in their order.

A real ``plughost serve`` runs the ``ordered_content`` test plugin in a real
runner; the official MCP client calls it over stdio and streamable HTTP.
"""

from __future__ import annotations

import base64
import shutil
from collections.abc import Iterator
from pathlib import Path

import mcp_types as types
import pytest

from tests.mcp_servers.harness import plughost_client, plughost_serve_http

PLUGIN = Path(__file__).resolve().parent.parent / "plugins" / "ordered_content"


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ordered")
    shutil.copytree(PLUGIN, root / "plugins" / "ordered_content")
    path = root / "serve.toml"
    path.write_text(
        f"[host]\nplugin_dirs = [{str(root / 'plugins')!r}]\n"
        f"data_dir = {str(root / 'data')!r}\ntemp_dir = {str(root / 'temp')!r}\n"
    )
    return path


@pytest.fixture(scope="module", params=["stdio", "http"])
def served(request: pytest.FixtureRequest, config: Path) -> Iterator[tuple[str, str] | None]:
    """None for a ``plughost serve --mcp-stdio`` per client, else an HTTP server's URL and token."""
    if request.param == "stdio":
        yield None
        return
    with plughost_serve_http(config.parent / "token", "--config", str(config)) as http:
        yield http


def _shape(block: types.ContentBlock) -> str:
    if isinstance(block, types.TextContent):
        return f"text:{block.text}"
    if isinstance(block, types.ImageContent | types.AudioContent):
        return f"{block.type}:{block.mime_type}:{len(base64.b64decode(block.data))}"
    if isinstance(block, types.ResourceLink):
        return f"resource_link:{block.uri}"
    return block.type


async def test_a_plugins_text_and_media_items_reach_the_client_in_their_order(
    config: Path, served: tuple[str, str] | None
) -> None:
    async with plughost_client(config, served) as client:
        result = await client.call_tool("illustrate", {})

    assert not result.is_error
    assert [_shape(block) for block in result.content] == [
        "text:Here is the logo:",
        "image:image/png:70",
        "text:The image above is the logo.",
        "audio:audio/wav:16",
        "resource_link:https://example.com/logo",
        "text:That is all.",
    ]
