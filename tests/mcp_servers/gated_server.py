"""An MCP server (stdio) that answers nothing until the test lets it start.

Run as ``python gated_server.py GATE LOG``. GATE is a FIFO: before it reads
its first message, the server opens GATE and reads one line, which blocks
until the test writes one: ``go`` starts it, anything else makes it exit
with code 1. So a test decides, by an event and not by a clock,
when this upstream finishes connecting (or that it never does). Each call of
its one tool, ``note(text)``, appends ``text`` to LOG (a file named in its
args, so its sandbox lets it write there) and answers ``noted: TEXT``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server import MCPServer

GATE = Path(sys.argv[1])
LOG = Path(sys.argv[2])

server = MCPServer("gated")


@server.tool()
def note(text: str) -> str:
    """Write the text down."""
    with LOG.open("a", encoding="utf-8") as log:
        log.write(text + "\n")
    return f"noted: {text}"


if __name__ == "__main__":
    with GATE.open(encoding="utf-8") as gate:  # blocks until the test opens it to write
        line = gate.readline().strip()
    if line != "go":
        raise SystemExit(f"told not to start: {line!r}")
    server.run()
