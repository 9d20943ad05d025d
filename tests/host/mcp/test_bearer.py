"""The MCP HTTP bearer token: kept private on disk, and required of every request."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared._httpx_utils import create_mcp_http_client

from plughost.mcp.bearer import load_or_create_token, require_bearer
from plughost.mcp.server import serve_http
from plughost.tools.registry import ToolRegistry
from tests.mcp_servers.harness import free_port


def test_a_missing_token_file_is_created_private_with_a_long_random_token(tmp_path: Path) -> None:
    path = tmp_path / "mcp-token"

    token, created = load_or_create_token(path)
    again, created_again = load_or_create_token(path)

    assert created and not created_again
    assert again == token and len(token) >= 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_an_operators_token_file_is_used_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "mine"
    path.write_text("operator-chosen-token-0123456789\n")
    path.chmod(0o600)

    assert load_or_create_token(path) == ("operator-chosen-token-0123456789", False)


def test_a_token_file_other_users_can_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "mcp-token"
    path.write_text("operator-chosen-token-0123456789\n")
    os.chmod(path, 0o644)

    with pytest.raises(ValueError, match="chmod 600"):
        load_or_create_token(path)


def test_a_short_token_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "mcp-token"
    path.write_text("short\n")
    path.chmod(0o600)

    with pytest.raises(ValueError, match="shorter than"):
        load_or_create_token(path)


async def test_serve_http_with_a_token_refuses_requests_without_it() -> None:
    port = free_port()
    ready = asyncio.Event()
    url = f"http://127.0.0.1:{port}/mcp"
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: serve_http(ToolRegistry(), port=port, ready=ready, bearer_token="t" * 32)
        )
        with anyio.fail_after(10):
            await ready.wait()
        async with create_mcp_http_client() as http:
            missing = await http.post(url, json=ping)
            wrong = await http.post(url, json=ping, headers={"Authorization": "Bearer " + "u" * 32})
            right = await http.post(url, json=ping, headers={"Authorization": "Bearer " + "t" * 32})
        tg.cancel_scope.cancel()

    assert missing.status_code == wrong.status_code == 401
    assert right.status_code != 401


async def test_a_websocket_handshake_without_the_token_never_reaches_the_app() -> None:
    """uvicorn serves WebSockets where a WebSocket library is installed: they are guarded too."""
    reached: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["type"])

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    guarded = require_bearer(app, "t" * 32)
    right = [(b"authorization", b"Bearer " + b"t" * 32)]
    await guarded({"type": "websocket", "path": "/mcp", "headers": []}, receive, send)
    await guarded({"type": "websocket", "path": "/mcp", "headers": right}, receive, send)
    await guarded({"type": "lifespan"}, receive, send)

    assert sent == [{"type": "websocket.close", "code": 1008}]  # refused before accepting
    assert reached == ["websocket", "lifespan"]  # with the token, and the server's own events
