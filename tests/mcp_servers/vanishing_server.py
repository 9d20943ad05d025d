"""An MCP server (official SDK, stdio) whose tools do odd things to a call in flight.

Tools:

- ``vanish()``: with an output schema; removes itself from the server's tools, says
  ``notifications/tools/list_changed``, waits (at most 30 s) until the client has
  listed the tools again, then answers with structured content;
- ``stay()``: answers ``here``;
- ``refuse(code, message)``: answers with the JSON-RPC error ``code`` and ``message``.
"""

from __future__ import annotations

import anyio
from mcp import MCPError
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from pydantic import BaseModel


class Gone(BaseModel):
    gone: bool


class Server(MCPServer):
    relisted: anyio.Event | None = None

    async def list_tools(self) -> list:  # type: ignore[type-arg]
        tools = await super().list_tools()
        if self.relisted is not None:
            self.relisted.set()
        return tools


server = Server("vanishing")


@server.tool()
async def vanish(ctx: Context) -> Gone:
    """Leave the tool list, wait until the client listed it again, then answer."""
    server.remove_tool("vanish")
    server.relisted = anyio.Event()
    await ctx.session.send_tool_list_changed()
    with anyio.move_on_after(30):
        await server.relisted.wait()
    return Gone(gone=True)


@server.tool()
def stay() -> str:
    """Answer at once."""
    return "here"


@server.tool()
def refuse(code: int, message: str) -> str:
    """Answer with this JSON-RPC error."""
    raise MCPError(code=code, message=message)


if __name__ == "__main__":
    server.run()
