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

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from plughost.mcp.upstream_requests import MAX_RECORD
from tests.mcp_servers.harness import HERE

UPSTREAM = HERE / "noisy_server.py"


@asynccontextmanager
async def served(
    tmp_path: Path, log: list[types.LoggingMessageNotificationParams]
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
            stdio_client(target, errlog=errlog), mode="legacy", cache=None, logging_callback=logging
        ) as client:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # setLevel is deprecated in the newest revision
                await client.set_logging_level("debug")
            yield client


async def test_an_upstreams_progress_reaches_the_client_only_finite_and_cut(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    reports: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        reports.append((done, total, message))

    async with served(tmp_path, []) as client:
        result = await client.call_tool("mcp_noisy_odd_progress", {}, progress_callback=progress)

    assert result.content[0].text == "done"  # type: ignore[union-attr]
    assert reports[-1] == (1.0, 2.0, "half")  # the plain report comes through, last
    assert all(math.isfinite(done) for done, _, _ in reports)
    assert all(total is None or math.isfinite(total) for _, total, _ in reports)
    assert all(len(message or "") <= MAX_RECORD for _, _, message in reports)
    assert len(reports) == 2  # the wide one, cut, and the plain one; the others are dropped
    unreadable = [r for r in caplog.records if "Failed to validate" in r.getMessage()]
    assert unreadable == []  # nothing the client could not read was sent (NaN went as null)


async def test_an_upstreams_log_record_reaches_the_client_cut_and_under_its_own_name(
    tmp_path: Path,
) -> None:
    log: list[types.LoggingMessageNotificationParams] = []
    async with served(tmp_path, log) as client:
        result = await client.call_tool("mcp_noisy_loud_log", {})

    assert result.content[0].text == "done"  # type: ignore[union-attr]
    (record,) = log
    assert isinstance(record.data, str) and 0 < len(record.data) <= MAX_RECORD
    assert record.logger is not None and record.logger.startswith("mcp.noisy.")
    assert "\n" not in record.logger and len(record.logger) <= len("mcp.noisy.") + 100
    assert record.level == "warning"


async def test_an_upstreams_log_records_written_before_its_result_all_reach_the_client_first(
    tmp_path: Path,
) -> None:
    count = 3
    log: list[types.LoggingMessageNotificationParams] = []
    async with served(tmp_path, log) as client:
        await client.call_tool("mcp_noisy_many_logs", {"count": count})

    assert [str(r.data)[:8] for r in log] == [f"{n:08d}" for n in range(count)]


async def test_an_upstreams_colliding_names_each_run_the_tool_they_describe(tmp_path: Path) -> None:
    async with served(tmp_path, []) as client:
        listed = [
            t for t in (await client.list_tools()).tools if "same" in t.name or "twice" in t.name
        ]
        ran = {
            t.name: (await client.call_tool(t.name, {})).content[0].text  # type: ignore[union-attr]
            for t in listed
        }

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
