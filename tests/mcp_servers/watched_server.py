"""An MCP server (the SDK's lowlevel ``Server``, stdio) whose resources change on request.

Run as ``python watched_server.py LOG [PREFIX]``. Every ``resources/subscribe``
and ``resources/unsubscribe`` it receives is written to LOG as ``subscribe URI`` /
``unsubscribe URI``, and each URI of a 2026-07-28 ``subscriptions/listen`` stream
as ``listen URI`` when it opens and ``unlisten URI`` when it ends, so a test can
see what plughost asked of it.

Resources: ``test://PREFIX/a`` and ``test://PREFIX/b`` (PREFIX defaults to
``watched``); a subscribed one is told of with ``notifications/resources/updated``
(or, on 2026-07-28, an event on the listen streams that name it). Tools:

- ``touch(uri)``: the resource changed: a subscribed session hears
  ``notifications/resources/updated``;
- ``grow(kind)``: add one tool, resource or prompt (``kind``) and send the matching
  ``notifications/*/list_changed``;
- ``whoami()``: the process id, to kill it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

LOG = Path(sys.argv[1])
PREFIX = sys.argv[2] if len(sys.argv) > 2 else "watched"
resources = [f"test://{PREFIX}/a", f"test://{PREFIX}/b"]
tools = ["touch", "grow", "whoami"]
prompts = ["greet"]
subscribed: set[str] = set()
bus = InMemorySubscriptionBus()


def _note(line: str) -> None:
    with LOG.open("a", encoding="utf-8") as log:
        log.write(line + "\n")


def _tool(name: str) -> types.Tool:
    properties = {"uri": {"type": "string"}, "kind": {"type": "string"}}
    return types.Tool(
        name=name, description=name, input_schema={"type": "object", "properties": properties}
    )


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[_tool(name) for name in tools])


async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
    return types.ListResourcesResult(
        resources=[types.Resource(uri=uri, name=uri.rsplit("/", 1)[1]) for uri in resources]
    )


async def read_resource(
    ctx: Any, params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=params.uri, text="content")]
    )


async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[types.Prompt(name=name) for name in prompts])


async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
    subscribed.add(str(params.uri))
    _note(f"subscribe {params.uri}")
    return types.EmptyResult()


async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    subscribed.discard(str(params.uri))
    _note(f"unsubscribe {params.uri}")
    return types.EmptyResult()


class LoggedListen:
    """The SDK's listen handler, logging the URIs of each stream."""

    def __init__(self) -> None:
        self._handler = ListenHandler(bus)

    async def __call__(self, ctx: Any, params: Any) -> Any:
        uris = list(params.notifications.resource_subscriptions or ())
        for uri in uris:
            _note(f"listen {uri}")
        try:
            return await self._handler(ctx, params)
        finally:
            for uri in uris:
                _note(f"unlisten {uri}")


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
    if params.name == "whoami":
        return types.CallToolResult(content=[types.TextContent(text=str(os.getpid()))])
    if params.name == "touch":
        uri = str(arguments["uri"])
        if modern:
            await bus.publish(ResourceUpdated(uri=uri))
        elif uri in subscribed:
            await ctx.session.send_resource_updated(uri)
        return types.CallToolResult(content=[types.TextContent(text=f"touched {uri}")])
    kind = str(arguments.get("kind", ""))
    if kind == "tool":
        tools.append(f"tool{len(tools)}")
        await ctx.session.send_tool_list_changed()
    elif kind == "resource":
        resources.append(f"test://{PREFIX}/r{len(resources)}")
        await ctx.session.send_resource_list_changed()
    elif kind == "prompt":
        prompts.append(f"prompt{len(prompts)}")
        await ctx.session.send_prompt_list_changed()
    return types.CallToolResult(content=[types.TextContent(text=f"grew {kind}")])


server = Server(
    "watched",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_resources=list_resources,
    on_read_resource=read_resource,
    on_list_prompts=list_prompts,
    on_subscribe_resource=subscribe,
    on_unsubscribe_resource=unsubscribe,
    on_subscriptions_listen=LoggedListen(),
)


async def main() -> None:
    options = server.create_initialization_options(
        NotificationOptions(tools_changed=True, resources_changed=True, prompts_changed=True)
    )
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)


if __name__ == "__main__":
    anyio.run(main)
