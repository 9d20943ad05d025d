"""Per-call overhead of a trivial tool served over MCP by plughost, next to a plain SDK server.

Both servers run as real subprocesses over stdio and are driven by the official
MCP client, in the same run and interleaved call by call, so machine noise hits
both alike:

- ``plughost``: :func:`plughost.mcp.server.serve_stdio` over a ToolRegistry
  holding one in-process provider with a ``ping`` tool (registry lookup,
  argument checking and result conversion included);
- ``plain``: an ``MCPServer`` from the MCP SDK with the same ``ping`` tool (what
  most SDK-based servers are);
- ``lowlevel``: the SDK's lowlevel ``Server`` with a hand-written handler and no
  validation at all, the floor any server on this SDK pays.

Each protocol era is measured: the 2026-07-28 protocol (what a 2.x client
negotiates) and the handshake-era one (``mode="legacy"``, what most clients in
the wild speak). Writes the ``mcp`` section of docs/benchmarks.md.

Usage: ``.venv/bin/python scripts/bench_mcp.py [--calls N] [--warmup N] [--no-write]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import benchlib

SERVERS = ("lowlevel", "plain", "plughost", "plughost_serve")

PING_PLUGIN = {
    "_manifest.json": json.dumps(
        {
            "manifest_version": 2,
            "id": "bench.ping",
            "version": "1.0.0",
            "name": "ping",
            "author": {"name": "bench"},
        }
    ),
    "plugin.py": (
        "from plughost_sdk import Plugin, Tool\n"
        "from plughost_sdk.types import ToolParameterInfo\n\n"
        "class Ping(Plugin):\n"
        "    @Tool('ping', brief_description='Answer pong', core_tool=True,\n"
        "          parameters=[ToolParameterInfo(name='text', description='anything')])\n"
        "    async def ping(self, text: str, **kwargs):\n"
        "        return 'pong'\n\n"
        "def create_plugin():\n"
        "    return Ping()\n"
    ),
}


def server_params(server: str, plugins: Path) -> Any:
    """How to start each contender: a script mode of this file, or ``plughost serve``."""
    from mcp import StdioServerParameters

    if server == "plughost_serve":
        args = ["-m", "plughost", "serve", "--plugins", str(plugins), "--mcp-stdio"]
        args += ["--no-watch", "--log-format", "json"]
        return StdioServerParameters(command=sys.executable, args=args)
    return StdioServerParameters(command=sys.executable, args=[__file__, f"--serve-{server}"])


PROTOCOLS = ("auto", "legacy")
PROTOCOL_LABELS = {"auto": "2026-07-28", "legacy": "handshake (2025-11-25)"}


# --- the servers (run in child processes) ------------------------------------------------------


def serve_plain() -> None:
    from mcp.server import MCPServer

    server = MCPServer("plain")

    @server.tool()
    def ping(text: str) -> str:
        """Answer pong."""
        return f"pong {text}"

    server.run()


def serve_lowlevel() -> None:
    import mcp_types as types
    from mcp.server.lowlevel.server import Server
    from mcp.server.stdio import stdio_server

    tool = types.Tool(
        name="ping",
        description="Answer pong.",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
    )

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        text = (params.arguments or {}).get("text", "")
        return types.CallToolResult(content=[types.TextContent(text=f"pong {text}")])

    server = Server("lowlevel", on_list_tools=list_tools, on_call_tool=call_tool)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    asyncio.run(run())


def serve_plughost() -> None:
    from plughost.mcp.server import serve_stdio
    from plughost.tools.registry import ToolRegistry
    from plughost_sdk.models import (
        ToolAvailabilityContext,
        ToolExecutionContext,
        ToolExecutionResult,
        ToolInvocation,
        ToolSpec,
    )

    schema = {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    }

    class PingProvider:
        provider_name = "bench"
        provider_type = "builtin"

        async def list_tools(
            self, context: ToolAvailabilityContext | None = None
        ) -> list[ToolSpec]:
            return [ToolSpec(name="ping", description="Answer pong.", parameters_schema=schema)]

        async def invoke(
            self, invocation: ToolInvocation, context: ToolExecutionContext | None = None
        ) -> ToolExecutionResult:
            arguments = invocation.arguments if isinstance(invocation.arguments, dict) else {}
            return ToolExecutionResult(tool_name="ping", content=f"pong {arguments['text']}")

        async def close(self) -> None:
            pass

    registry = ToolRegistry()
    registry.register_provider(PingProvider())
    asyncio.run(serve_stdio(registry))


# --- the measurement ---------------------------------------------------------------------------


async def measure(calls: int, warmup: int) -> dict[tuple[str, str], list[float]]:
    from mcp import Client

    samples: dict[tuple[str, str], list[float]] = {}
    plugins = Path(tempfile.mkdtemp(prefix="plughost-bench-mcp-"))
    (plugins / "ping").mkdir()
    for name, text in PING_PLUGIN.items():
        (plugins / "ping" / name).write_text(text)
    for protocol in PROTOCOLS:
        async with AsyncExitStack() as stack:
            clients: dict[str, Any] = {}
            for server in SERVERS:
                params = server_params(server, plugins)
                clients[server] = await stack.enter_async_context(
                    Client(params, mode=protocol, cache=None)
                )
            for server in SERVERS:
                for _ in range(warmup):
                    await clients[server].call_tool("ping", {"text": "warm"})
                samples[(server, protocol)] = []
            for index in range(calls):
                # Alternate which server goes first, so neither always follows the other.
                order = SERVERS if index % 2 == 0 else tuple(reversed(SERVERS))
                for server in order:
                    started = time.perf_counter()
                    result = await clients[server].call_tool("ping", {"text": "x"})
                    samples[(server, protocol)].append(time.perf_counter() - started)
                    if result.is_error:
                        raise SystemExit(f"{server} answered with an error: {result.content}")
    return samples


def report(samples: dict[tuple[str, str], list[float]], calls: int, warmup: int) -> str:
    lines = [
        "## MCP: per-call overhead of plughost's MCP server",
        "",
        "A trivial `ping` tool called through the official MCP client over stdio, served by",
        "`plughost serve --mcp-stdio` from a real plugin in its own runner process",
        "(`plughost_serve`), by plughost's MCP server over an in-process provider (`plughost`),",
        "by a plain SDK `MCPServer` and by the SDK's lowlevel `Server` with no validation (the",
        "floor), all in real subprocesses and interleaved call by call.",
        f"{calls} calls each after {warmup} warm-up calls; times in milliseconds.",
        "",
        "Command: `.venv/bin/python scripts/bench_mcp.py`",
        "",
        "| protocol | server | p50 | p99 | mean |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for protocol in PROTOCOLS:
        for server in SERVERS:
            values = samples[(server, protocol)]
            lines.append(
                f"| {PROTOCOL_LABELS[protocol]} | {server} | {ms(benchlib.median(values))} | "
                f"{ms(benchlib.percentile(values, 99))} | {ms(sum(values) / len(values))} |"
            )
    lines.append("")
    for protocol in PROTOCOLS:
        for contender in ("plughost_serve", "plughost"):
            ours = benchlib.median(samples[(contender, protocol)])
            ratios = []
            for baseline in ("plain", "lowlevel"):
                theirs = benchlib.median(samples[(baseline, protocol)])
                ratios.append(f"{baseline} **{ours / theirs:.2f}x** ({ms(ours - theirs)} ms)")
            lines.append(
                f"- {PROTOCOL_LABELS[protocol]}: {contender} p50 relative to "
                + ", to ".join(ratios)
            )
    lines += ["", *WHERE_THE_TIME_GOES, "", benchlib.load_line(), benchlib.machine_line()]
    return "\n".join(lines)


WHERE_THE_TIME_GOES = [
    "### Where the time goes",
    "",
    "Profile: `py-spy record -r 200 --nonblocking -f raw -p <pid of plughost serve>` while",
    "the official client calls `ping` back to back over stdio (handshake era; a loaded",
    "machine, so shares are indicative):",
    "",
    "- Before: the SDK's stdio transport read each line of stdin, and wrote and flushed",
    "  each message to stdout, in an anyio worker thread: three thread hand-offs per call,",
    "  each waking the event loop through its self-pipe. plughost now reads and writes",
    "  stdio pipes from the event loop (`plughost.mcp.stdio_server`; a terminal or a file",
    "  still goes through the SDK's transport). No check was dropped.",
    "- After, of the serve process's main-thread samples that are not idle: 32 % are the",
    "  `write` to the client's pipe and 13 % the ZeroMQ `send` to the runner, the two",
    "  system calls where a call passes to another process (on a busy 2-core machine the",
    "  woken process often takes the CPU there); the registry, provider and runner",
    "  supervisor about 8 %, the SDK's request dispatch and plughost's handler and result",
    "  conversion about 14 %.",
    "- What remains over the plain server is the runner hop: `plughost_serve` minus",
    "  `plughost` (the same MCP server with the tool in-process) is 0.7 to 1.0 ms in the",
    "  same run, two ZeroMQ messages between processes and the runner's own work; the",
    "  faster stdio transport pays for most of it.",
    "",
    "Before and after that change, `--calls 500`, the two builds alternating, p50 of",
    "`plughost_serve` relative to `plain` measured in the same run (a shared, loaded",
    "machine): 2026-07-28 1.20x and 1.12x before, 1.04x and 0.96x after; handshake era",
    "1.25x and 1.16x before, 1.00x and 0.98x after. The last quiet-machine figures before",
    "it were 1.27x and 1.30x.",
]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=1000, help="measured calls per server")
    parser.add_argument("--warmup", type=int, default=100, help="unmeasured calls first")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--serve-plain", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-plughost", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-lowlevel", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_plain:
        serve_plain()
        return
    if args.serve_plughost:
        serve_plughost()
        return
    if args.serve_lowlevel:
        serve_lowlevel()
        return
    if args.calls < 500:
        parser.error("--calls must be at least 500 for a meaningful p99")
    samples = asyncio.run(measure(args.calls, args.warmup))
    markdown = report(samples, args.calls, args.warmup)
    print(markdown)
    if not args.no_write:
        benchlib.write_section("mcp", markdown)


if __name__ == "__main__":
    main()
