"""The MCP baseline of scripts/bench_runner.py: the same two tools served over MCP stdio.

Written with the official ``mcp`` SDK (``MCPServer``), the way a tool author
would write it, and started by the benchmark as ``python bench_mcp_peer.py``.
``echo`` answers with its text; ``image`` returns ``size`` bytes as an image,
which MCP carries as base64 text inside JSON.
"""

from __future__ import annotations

from mcp.server import MCPServer
from mcp.server.mcpserver.utilities.types import Image

PNG_HEADER = b"\x89PNG\r\n\x1a\n"

server = MCPServer("bench")


@server.tool()
async def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
async def image(size: int) -> Image:
    """Return an image of ``size`` bytes."""
    return Image(data=PNG_HEADER + b"\0" * max(0, size - len(PNG_HEADER)), format="png")


if __name__ == "__main__":
    server.run()
