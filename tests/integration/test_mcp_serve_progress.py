"""Progress and cancellation through plughost's MCP server, from the official client to a runner."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client

from plughost.mcp.server import serve_http
from tests.conftest import TEST_PLUGINS, HostFactory
from tests.waiting import wait_until

PROGRESS = TEST_PLUGINS / "progress"


@pytest.fixture
async def served(make_host: HostFactory) -> AsyncIterator[str]:
    """plughost's MCP server over HTTP, in front of a host running the progress plugin."""
    async with make_host([PROGRESS]) as host:
        ready, urls = asyncio.Event(), list[str]()
        serving = asyncio.create_task(
            serve_http(host.tools, port=0, ready=ready, announce=urls.append)
        )
        try:
            async with asyncio.timeout(10):
                await ready.wait()
            yield urls[0]  # the port it took
        finally:
            serving.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await serving


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_plugins_progress_reaches_the_mcp_client_as_notifications(
    served: str, mode: str
) -> None:
    heard: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    async with Client(served, cache=None, mode=mode) as client:
        result = await client.call_tool("count", {"steps": 3}, progress_callback=on_progress)

    assert not result.is_error
    assert heard == [(1, 3, "step 1 of 3"), (2, 3, "step 2 of 3"), (3, 3, "step 3 of 3")]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_cancelled_mcp_request_cancels_the_plugins_handler(
    served: str, mode: str, tmp_path: Path
) -> None:
    marker = tmp_path / "data" / "tests.progress" / "linger.txt"  # the plugin's data dir
    async with Client(served, cache=None, mode=mode) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "linger", {})
            await wait_until(marker.exists, timeout=20, what="the handler started")
            tg.cancel_scope.cancel()
        await wait_until(
            lambda: "cancelled" in marker.read_text(encoding="utf-8"),
            timeout=10,
            what="the plugin's handler was cancelled",
        )
        after = await client.call_tool("count", {"steps": 1})

    assert isinstance(after.content[0], types.TextContent)
    assert after.content[0].text == "counted 1"
