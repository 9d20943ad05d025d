"""An MCP server (official SDK, stdio) whose tool leaves its list in the middle of a call.

Tools:

- ``vanish()``: with an output schema; removes itself from the server's tools, says
  ``notifications/tools/list_changed``, waits (at most 30 s) until the client has
  listed the tools again, then answers with structured content;
- ``stay()``: answers ``here``.
"""

from __future__ import annotations

import anyio
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


if __name__ == "__main__":
    server.run()
