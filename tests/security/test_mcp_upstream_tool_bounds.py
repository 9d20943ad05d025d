"""An upstream MCP server's tool definitions are held to the bounds a plugin's are.

``tests/mcp_servers/oversize_tools_server.py`` lists, with ``OVERSIZE=1``, a tool
with an 8.8 MB description, one with a 300 KB input schema, one with a long
title and one with a heavy ``_meta`` beside two ordinary tools. Each oversize
tool is refused alone, with a warning and a status line naming the server, the
tool and the bound (also in the console's row of the server); the ordinary
ones are served. Through a real
``plughost serve``, listing and ``tool_search`` take about what they take when
the server lists the ordinary tools only (measured in the same test).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from plughost.host import PluginHost
from plughost.mcp.config import MCPServerConfig
from plughost.mcp.provider import MCPToolProvider
from plughost.mcp.tool_bounds import MAX_DEFINITION_BYTES, bounded_tools
from plughost.tools.declaration_limits import MAX_DESCRIPTION, MAX_SCHEMA_BYTES, MAX_TOOLS
from plughost.web.snapshot import mcp_servers
from tests.mcp_servers.harness import HERE

UPSTREAM = HERE / "oversize_tools_server.py"
OVERSIZE = {"long_description", "wide_schema", "long_title", "heavy_meta"}


def _server(oversize: bool) -> MCPServerConfig:
    env = {"OVERSIZE": "1" if oversize else "0"}
    return MCPServerConfig(command=sys.executable, args=[str(UPSTREAM)], env=env)


async def test_oversize_tools_are_refused_alone_with_a_reason_in_the_log_and_the_status(
    caplog: pytest.LogCaptureFixture,
) -> None:
    provider = MCPToolProvider({"over": _server(oversize=True)})
    host = PluginHost([])
    host.tools.register_provider(provider)
    try:
        specs = await provider.list_tools()
        status = provider.status()["over"]
        refused = status.refused
        (row,) = mcp_servers(host)  # what the console shows
    finally:
        await host.tools.close()
    assert row["refused"] == list(refused)
    assert status.tools == len(specs) == 2  # only what clients can use is counted
    assert {spec.metadata["original_name"] for spec in specs} == {"lookup", "echo"}
    reasons = dict(line.split(" refused: ", 1) for line in refused)
    assert reasons["tool 'long_description'"] == (
        f"its description is 8,800,009 characters, over the limit of {MAX_DESCRIPTION:,} "
        "(a model reads all of it on every turn)"
    )
    assert (
        f"input schema is 338,924 bytes of JSON, over the limit of {MAX_SCHEMA_BYTES:,}"
        in (reasons["tool 'wide_schema'"])
    )
    assert "its title is 20,000 characters" in reasons["tool 'long_title'"]
    assert f"over the limit of {MAX_DEFINITION_BYTES:,}" in reasons["tool 'heavy_meta'"]
    warned = [r.getMessage() for r in caplog.records if r.name == "plughost.mcp.tool_bounds"]
    assert len(warned) == len(OVERSIZE)
    assert all(m.startswith("mcp server tool over a bound server=over tool '") for m in warned)


async def test_a_servers_tool_count_is_what_its_clients_can_use_when_enabled_tools_picks() -> None:
    config = _server(oversize=True).model_copy(update={"enabled_tools": ["lookup", "wide_schema"]})
    provider = MCPToolProvider({"over": config})
    try:
        specs, status = await provider.list_tools(), provider.status()["over"]
    finally:
        await provider.close()
    assert [spec.metadata["original_name"] for spec in specs] == ["lookup"]
    assert [line.split(" refused: ")[0] for line in status.refused] == ["tool 'wide_schema'"]
    assert status.tools == 1  # neither the tools left out nor the one refused


@pytest.mark.parametrize(
    ("field", "tool"),
    [
        ("name", types.Tool(name="n" * (MAX_DESCRIPTION + 1), input_schema={})),
        (
            "output schema",
            types.Tool(name="out", input_schema={}, output_schema={"x": "y" * MAX_SCHEMA_BYTES}),
        ),
        (
            "annotations title",
            types.Tool(
                name="hint",
                input_schema={},
                annotations=types.ToolAnnotations(title="t" * (MAX_DESCRIPTION + 1)),
            ),
        ),
    ],
)
def test_a_long_name_output_schema_or_annotation_title_is_refused_too(
    field: str, tool: types.Tool
) -> None:
    ok = types.Tool(name="ok", input_schema={})
    kept, (reason,) = bounded_tools("s", [tool, ok])
    assert kept == [ok]
    assert f"refused: its {field} is " in reason


def test_a_server_listing_more_tools_than_a_plugin_may_keeps_the_first_ones() -> None:
    schema = {"type": "object"}
    tools = [types.Tool(name=f"t{n}", input_schema=schema) for n in range(MAX_TOOLS + 3)]
    kept, refused = bounded_tools("many", tools)
    assert [t.name for t in kept] == [f"t{n}" for n in range(MAX_TOOLS)]
    assert refused == (
        f"3 tools refused: the server lists {MAX_TOOLS + 3}, over the limit of "
        f"{MAX_TOOLS} per server",
    )


@asynccontextmanager
async def _served(tmp_path: Path, oversize: bool) -> AsyncIterator[Client]:
    folder = tmp_path / ("oversize" if oversize else "plain")
    folder.mkdir()
    config = folder / "plughost.toml"
    config.write_text(
        f"[host]\ndata_dir = {json.dumps(str(folder / 'data' / 'plugins'))}\n"
        f"[mcp.servers.over]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(UPSTREAM))}]\n"
        f'env = {{ OVERSIZE = "{int(oversize)}" }}\n'
    )
    args = ["-m", "plughost", "serve", "--no-watch", "--config", str(config), "--mcp-stdio"]
    target = StdioServerParameters(command=sys.executable, args=args, cwd=folder)
    with (folder / "serve.log").open("w") as errlog:
        async with Client(stdio_client(target, errlog=errlog), mode="legacy") as client:
            yield client


async def _timings(client: Client) -> tuple[float, float, list[types.Tool]]:
    """Median seconds of one tools/list and of one tool_search, over seven of each."""
    lists, searches = [], []
    for _ in range(7):
        start = time.perf_counter()
        listed = await client.list_tools()
        lists.append(time.perf_counter() - start)
        start = time.perf_counter()
        found = await client.call_tool("tool_search", {"query": "glossary word"})
        searches.append(time.perf_counter() - start)
        assert not found.is_error, found
    return statistics.median(lists), statistics.median(searches), listed.tools


async def test_through_serve_an_oversize_tool_leaves_listing_and_search_as_fast_as_without(
    tmp_path: Path,
) -> None:
    async with _served(tmp_path, oversize=False) as client:
        plain_list, plain_search, plain = await _timings(client)
    async with _served(tmp_path, oversize=True) as client:
        over_list, over_search, listed = await _timings(client)
        found = await client.call_tool("mcp_over_lookup", {"word": "bound"})
    # Before the bounds, the 8.8 MB description made each of these take seconds.
    assert over_list < 10 * plain_list, (over_list, plain_list)
    assert over_search < 10 * plain_search, (over_search, plain_search)
    assert [t.name for t in listed] == [t.name for t in plain]
    assert not any(name in t.name for t in listed for name in OVERSIZE)
    assert found.content == [types.TextContent(text="found bound")]
    log = (tmp_path / "oversize" / "serve.log").read_text()
    assert "server=over tool 'long_description' refused: its description is" in log
