"""SIGTERM and aclose() answer every caller: a result, or a clear shutting_down (real runners)."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from plughost.host import PluginHost
from plughost_sdk.models import ToolExecutionResult
from tests.conftest import TEST_PLUGINS, fast_settings
from tests.serving import serve_mcp_http
from tests.waiting import wait_until

SLOW = TEST_PLUGINS / "hostile_slow"
CALLS = 5


def _started(data_dir: Path) -> int:
    folder = data_dir / "tests.hostile_slow"
    return len(list(folder.glob("started-*"))) if folder.is_dir() else 0


async def _calls_in_flight(
    host: PluginHost, tmp_path: Path, seconds: float
) -> list[asyncio.Task[ToolExecutionResult]]:
    calls = [asyncio.create_task(host.invoke("slow", {"seconds": seconds})) for _ in range(CALLS)]
    await wait_until(lambda: _started(tmp_path / "data") == CALLS, timeout=20, what="calls")
    return calls


async def test_aclose_lets_calls_in_flight_finish_and_refuses_new_ones(tmp_path: Path) -> None:
    host = PluginHost([SLOW], settings=fast_settings(tmp_path, shutdown_drain=10.0))
    await host.start()
    calls = await _calls_in_flight(host, tmp_path, seconds=1.0)
    closing = asyncio.create_task(host.aclose())
    await wait_until(lambda: host._drained, timeout=5, what="the drain to begin")
    late = await host.invoke("slow", {"seconds": 0.1})
    await closing
    results = [await call for call in calls]

    assert [r.content for r in results] == ["slept 1"] * CALLS
    assert late.error_code == "shutting_down"
    assert "shutting down" in late.error_message


async def test_calls_past_the_drain_deadline_get_shutting_down_not_a_crash(tmp_path: Path) -> None:
    host = PluginHost([SLOW], settings=fast_settings(tmp_path, shutdown_drain=0.5))
    await host.start()
    calls = await _calls_in_flight(host, tmp_path, seconds=30.0)
    await host.aclose()
    results = [await call for call in calls]

    assert {r.error_code for r in results} == {"shutting_down"}
    assert all("runner.shutdown_drain" in r.error_message for r in results)


def _plugins(tmp_path: Path) -> Path:
    plugins = tmp_path / "plugins"
    shutil.copytree(SLOW, plugins / "hostile_slow", ignore=shutil.ignore_patterns("__pycache__"))
    return plugins


def _serve(tmp_path: Path, *flags: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "plughost",
        "serve",
        "--plugins",
        str(_plugins(tmp_path)),
        "--no-watch",
        "--log-format",
        "json",
        *flags,
    ]


async def test_sigterm_answers_every_mcp_stdio_call_in_flight(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        *_serve(tmp_path, "--mcp-stdio"),
        cwd=tmp_path,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        _send(process.stdin, 0, "initialize", _INITIALIZE)
        process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        for call in range(1, CALLS + 1):
            _send(process.stdin, call, "tools/call", {"name": "slow", "arguments": {"seconds": 2}})
        await process.stdin.drain()
        data = tmp_path / "data" / "plugins"
        await wait_until(lambda: _started(data) == CALLS, timeout=60, what="calls")
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(30):
            output = await process.stdout.read()
            await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    answers = [json.loads(line) for line in output.splitlines() if line.strip()]
    results = {a["id"]: a.get("result") for a in answers if a.get("id", 0) != 0}

    assert process.returncode == 0
    assert sorted(results) == list(range(1, CALLS + 1))
    texts = [r["content"][0]["text"] for r in results.values() if r and not r.get("isError")]
    assert texts == ["slept 2"] * CALLS


async def test_sigterm_answers_every_mcp_http_call_in_flight(tmp_path: Path) -> None:
    flags = ["--plugins", str(_plugins(tmp_path)), "--no-watch"]
    results: list[Any] = []
    with serve_mcp_http(tmp_path / "token", *flags) as served:
        headers = {"Authorization": f"Bearer {served.token}"}
        async with (
            create_mcp_http_client(headers=headers) as http,
            Client(streamable_http_client(served.url, http_client=http), cache=None) as client,
            anyio.create_task_group() as tg,
        ):

            async def call() -> None:
                results.append(await client.call_tool("slow", {"seconds": 4}))

            for _ in range(CALLS):
                tg.start_soon(call)
            data = tmp_path / "data" / "plugins"
            await wait_until(lambda: _started(data) == CALLS, timeout=60, what="calls")
            served.process.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(served.process.wait, 30)

    assert [r.content[0].text for r in results if not r.is_error] == ["slept 4"] * CALLS
    assert code == 0


_INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "shutdown-test", "version": "1"},
}


def _send(stream: asyncio.StreamWriter, request_id: int, method: str, params: Any) -> None:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    stream.write(json.dumps(message).encode() + b"\n")
