"""An MCP server (official SDK) that records every call start in a file, for the no-duplicate tests.

Run as ``python recording_server.py LOG stdio`` or ``... LOG http PORT`` / ``... LOG sse PORT``.
Every line in LOG is ``<event> <label> <pid>``: ``start`` when a ``record`` call begins,
``cancelled`` when its handler is cancelled, ``done`` when it finishes.

Tools: ``record(label, seconds, steps)`` (records its start, reports ``steps`` progress
notifications while it sleeps ``seconds``, records its end) and ``whoami`` (the pid).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context

LOG = Path(sys.argv[1])
server = MCPServer("recording")


def _note(event: str, label: str) -> None:
    with LOG.open("a", encoding="utf-8") as log:
        log.write(f"{event} {label} {os.getpid()}\n")
        log.flush()
        os.fsync(log.fileno())


@server.tool()
async def record(label: str, ctx: Context, seconds: float = 0.0, steps: int = 0) -> str:
    """Record the call's start, report progress while sleeping, record its end."""
    _note("start", label)
    try:
        for step in range(steps):
            await ctx.report_progress(step + 1, steps, f"step {step + 1} of {steps}")
            await anyio.sleep(seconds / max(steps, 1))
        if not steps:
            await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        _note("cancelled", label)
        raise
    _note("done", label)
    return f"recorded {label}"


@server.tool()
def whoami() -> str:
    """The server's process id."""
    return str(os.getpid())


def main(argv: list[str]) -> None:
    mode = argv[2] if len(argv) > 2 else "stdio"
    if mode == "stdio":
        server.run()
    elif mode == "http":
        anyio.run(lambda: server.run_streamable_http_async(port=int(argv[3])))
    elif mode == "sse":
        anyio.run(lambda: server.run_sse_async(port=int(argv[3])))
    else:
        raise SystemExit(f"unknown mode {mode!r}; use stdio, http PORT or sse PORT")


if __name__ == "__main__":
    main(sys.argv)
