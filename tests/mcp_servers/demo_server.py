"""A small MCP server written with the official SDK (``MCPServer``), for the provider tests.

Run as ``python demo_server.py stdio``, ``python demo_server.py http PORT`` (streamable
HTTP at ``/mcp``) or ``python demo_server.py sse PORT`` (SSE at ``/sse``).

Tools: ``echo``, ``add`` (read-only), ``pixel`` (an image), ``fail`` (an is_error
result), ``sleep``, ``whoami`` (the server's pid), two awkwardly named ones (too long,
and ``ns.lookup``) and ``add_tool`` (adds a tool and announces the change on both
protocol eras), ``log_then_answer`` (logs to the client). One resource, one prompt.
"""

from __future__ import annotations

import json
import os
import sys

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import ToolAnnotations

PIXEL_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c63f8cfc0f01f00050001ff89993d1d0000000049454e44ae426082"
)

server = MCPServer("demo")


@server.tool()
def echo(text: str) -> str:
    """Repeat the text."""
    return f"echo: {text}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def pixel() -> Image:
    """Return a 1x1 PNG image."""
    return Image(data=PIXEL_PNG, format="png")


@server.tool()
def fail(reason: str = "it went wrong") -> str:
    """Always fail, with the given reason."""
    raise ToolError(reason)


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleep, then answer."""
    await anyio.sleep(seconds)
    return "slept"


@server.tool()
def whoami() -> str:
    """The server's process id."""
    return str(os.getpid())


@server.tool()
def conversation(ctx: Context) -> str:
    """The plughost conversation fields this call carried in its _meta."""
    meta = ctx.request_context.meta or {}
    fields = {k: v for k, v in meta.items() if k.startswith("plughost/")}
    return json.dumps(fields, sort_keys=True)


LONG_NAME = "report_the_quarterly_figures_for_every_region_and_every_product_line"


@server.tool(name=LONG_NAME)
def long_named() -> str:
    """A tool whose name is too long for model APIs once prefixed."""
    return "long answer"


@server.tool(name="ns.lookup")
def dotted(key: str) -> str:
    """A tool whose name has a character model APIs refuse."""
    return f"value of {key}"


@server.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Add a tool called ``name`` and tell clients the tool list changed."""
    server.add_tool(lambda: f"I am {name}", name=name, description=f"Added at run time: {name}")
    await ctx.notify_tools_changed()  # 2026-era clients, on their listen stream
    await ctx.request_context.session.send_tool_list_changed()  # handshake-era clients
    return f"added {name}"


@server.tool()
async def log_then_answer(text: str, ctx: Context) -> str:
    """Log the text at info level, then answer."""
    await ctx.info(f"upstream log: {text}")
    return "logged"


@server.resource("demo://greeting", name="greeting", description="A friendly greeting.")
def greeting() -> str:
    return "hello from a resource"


@server.prompt()
def review(code: str) -> str:
    """Ask for a code review."""
    return f"Please review this code: {code}"


def main(argv: list[str]) -> None:
    mode = argv[1] if len(argv) > 1 else "stdio"
    if mode == "stdio":
        server.run()
    elif mode == "http":
        anyio.run(lambda: server.run_streamable_http_async(port=int(argv[2])))
    elif mode == "sse":
        anyio.run(lambda: server.run_sse_async(port=int(argv[2])))
    else:
        raise SystemExit(f"unknown mode {mode!r}; use stdio, http PORT or sse PORT")


if __name__ == "__main__":
    main(sys.argv)
