"""Model-facing formats keep the order of a result's text and media items."""

from __future__ import annotations

import base64

import mcp_types as types

from plughost.mcp.content import result_from_mcp
from plughost.tools.history import to_anthropic_messages, to_openai_messages
from plughost_sdk.results import normalize_result

PNG_1x1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg=="
)


def test_tool_result_text_keeps_item_order_with_each_media_item_indexed_in_place() -> None:
    result = normalize_result(
        "illustrate",
        {
            "content_items": [
                {"type": "text", "text": "Here is the logo:"},
                {"type": "image", "bytes": PNG_1x1, "mime_type": "image/png"},
                {"type": "text", "text": "The image above is the logo."},
            ]
        },
    )

    openai = to_openai_messages(result, "c1")
    anthropic = to_anthropic_messages(result, "c1")

    assert openai[0]["content"].splitlines() == [
        "Here is the logo:",
        "[image tool_result:c1:1 image/png]",
        "The image above is the logo.",
    ]
    assert anthropic[0]["content"][0]["content"] == openai[0]["content"]
    assert openai[1]["content"][1]["type"] == "image_url"
    assert anthropic[1]["content"][1]["type"] == "image"


def test_a_content_string_comes_before_the_items() -> None:
    result = normalize_result(
        "illustrate",
        {
            "content": "Summary first.",
            "content_items": [{"type": "text", "text": "Then the item."}],
        },
    )

    text = to_openai_messages(result, "c1")[0]["content"]

    assert text.splitlines() == ["Summary first.", "Then the item."]


def test_an_upstream_results_texts_come_together_then_its_media_and_annotations_are_dropped() -> (
    None
):
    upstream = types.CallToolResult(
        content=[
            types.TextContent(text="Here is the logo:"),
            types.ImageContent(
                data=base64.b64encode(PNG_1x1).decode(),
                mime_type="image/png",
                annotations=types.Annotations(audience=["user"], priority=0.9),
            ),
            types.TextContent(text="The image above is the logo."),
            types.EmbeddedResource(
                resource=types.TextResourceContents(uri="memo://a", text="the memo")
            ),
        ]
    )

    messages = to_anthropic_messages(result_from_mcp("logo", upstream), "c1")

    text = messages[0]["content"][0]["content"]
    assert text.splitlines() == [
        "Here is the logo:",
        "The image above is the logo.",
        "the memo",
        "[image tool_result:c1:1 image/png]",
        "[resource: memo://a]",
    ]
    assert "audience" not in repr(messages) and "priority" not in repr(messages)
