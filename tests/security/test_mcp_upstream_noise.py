"""What an upstream MCP server sends during a call reaches plughost's client as the host allows.

A real ``plughost serve --mcp-stdio`` fronts ``tests/mcp_servers/noisy_server.py``,
a server that writes JSON-RPC by hand: progress that is not a finite number, a
progress message or a log record of 100,000 characters, a logger name with a line
break. The official MCP client is plughost's client; what it receives must be
what a well-behaved server could have sent (the same bounds a plugin's runner
gets), whichever way the call goes (beside both SDK sessions, or through them).
"""

from __future__ import annotations

import json
import math
import sys
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from plughost.mcp.client_relay import MAX_OPEN_REQUESTS
from plughost.mcp.upstream_requests import MAX_RECORD
from tests.mcp_servers.harness import HERE

UPSTREAM = HERE / "noisy_server.py"


@asynccontextmanager
async def served(
    tmp_path: Path, log: list[types.LoggingMessageNotificationParams], sampling: Any = None
) -> AsyncIterator[Client]:
    config = tmp_path / "plughost.toml"
    config.write_text(
        f"[host]\ndata_dir = {json.dumps(str(tmp_path / 'data'))}\n"
        f"[mcp.servers.noisy]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(UPSTREAM))}]\n"
        'protocol = "legacy"\n'
    )
    args = ["-m", "plughost", "serve", "--no-watch", "--config", str(config), "--mcp-stdio"]
    target = StdioServerParameters(command=sys.executable, args=args)

    async def logging(params: types.LoggingMessageNotificationParams) -> None:
        log.append(params)

    with (tmp_path / "serve.log").open("w") as errlog:
        async with Client(
            stdio_client(target, errlog=errlog),
            mode="legacy",
            cache=None,
            logging_callback=logging,
            sampling_callback=sampling,
        ) as client:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # setLevel is deprecated in the newest revision
                await client.set_logging_level("debug")
            yield client


async def test_an_upstreams_progress_and_logs_reach_the_client_bounded_and_before_its_result(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    reports: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        reports.append((done, total, message))

    loud: list[types.LoggingMessageNotificationParams] = []
    async with served(tmp_path, loud) as client:
        result = await client.call_tool("mcp_noisy_odd_progress", {}, progress_callback=progress)
        await client.call_tool("mcp_noisy_loud_log", {})
        (record,) = loud
        many = len(loud)
        await client.call_tool("mcp_noisy_many_logs", {"count": 3})  # then its result, at once

    # Progress: only finite numbers, the message cut.
    assert result.content[0].text == "done"  # type: ignore[union-attr]
    assert reports[-1] == (1.0, 2.0, "half")  # the plain report comes through, last
    assert all(math.isfinite(done) for done, _, _ in reports)
    assert all(total is None or math.isfinite(total) for _, total, _ in reports)
    assert all(len(message or "") <= MAX_RECORD for _, _, message in reports)
    assert len(reports) == 2  # the wide one, cut, and the plain one; the others are dropped
    unreadable = [r for r in caplog.records if "Failed to validate" in r.getMessage()]
    assert unreadable == []  # nothing the client could not read was sent (NaN went as null)
    # A log record: cut, under the server's name, its own logger name on one line and cut.
    assert isinstance(record.data, str) and 0 < len(record.data) <= MAX_RECORD
    assert record.logger is not None and record.logger.startswith("mcp.noisy.")
    assert "\n" not in record.logger and len(record.logger) <= len("mcp.noisy.") + 100
    assert record.level == "warning"
    # Records written right before a result: every one reaches the client, before it.
    assert [str(r.data)[:8] for r in loud[many:]] == [f"{n:08d}" for n in range(3)]


async def test_an_upstreams_names_and_asks_are_held_to_what_plughost_decided(
    tmp_path: Path,
) -> None:
    """Colliding names each run the tool they are shown for; looping asks are bounded.

    Asks are bounded beside the session (the client relay's bound) and through it
    alike. The client answers none until every request is either waiting on it or
    was answered by plughost (the upstream reports how many answers it has had).
    """
    asked, waiting, most, settled = 3 * MAX_OPEN_REQUESTS, 0, 0, 0
    enough = anyio.Event()

    def check() -> None:
        if waiting + settled >= asked:
            enough.set()

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> Any:
        nonlocal waiting, most
        waiting += 1
        most = max(most, waiting)
        check()
        await enough.wait()
        waiting -= 1
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text="4"), model="m"
        )

    async def progress(done: float, total: float | None, message: str | None) -> None:
        nonlocal settled
        settled = int(done)
        check()

    async with served(tmp_path, [], sampling) as client:
        listed = [
            t for t in (await client.list_tools()).tools if "same" in t.name or "twice" in t.name
        ]
        ran = {
            t.name: (await client.call_tool(t.name, {})).content[0].text  # type: ignore[union-attr]
            for t in listed
        }
        with anyio.fail_after(60):
            beside = await client.call_tool(
                "mcp_noisy_ask_many", {"count": asked}, progress_callback=progress
            )
            enough, most, settled = anyio.Event(), 0, 0
            meta = {"plughost.test/route": "session"}  # a call the forwarder leaves to the session
            through = await client.call_tool(
                "mcp_noisy_ask_many", {"count": asked}, progress_callback=progress, meta=meta
            )

    names = [t.name for t in listed]
    assert len(names) == len(set(names)) == 4  # the second ``twice`` is not listed
    assert {t.description for t in listed} == {
        "runs same_mcp_noisy_same",
        "runs same",
        "runs same!",
        "runs twice, listed first",
    }
    for tool in listed:  # a name runs the very tool the client was shown under it
        assert ran[tool.name] == "ran " + (tool.description or "").split()[1].rstrip(",")
    expected = f"answered {MAX_OPEN_REQUESTS}, refused {asked - MAX_OPEN_REQUESTS}"
    assert beside.content[0].text == expected  # type: ignore[union-attr]
    assert through.content[0].text == expected  # type: ignore[union-attr]
    assert most == MAX_OPEN_REQUESTS
