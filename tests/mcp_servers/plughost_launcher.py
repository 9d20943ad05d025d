"""Serve a real ToolRegistry over MCP with plughost's server, for the server tests.

Run as ``python plughost_launcher.py stdio`` or ``python plughost_launcher.py http PORT``.

The registry holds one in-file provider: ``greet`` (text), ``pixel`` (an image),
``explode`` (a failed result), ``crash`` (raises inside the provider) and
``add_tool`` (adds a tool to the provider and tells the registry).
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

from plughost.mcp.server import serve_http, serve_stdio
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import (
    ContentItem,
    ToolAvailabilityContext,
    ToolExecutionContext,
    ToolExecutionResult,
    ToolInvocation,
    ToolSpec,
)

PIXEL_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c63f8cfc0f01f00050001ff89993d1d0000000049454e44ae426082"
)


def _schema(**properties: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": kind} for name, kind in properties.items()},
        "required": list(properties),
        "additionalProperties": False,
    }


class DemoProvider:
    """A ToolProvider whose tool set can grow while it is served."""

    provider_name = "demo"
    provider_type = "builtin"

    def __init__(self) -> None:
        self.registry: ToolRegistry | None = None
        self.added: list[str] = []

    def bind_registry(self, registry: ToolRegistry) -> None:
        self.registry = registry

    async def list_tools(self, context: ToolAvailabilityContext | None = None) -> list[ToolSpec]:
        specs = [
            ToolSpec(
                name="greet", description="Greet someone.", parameters_schema=_schema(name="string")
            ),
            ToolSpec(name="pixel", description="A 1x1 PNG.", metadata={"read_only": True}),
            ToolSpec(name="explode", description="Always fails."),
            ToolSpec(name="crash", description="Raises inside the provider."),
            ToolSpec(
                name="add_tool", description="Add a tool.", parameters_schema=_schema(name="string")
            ),
        ]
        specs += [ToolSpec(name=name, description=f"Added: {name}") for name in self.added]
        return specs

    async def invoke(
        self, invocation: ToolInvocation, context: ToolExecutionContext | None = None
    ) -> ToolExecutionResult:
        name = invocation.tool_name
        arguments = invocation.arguments if isinstance(invocation.arguments, dict) else {}
        if name == "greet":
            return ToolExecutionResult(tool_name=name, content=f"Hello, {arguments['name']}!")
        if name == "pixel":
            item = ContentItem(content_type="image", data=PIXEL_PNG, mime_type="image/png")
            return ToolExecutionResult(tool_name=name, content_items=[item])
        if name == "explode":
            return ToolExecutionResult.failure(name, "the fuse was lit", "tool_error")
        if name == "crash":
            raise RuntimeError("provider bug")
        if name == "add_tool":
            self.added.append(str(arguments["name"]))
            assert self.registry is not None
            self.registry.notify_changed(self.provider_name)
            return ToolExecutionResult(tool_name=name, content=f"added {arguments['name']}")
        return ToolExecutionResult(tool_name=name, content=f"I am {name}")

    async def close(self) -> None:
        pass


async def main(argv: list[str]) -> None:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    registry = ToolRegistry()
    registry.register_provider(DemoProvider())
    mode = argv[1] if len(argv) > 1 else "stdio"
    if mode == "stdio":
        await serve_stdio(registry)
    elif mode == "http":
        await serve_http(registry, "127.0.0.1", int(argv[2]))
    else:
        raise SystemExit(f"unknown mode {mode!r}; use stdio or http PORT")


if __name__ == "__main__":
    asyncio.run(main(sys.argv))
