"""The TCP ports a real ``plughost serve`` opens: only those asked for, port 0 announced."""

from __future__ import annotations

import asyncio
import shutil
import signal
from pathlib import Path
from urllib.parse import urlsplit

import psutil
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.conftest import TEST_PLUGINS
from tests.serving import serve_mcp_http, serving


@pytest.fixture
def plugins(tmp_path: Path) -> Path:
    root = tmp_path / "plugins"
    shutil.copytree(TEST_PLUGINS / "echo", root / "echo")
    return root


async def test_serve_without_an_mcp_flag_listens_on_no_tcp_port(
    plugins: Path, tmp_path: Path
) -> None:
    with serving("--plugins", str(plugins), "--no-watch", cwd=tmp_path) as (process, log):
        started = await asyncio.to_thread(log.event, "serve.started")
        listening = [
            c.laddr
            for c in psutil.Process(process.pid).net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN
        ]
        process.send_signal(signal.SIGINT)
        code = await asyncio.to_thread(process.wait, 30)
    output = "".join(log.lines)

    assert [p["plugin_id"] for p in started["plugins"]] == ["tests.echo"]
    assert listening == []
    assert code == 0, output
    assert "serve.mcp_http" not in output


async def test_serve_mcp_http_on_port_0_announces_the_port_it_took_and_serves_there(
    plugins: Path, tmp_path: Path
) -> None:
    args = ["--plugins", str(plugins), "--no-watch"]
    with serve_mcp_http(tmp_path / "mcp-token", *args) as served:
        url, headers = served.url, {"Authorization": f"Bearer {served.token}"}
        async with (
            create_mcp_http_client(headers=headers) as http,
            Client(streamable_http_client(url, http_client=http), cache=None) as client,
        ):
            tools = {tool.name for tool in (await client.list_tools()).tools}

    address = urlsplit(url)
    assert address.hostname == "127.0.0.1" and address.port not in (None, 0)
    assert address.path == "/mcp"
    assert "echo" in tools
