"""An upstream MCP server's answers and tool definitions leave plughost's MCP edge as they came."""

from __future__ import annotations

import base64

import mcp_types as types
from mcp import Client

from plughost.mcp.content import result_from_mcp, result_to_mcp
from plughost.mcp.registry_server import RegistryMCPServer
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import (
    ToolAvailabilityContext,
    ToolExecutionContext,
    ToolExecutionResult,
    ToolInvocation,
    ToolSpec,
)

PNG = b"\x89PNG\r\n\x1a\nfake"


def upstream_answer() -> types.CallToolResult:
    return types.CallToolResult(
        content=[
            types.TextContent(
                text="before",
                annotations=types.Annotations(audience=["user"], priority=0.5),
            ),
            types.ImageContent(data=base64.b64encode(PNG).decode(), mime_type="image/png"),
            types.EmbeddedResource(
                resource=types.TextResourceContents(uri="memo://1", text="inside")
            ),
            types.TextContent(text="after"),
        ],
        structured_content={"k": "v"},
        _meta={"example.com/trace": "abc"},
    )


def test_an_upstream_answer_goes_out_unchanged_in_order_with_its_annotations() -> None:
    answer = upstream_answer()

    out = result_to_mcp(result_from_mcp("mcp_s_t", answer))

    assert out.model_dump(by_alias=True) == answer.model_dump(by_alias=True)
    assert [block.type for block in out.content] == ["text", "image", "resource", "text"]


def test_model_facing_fields_of_an_upstream_answer_are_still_converted() -> None:
    result = result_from_mcp("mcp_s_t", upstream_answer())

    assert result.content == "before\ninside\nafter"
    assert [item.content_type for item in result.content_items] == ["image", "resource"]
    assert result.content_items[0].data == PNG
    assert "mcp_result" not in result.model_dump()


def test_an_upstream_error_answer_goes_out_as_it_came() -> None:
    answer = types.CallToolResult(content=[types.TextContent(text="no such city")], is_error=True)

    result = result_from_mcp("mcp_s_t", answer)

    assert not result.success and result.error_message == "no such city"
    assert result_to_mcp(result) == answer


class _Upstream:
    """A provider holding one tool as an upstream MCP server defined it."""

    provider_name = "mcp"
    provider_type = "mcp"

    def __init__(self, tool: types.Tool) -> None:
        self.tool = tool

    async def list_tools(self, context: ToolAvailabilityContext | None = None) -> list[ToolSpec]:
        return [
            ToolSpec(
                name=f"mcp_up_{self.tool.name}",
                description=self.tool.description or "",
                parameters_schema=self.tool.input_schema,
                mcp_tool=self.tool,
            )
        ]

    async def invoke(
        self, invocation: ToolInvocation, context: ToolExecutionContext | None = None
    ) -> ToolExecutionResult:
        return result_from_mcp(invocation.tool_name, upstream_answer())

    async def close(self) -> None:
        pass


async def test_an_upstream_tool_is_listed_with_every_field_under_its_namespaced_name() -> None:
    tool = types.Tool(
        name="commit",
        title="Commit",
        description="Record changes.",
        input_schema={"type": "object", "properties": {"message": {"type": "string"}}},
        output_schema={"type": "object", "properties": {"k": {"type": "string"}}},
        annotations=types.ToolAnnotations(
            title="Commit it",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=False,
            open_world_hint=False,
        ),
        execution=types.ToolExecution(task_support="optional"),
        icons=[types.Icon(src="https://example.com/commit.png", mime_type="image/png")],
        _meta={"example.com/owner": "git"},
    )
    registry = ToolRegistry()
    registry.register_provider(_Upstream(tool))
    server = RegistryMCPServer(registry)

    # The handshake-era protocol: ``execution`` is a 2025-11-25 field, gone in 2026-07-28.
    async with Client(server.server, mode="legacy", cache=None) as client:
        listed = (await client.list_tools()).tools
        called = await client.call_tool("mcp_up_commit", {"message": "m"})

    want = tool.model_dump(by_alias=True, exclude_none=True) | {"name": "mcp_up_commit"}
    assert [t.model_dump(by_alias=True, exclude_none=True) for t in listed] == [want]
    assert called.model_dump(by_alias=True) == upstream_answer().model_dump(by_alias=True)
