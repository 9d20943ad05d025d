"""plughost's MCP server under its limits: tools/list pages, idle HTTP sessions, the session cap."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client, MCPError

from plughost.mcp.pagination import page_of
from plughost.mcp.server import serve_http
from plughost.tools.registry import ToolRegistry
from tests.mcp_servers.harness import free_port
from tests.mcp_servers.plughost_launcher import DemoProvider
from tests.serving import INITIALIZE as _INITIALIZE
from tests.waiting import wait_until

_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@asynccontextmanager
async def _serving(**options: Any) -> AsyncIterator[str]:
    registry = ToolRegistry()
    registry.register_provider(DemoProvider())
    port = free_port()
    ready = asyncio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_http(registry, port=port, ready=ready, **options))
        with anyio.fail_after(10):
            await ready.wait()
        yield f"http://127.0.0.1:{port}/mcp"
        tg.cancel_scope.cancel()


def test_pages_cover_the_list_once_and_in_order() -> None:
    items = list(range(7))
    seen, cursor = [], None
    while True:
        page, cursor = page_of(items, cursor, 3)
        seen += page
        if cursor is None:
            break

    assert seen == items


@pytest.mark.parametrize("cursor", ["", "not base64!", "cGx1Z2hvc3Q6LTE=", "b3RoZXI6Mw=="])
def test_a_cursor_the_server_did_not_send_is_invalid_params(cursor: str) -> None:
    with pytest.raises(MCPError) as caught:
        page_of([1, 2, 3], cursor, 2)

    assert caught.value.code == types.INVALID_PARAMS


async def test_tools_list_is_paged_and_an_invalid_cursor_gets_error_32602() -> None:
    async with (
        _serving(page_size=2) as url,
        Client(url, cache=None, mode="legacy") as client,
    ):
        first = await client.list_tools()
        names = [tool.name for tool in first.tools]
        cursor = first.next_cursor
        while cursor is not None:
            page = await client.list_tools(cursor=cursor)
            names += [tool.name for tool in page.tools]
            cursor = page.next_cursor
        with pytest.raises(MCPError) as caught:
            await client.list_tools(cursor="bogus")

    assert len(first.tools) == 2
    assert first.next_cursor is not None
    assert len(names) == len(set(names)) > 2
    assert {"greet", "pixel"} <= set(names)
    assert caught.value.code == types.INVALID_PARAMS
    assert "cursor" in caught.value.message


async def test_an_idle_session_expires_and_the_cap_refuses_sessions_past_it() -> None:
    async with (
        _serving(session_idle_timeout=0.5, max_sessions=1) as url,
        httpx2.AsyncClient(headers=_HEADERS, timeout=10) as http,
    ):
        opened = await http.post(url, json=_INITIALIZE)
        session = opened.headers["mcp-session-id"]
        refused = await http.post(url, json=_INITIALIZE)

        async def another_session_opens() -> bool:
            return (await http.post(url, json=_INITIALIZE)).status_code == 200

        # The only slot frees itself once the first session has idled out.
        await wait_until(another_session_opens, timeout=10, interval=0.1, what="a free slot")
        stale = await http.post(
            url, json={**_INITIALIZE, "id": 2}, headers={"mcp-session-id": session}
        )

    assert opened.status_code == 200
    assert refused.status_code == 503
    assert stale.status_code == 404
