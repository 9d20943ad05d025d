"""Conversion between MCP content blocks and plughost results, both ways.

Inbound (an upstream server's answer -> :class:`ToolExecutionResult`):

- text blocks join into ``content``;
- images and audio become ``content_items`` holding raw bytes (base64 is
  decoded here, once);
- embedded resources become ``resource`` items (a text resource's text also
  goes into ``content``, so the model reads it);
- resource links become ``resource_link`` items;
- ``structured_content`` is kept; ``is_error`` makes a failed result
  (``tool_error``) whose message is the text;
- the answer itself is kept as ``mcp_result``, for the way out.

Outbound (a registry result -> MCP ``CallToolResult``): an upstream's answer
(``mcp_result``) goes out as it came, so a gateway changes nothing a server
said: block order and boundaries, annotations, embedded resources,
``structuredContent``, ``_meta``. Any other result is converted: text first,
then media base64-encoded, items without a natural MCP block sent as embedded
resources or links, and a failure sent as an ``is_error`` result carrying the
model-facing message.

What does not live here: connections and naming.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import mcp_types as types

from plughost_sdk.models import ContentItem, ToolExecutionResult

__all__ = [
    "content_from_mcp",
    "content_to_mcp",
    "result_from_mcp",
    "result_from_prompt",
    "result_from_resource",
    "result_to_mcp",
]

_FALLBACK_MIME = "application/octet-stream"


class _BadBlockError(ValueError):
    """A content block that cannot be decoded; the message names it."""


def result_from_mcp(tool_name: str, result: types.CallToolResult) -> ToolExecutionResult:
    """Convert an upstream ``tools/call`` result; never raises."""
    try:
        texts, items = content_from_mcp(result.content)
    except _BadBlockError as exc:
        return ToolExecutionResult.failure(tool_name, str(exc), "invalid_result")
    text = "\n".join(texts)
    structured = result.structured_content
    if result.is_error:
        message = text or "the MCP tool reported an error without a message"
        failed = ToolExecutionResult.failure(tool_name, message, "tool_error")
        return failed.model_copy(
            update={"content_items": items, "structured_content": structured, "mcp_result": result}
        )
    return ToolExecutionResult(
        tool_name=tool_name,
        content=text,
        content_items=items,
        structured_content=structured,
        mcp_result=result,
    )


def result_from_resource(tool_name: str, result: types.ReadResourceResult) -> ToolExecutionResult:
    """Convert a ``resources/read`` result; never raises."""
    texts: list[str] = []
    items: list[ContentItem] = []
    try:
        for index, contents in enumerate(result.contents):
            text, item = _resource_contents(f"contents[{index}]", contents)
            if text is not None:
                texts.append(text)
            items.append(item)
    except _BadBlockError as exc:
        return ToolExecutionResult.failure(tool_name, str(exc), "invalid_result")
    return ToolExecutionResult(tool_name=tool_name, content="\n".join(texts), content_items=items)


def result_from_prompt(tool_name: str, result: types.GetPromptResult) -> ToolExecutionResult:
    """Convert a ``prompts/get`` result: its messages as text, media as items; never raises."""
    several = len(result.messages) > 1
    texts: list[str] = []
    items: list[ContentItem] = []
    try:
        for message in result.messages:
            block_texts, block_items = content_from_mcp([message.content])
            items.extend(block_items)
            for text in block_texts:
                texts.append(f"{message.role}: {text}" if several else text)
    except _BadBlockError as exc:
        return ToolExecutionResult.failure(tool_name, str(exc), "invalid_result")
    return ToolExecutionResult(tool_name=tool_name, content="\n\n".join(texts), content_items=items)


def content_from_mcp(blocks: list[Any]) -> tuple[list[str], list[ContentItem]]:
    """Split MCP content blocks into texts and content items.

    Raises:
        ValueError: A block's base64 payload is invalid (the message names it).
    """
    texts: list[str] = []
    items: list[ContentItem] = []
    for index, block in enumerate(blocks):
        where = f"content[{index}]"
        if isinstance(block, types.TextContent):
            texts.append(block.text)
        elif isinstance(block, types.ImageContent | types.AudioContent):
            items.append(
                ContentItem(
                    content_type=block.type,
                    data=_decode(f"{where}.data", block.data),
                    mime_type=block.mime_type,
                )
            )
        elif isinstance(block, types.EmbeddedResource):
            text, item = _resource_contents(f"{where}.resource", block.resource)
            if text is not None:
                texts.append(text)
            items.append(item)
        elif isinstance(block, types.ResourceLink):
            items.append(
                ContentItem(
                    content_type="resource_link",
                    uri=block.uri,
                    name=block.name,
                    description=block.description,
                    mime_type=block.mime_type,
                )
            )
        else:  # tool_use / tool_result blocks only appear in sampling; keep a trace
            kind = getattr(block, "type", type(block).__name__)
            texts.append(f"[unsupported MCP content: {kind}]")
    return texts, items


def _resource_contents(
    where: str, contents: types.TextResourceContents | types.BlobResourceContents
) -> tuple[str | None, ContentItem]:
    if isinstance(contents, types.TextResourceContents):
        item = ContentItem(
            content_type="resource",
            text=contents.text,
            uri=contents.uri,
            mime_type=contents.mime_type,
        )
        return contents.text, item
    data = _decode(f"{where}.blob", contents.blob)
    mime = contents.mime_type or _FALLBACK_MIME
    kind: Any = "resource"
    if mime.startswith("image/"):
        kind = "image"
    elif mime.startswith("audio/"):
        kind = "audio"
    return None, ContentItem(content_type=kind, data=data, uri=contents.uri, mime_type=mime)


def _decode(where: str, text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise _BadBlockError(f"the MCP server sent invalid base64 in {where} ({exc})") from None


# --- outbound --------------------------------------------------------------------------------


def result_to_mcp(result: ToolExecutionResult) -> types.CallToolResult:
    """Convert a registry result into an MCP ``tools/call`` result.

    An upstream MCP server's answer is returned as it arrived (see the module doc).
    """
    if isinstance(result.mcp_result, types.CallToolResult):
        return result.mcp_result
    blocks: list[types.ContentBlock] = []
    text = result.content
    if not text and result.structured_content is not None:
        # Clients that ignore structured content still get the data, as the spec advises.
        text = json.dumps(result.structured_content, ensure_ascii=False, default=str)
    if not result.success:
        message = result.error_message or result.content or "the tool failed"
        extra = result.content if result.content and result.content != message else ""
        text = f"{message}\n{extra}" if extra else message
    if text:
        blocks.append(types.TextContent(text=text))
    blocks.extend(content_to_mcp(result.content_items, tool_name=result.tool_name))
    structured = result.structured_content if isinstance(result.structured_content, dict) else None
    return types.CallToolResult(
        content=blocks, structured_content=structured, is_error=not result.success
    )


def content_to_mcp(items: list[ContentItem], *, tool_name: str = "") -> list[types.ContentBlock]:
    """Convert content items into MCP content blocks (media as base64)."""
    return [_item_to_block(index, item, tool_name) for index, item in enumerate(items)]


def _item_to_block(index: int, item: ContentItem, tool_name: str) -> types.ContentBlock:
    kind = item.content_type
    mime = item.mime_type or _FALLBACK_MIME
    if kind == "text":
        return types.TextContent(text=item.text or "")
    if kind in ("image", "audio") and item.data is not None:
        data = base64.b64encode(item.data).decode("ascii")
        if kind == "image":
            return types.ImageContent(data=data, mime_type=mime)
        return types.AudioContent(data=data, mime_type=mime)
    if kind == "resource_link" or (item.data is None and item.text is None and item.uri):
        uri = item.uri or ""
        return types.ResourceLink(
            uri=uri,
            name=item.name or uri,
            description=item.description,
            mime_type=item.mime_type,
        )
    uri = item.uri or f"plughost://result/{tool_name or 'tool'}/{index}"
    contents: types.TextResourceContents | types.BlobResourceContents
    if item.data is not None:
        blob = base64.b64encode(item.data).decode("ascii")
        contents = types.BlobResourceContents(uri=uri, blob=blob, mime_type=mime)
    else:
        contents = types.TextResourceContents(
            uri=uri, text=item.text or "", mime_type=item.mime_type
        )
    return types.EmbeddedResource(resource=contents)
