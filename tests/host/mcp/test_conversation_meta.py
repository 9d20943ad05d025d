"""MCP tools get the call's conversation under the same precedence rule as plugin tools."""

from __future__ import annotations

import json

from plughost.mcp.provider import MCPToolProvider
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import ToolExecutionContext, ToolInvocation
from tests.host.mcp.test_provider import demo_stdio


async def test_an_mcp_server_receives_session_and_stream_in_meta_but_not_the_reasoning() -> None:
    registry = ToolRegistry()
    provider = MCPToolProvider({"demo": demo_stdio()})
    registry.register_provider(provider)
    try:
        invocation = ToolInvocation(
            tool_name="mcp_demo_conversation", stream_id="chat-inv", reasoning="secret thoughts"
        )
        context = ToolExecutionContext(session_id="s-ctx", stream_id="chat-ctx")
        result = await registry.invoke(invocation, context)
        assert result.success, result.error_message
        assert json.loads(result.content) == {
            "plughost/session_id": "s-ctx",
            "plughost/stream_id": "chat-inv",
        }
        bare = await registry.invoke(ToolInvocation(tool_name="mcp_demo_conversation"))
        assert json.loads(bare.content) == {}
    finally:
        await provider.close()
