"""Conversion between MCP content blocks and plughost results, both ways."""

from __future__ import annotations

import base64

import mcp_types as types

from plughost.mcp.content import (
    result_from_mcp,
    result_from_prompt,
    result_from_resource,
    result_to_mcp,
)
from plughost_sdk.models import ContentItem, ToolExecutionResult

PNG = b"\x89PNG\r\n\x1a\nfake"
B64 = base64.b64encode(PNG).decode()


def test_text_blocks_join_and_media_become_raw_bytes() -> None:
    result = result_from_mcp(
        "t",
        types.CallToolResult(
            content=[
                types.TextContent(text="one"),
                types.ImageContent(data=B64, mime_type="image/png"),
                types.TextContent(text="two"),
                types.AudioContent(data=B64, mime_type="audio/wav"),
            ],
            structured_content={"n": 1},
        ),
    )

    assert result.success
    assert result.content == "one\ntwo"
    assert [(i.content_type, i.data, i.mime_type) for i in result.content_items] == [
        ("image", PNG, "image/png"),
        ("audio", PNG, "audio/wav"),
    ]
    assert result.structured_content == {"n": 1}


def test_embedded_resources_and_links_become_items_and_text_resources_are_readable() -> None:
    result = result_from_mcp(
        "t",
        types.CallToolResult(
            content=[
                types.EmbeddedResource(
                    resource=types.TextResourceContents(uri="file:///a.txt", text="inside")
                ),
                types.EmbeddedResource(
                    resource=types.BlobResourceContents(
                        uri="file:///b.bin", blob=B64, mime_type="application/zip"
                    )
                ),
                types.ResourceLink(uri="file:///c", name="c", description="a link"),
            ]
        ),
    )

    text_item, blob_item, link = result.content_items
    assert result.content == "inside"
    assert (text_item.content_type, text_item.uri, text_item.text) == (
        "resource",
        "file:///a.txt",
        "inside",
    )
    assert (blob_item.content_type, blob_item.data) == ("resource", PNG)
    assert (link.content_type, link.uri, link.name) == ("resource_link", "file:///c", "c")


def test_is_error_becomes_a_failed_tool_error_whose_message_is_the_text() -> None:
    result = result_from_mcp(
        "t", types.CallToolResult(content=[types.TextContent(text="no such city")], is_error=True)
    )

    assert not result.success
    assert result.error_code == "tool_error"
    assert result.error_message == "no such city"


def test_invalid_base64_from_a_server_is_an_invalid_result_naming_the_block() -> None:
    result = result_from_mcp(
        "t",
        types.CallToolResult(
            content=[
                types.TextContent(text="ok"),
                types.ImageContent(data="@@not base64@@", mime_type="image/png"),
            ]
        ),
    )

    assert result.error_code == "invalid_result"
    assert "content[1].data" in result.error_message


def test_resource_reads_give_text_and_typed_binary_items() -> None:
    result = result_from_resource(
        "r",
        types.ReadResourceResult(
            contents=[
                types.TextResourceContents(uri="x://t", text="hello"),
                types.BlobResourceContents(uri="x://i", blob=B64, mime_type="image/png"),
            ]
        ),
    )

    assert result.content == "hello"
    assert result.content_items[1].content_type == "image"
    assert result.content_items[1].data == PNG


def test_prompt_messages_are_labelled_by_role_when_there_are_several() -> None:
    single = result_from_prompt(
        "p",
        types.GetPromptResult(
            messages=[types.PromptMessage(role="user", content=types.TextContent(text="hi"))]
        ),
    )
    several = result_from_prompt(
        "p",
        types.GetPromptResult(
            messages=[
                types.PromptMessage(role="user", content=types.TextContent(text="q")),
                types.PromptMessage(role="assistant", content=types.TextContent(text="a")),
            ]
        ),
    )

    assert single.content == "hi"
    assert several.content == "user: q\n\nassistant: a"


def test_outbound_media_are_base64_and_other_items_find_a_block() -> None:
    result = ToolExecutionResult(
        tool_name="t",
        content="text first",
        content_items=[
            ContentItem(content_type="image", data=PNG, mime_type="image/png"),
            ContentItem(content_type="audio", data=PNG, mime_type="audio/wav"),
            ContentItem(content_type="resource_link", uri="https://example.com/x", name="x"),
            ContentItem(content_type="binary", data=b"\x00\x01"),
            ContentItem(content_type="resource", text="notes", uri="memo://1"),
        ],
        structured_content={"k": "v"},
    )

    mcp = result_to_mcp(result)
    text, image, audio, link, binary, resource = mcp.content

    assert isinstance(text, types.TextContent) and text.text == "text first"
    assert isinstance(image, types.ImageContent) and base64.b64decode(image.data) == PNG
    assert isinstance(audio, types.AudioContent) and audio.mime_type == "audio/wav"
    assert isinstance(link, types.ResourceLink) and link.uri == "https://example.com/x"
    assert isinstance(binary, types.EmbeddedResource)
    assert isinstance(binary.resource, types.BlobResourceContents)
    assert base64.b64decode(binary.resource.blob) == b"\x00\x01"
    assert isinstance(resource, types.EmbeddedResource)
    assert isinstance(resource.resource, types.TextResourceContents)
    assert resource.resource.text == "notes"
    assert mcp.structured_content == {"k": "v"}
    assert not mcp.is_error


def test_outbound_failures_are_is_error_results_with_the_model_facing_message() -> None:
    failed = ToolExecutionResult.failure("t", "city not found", "tool_error")

    mcp = result_to_mcp(failed)

    assert mcp.is_error
    assert [block.text for block in mcp.content if isinstance(block, types.TextContent)] == [
        "city not found"
    ]


def test_outbound_structured_content_is_passed_only_when_it_is_a_dict() -> None:
    listed = ToolExecutionResult(tool_name="t", content="[1, 2]", structured_content=[1, 2])

    assert result_to_mcp(listed).structured_content is None
