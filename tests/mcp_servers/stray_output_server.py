"""plughost's MCP server on stdio, over a tool that writes to stdout and reads stdin.

Run as ``python stray_output_server.py``. The ``stray`` tool prints a line, writes
another straight to fd 1, and reads fd 0; it answers with what it read. Served
by :func:`plughost.mcp.server.serve_stdio`, the protocol stream must stay intact,
the stray lines must reach stderr, and the read must find end-of-file.
"""

from __future__ import annotations

import asyncio
import os
import sys

from plughost.mcp.server import serve_stdio
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import (
    ToolAvailabilityContext,
    ToolExecutionContext,
    ToolExecutionResult,
    ToolInvocation,
    ToolSpec,
)


class StrayProvider:
    provider_name = "stray"
    provider_type = "builtin"

    async def list_tools(self, context: ToolAvailabilityContext | None = None) -> list[ToolSpec]:
        schema = {"type": "object", "properties": {}}
        return [ToolSpec(name="stray", description="Write to stdout.", parameters_schema=schema)]

    async def invoke(
        self, invocation: ToolInvocation, context: ToolExecutionContext | None = None
    ) -> ToolExecutionResult:
        print("stray print", flush=True)
        os.write(1, b"stray write\n")
        read = sys.stdin.buffer.read()  # fd 0 reads /dev/null while serving
        return ToolExecutionResult(tool_name="stray", content=f"read {read!r}")

    async def close(self) -> None:
        pass


if __name__ == "__main__":
    registry = ToolRegistry()
    registry.register_provider(StrayProvider())
    asyncio.run(serve_stdio(registry))
