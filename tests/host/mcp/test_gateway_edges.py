"""What differs at the MCP edge of a gateway: only what plughost says itself, and the protocol era.

Served in memory to the official client: a 2026-07-28 client gets an upstream
tool's definition without ``execution`` (a field its protocol does not have),
and a failure of plughost's own (the server unreachable, a timeout) reaches
the client as an ``isError`` result carrying plughost's message.
"""

from __future__ import annotations

import mcp_types as types
import pytest
from mcp import Client

from plughost.mcp.registry_server import RegistryMCPServer
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import ToolExecutionResult, ToolInvocation, ToolSpec

TOOL = types.Tool(
    name="convert",
    input_schema={"type": "object"},
    execution=types.ToolExecution(task_support="forbidden"),
    annotations=types.ToolAnnotations(read_only_hint=True),
)


class Unreachable:
    """An upstream provider whose server cannot be reached, as MCPToolProvider reports it."""

    provider_name = "mcp"
    provider_type = "mcp"

    def __init__(self, code: str, message: str) -> None:
        self.code, self.message = code, message

    async def list_tools(self, context: object = None) -> list[ToolSpec]:
        return [ToolSpec(name="mcp_time_convert", parameters_schema={}, mcp_tool=TOOL)]

    async def invoke(
        self, invocation: ToolInvocation, context: object = None
    ) -> ToolExecutionResult:
        return ToolExecutionResult.failure(invocation.tool_name, self.message, self.code)

    async def close(self) -> None:
        pass


def served(provider: Unreachable) -> RegistryMCPServer:
    registry = ToolRegistry()
    registry.register_provider(provider)  # type: ignore[arg-type]
    return RegistryMCPServer(registry)


async def test_a_2026_client_gets_the_upstream_definition_without_execution() -> None:
    server = served(Unreachable("timeout", ""))

    async with Client(server.server, cache=None) as modern:
        (listed,) = (await modern.list_tools()).tools
    async with Client(server.server, mode="legacy", cache=None) as legacy:
        (old,) = (await legacy.list_tools()).tools

    assert listed.name == old.name == "mcp_time_convert"
    assert listed.execution is None
    assert old.execution == TOOL.execution
    assert listed.annotations == old.annotations == TOOL.annotations


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("server_unavailable", "MCP server time is unavailable: command exited with code 1"),
        ("timeout", "MCP server time did not answer convert within 30 s"),
        ("outcome_unknown", "the connection to MCP server time was lost during the call"),
    ],
)
async def test_plughosts_own_failures_reach_the_client_as_error_results_with_its_message(
    code: str, message: str
) -> None:
    async with Client(served(Unreachable(code, message)).server, cache=None) as client:
        result = await client.call_tool("mcp_time_convert", {})

    assert result.is_error
    assert [b.text for b in result.content if isinstance(b, types.TextContent)] == [message]
