"""The console's "try a tool" call: through the same ToolRegistry path a model's call takes.

The arguments go to :meth:`ToolRegistry.invoke` exactly as the page sends them:
an object from the form, or a raw JSON string as a model would write it, so an
operator sees the validation errors a model would see, word for word. The
answer carries the result, every content item ready to show (media as
``data:`` URLs) and the history messages plughost would give the model.
"""

from __future__ import annotations

import base64
from typing import Any

from plughost.host import PluginHost
from plughost.tools.history import to_anthropic_messages, to_openai_messages
from plughost_sdk.models import ContentItem, ToolExecutionContext, ToolInvocation

__all__ = ["try_tool"]


async def try_tool(
    host: PluginHost,
    tool: str,
    arguments: dict[str, Any] | str,
    *,
    call_id: str,
    session_id: str = "",
) -> dict[str, Any]:
    """Call ``tool`` as a model in ``session_id`` would, and describe everything that came back."""
    context = ToolExecutionContext(session_id=session_id, stream_id=session_id)
    invocation = ToolInvocation(tool_name=tool, arguments=arguments, call_id=call_id)
    result = await host.tools.invoke(invocation, context)
    return {
        "call_id": call_id,
        "result": result.model_dump(mode="json", exclude={"content_items"}),
        "items": [_item(item) for item in result.content_items],
        "history": {
            "openai": to_openai_messages(result, call_id),
            "anthropic": to_anthropic_messages(result, call_id),
        },
    }


def _item(item: ContentItem) -> dict[str, Any]:
    data_url = None
    if item.data is not None:
        mime = item.mime_type or "application/octet-stream"
        data_url = f"data:{mime};base64,{base64.b64encode(item.data).decode('ascii')}"
    return {
        "type": item.content_type,
        "mime_type": item.mime_type,
        "name": item.name,
        "description": item.description,
        "text": item.text,
        "uri": item.uri,
        "bytes": len(item.data) if item.data is not None else None,
        "data_url": data_url,
    }
