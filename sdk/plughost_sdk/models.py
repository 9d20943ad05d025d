"""The unified tool model: what every tool source turns into, and what comes back.

Plugin tools, legacy actions, built-in tools and MCP tools all become a
:class:`ToolSpec`; a model's tool call becomes a :class:`ToolInvocation` run in a
:class:`ToolExecutionContext`; every outcome is a :class:`ToolExecutionResult`.
These live in the SDK because both the host and the runner speak them.

Media are held as raw bytes (:class:`ContentItem.data`); base64 is decoded once
at the edge, in :mod:`plughost_sdk.results`, and never travels inside the protocol.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ContentItem",
    "ContentType",
    "ToolAnnotation",
    "ToolAvailabilityContext",
    "ToolExecutionContext",
    "ToolExecutionResult",
    "ToolIcon",
    "ToolInvocation",
    "ToolSpec",
    "Visibility",
]

ContentType = Literal["text", "image", "audio", "resource_link", "resource", "binary"]
Visibility = Literal["visible", "deferred", "hidden"]


class ToolIcon(BaseModel):
    """An icon for UIs that list tools; never needed by the model."""

    src: str
    mime_type: str | None = None
    sizes: list[str] = Field(default_factory=list)


class ToolAnnotation(BaseModel):
    """Non-functional facts about a tool: who it is for and how important it is."""

    audience: list[str] = Field(default_factory=list)
    priority: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class ToolSpec(BaseModel):
    """One tool as the unified tool layer sees it.

    ``name`` is what the model calls (``[A-Za-z0-9_-]{1,64}``); ``tool_id`` is a
    stable namespaced identity (``source:plugin:tool``) that never changes when
    a collision forces a different model-facing name.
    """

    name: str
    description: str = ""
    title: str | None = None
    parameters_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    output_schema: dict[str, Any] | None = None
    provider_name: str = ""
    provider_type: str = ""
    enabled: bool = True
    icons: list[ToolIcon] = Field(default_factory=list)
    annotation: ToolAnnotation | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    tool_id: str = ""
    mcp_tool: Any = Field(default=None, exclude=True, repr=False)
    """The upstream MCP server's own definition (an ``mcp_types.Tool``), for MCP tools.

    ``plughost serve`` re-serves it under ``name`` with every field it has
    (annotations, ``outputSchema``, ``execution``, icons, ``_meta``); model-facing
    formats use the fields above. Never serialized: it stays in the host.
    """

    @property
    def visibility(self) -> Visibility:
        """Where the tool is shown: ``visible`` (core), ``deferred`` or ``hidden``."""
        value = self.metadata.get("visibility", "deferred")
        if value in ("visible", "deferred", "hidden"):
            return value  # type: ignore[no-any-return]
        return "deferred"

    @property
    def brief_description(self) -> str:
        """A one-line summary, for search results and listings."""
        brief = str(self.metadata.get("brief_description") or "")
        return brief or self.description.split("\n", 1)[0]


class ToolExecutionContext(BaseModel):
    """The conversation a call happens in; plugin handlers receive these as kwargs."""

    session_id: str = ""
    stream_id: str = ""
    reasoning: str = ""
    is_group_chat: bool = False
    group_id: str = ""
    user_id: str = ""
    platform: str = ""
    message: dict[str, Any] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    def availability(self) -> ToolAvailabilityContext:
        """The availability context of this execution context."""
        return ToolAvailabilityContext(
            session_id=self.session_id,
            stream_id=self.stream_id,
            is_group_chat=self.is_group_chat,
            group_id=self.group_id,
            user_id=self.user_id,
            platform=self.platform,
        )


class ToolAvailabilityContext(BaseModel):
    """What decides whether a tool is offered to the model in a given chat."""

    model_config = ConfigDict(frozen=True)

    session_id: str = ""
    stream_id: str = ""
    is_group_chat: bool = False
    group_id: str = ""
    user_id: str = ""
    platform: str = ""


class ToolInvocation(BaseModel):
    """A model's tool call, normalized into an execution request.

    ``arguments`` may be the JSON string a model produced; the registry parses,
    casts and validates it, so a provider always receives a dict.
    """

    tool_name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    call_id: str = ""
    session_id: str = ""
    stream_id: str = ""
    reasoning: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)

    def execution_context(
        self, context: ToolExecutionContext | None = None
    ) -> ToolExecutionContext | None:
        """The context this call runs in: the one precedence rule for every tool source.

        The invocation describes this one call, the context the conversation
        around it, so the invocation's own ``session_id``, ``stream_id`` and
        ``reasoning`` win when set and the context fills what they leave empty;
        ``metadata`` is the context's with the invocation's keys on top. Every
        other field (``group_id``, ``message``...) comes from the context.

        Returns:
            ``context`` itself when the invocation adds nothing to it, None when
            there is neither a context nor anything set on the invocation.
        """
        if not (self.session_id or self.stream_id or self.reasoning or self.metadata):
            return context  # most calls: nothing of their own to add
        fields = {
            "session_id": self.session_id,
            "stream_id": self.stream_id,
            "reasoning": self.reasoning,
        }
        own = {key: value for key, value in fields.items() if value}
        if context is None:
            if not own and not self.metadata:
                return None
            return ToolExecutionContext(**own, metadata=dict(self.metadata))
        update: dict[str, Any] = {
            key: value for key, value in own.items() if getattr(context, key) != value
        }
        if self.metadata and any(
            context.metadata.get(key, _MISSING) != value for key, value in self.metadata.items()
        ):
            update["metadata"] = {**context.metadata, **self.metadata}
        return context.model_copy(update=update) if update else context

    def in_context(self, context: ToolExecutionContext | None) -> ToolInvocation:
        """This invocation with the fields of its :meth:`execution_context` filled in."""
        if context is None:
            return self
        update: dict[str, Any] = {
            key: getattr(context, key)
            for key in ("session_id", "stream_id", "reasoning", "metadata")
            if getattr(self, key) != getattr(context, key)
        }
        return self.model_copy(update=update) if update else self


_MISSING = object()


class ContentItem(BaseModel):
    """One media or text item of a result; binary payloads are raw bytes."""

    content_type: ContentType
    data: bytes | None = None
    text: str | None = None
    uri: str | None = None
    mime_type: str | None = None
    name: str | None = None
    description: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def is_media(self) -> bool:
        """True for items that must not be inlined into text (images, audio, binaries)."""
        return self.content_type in ("image", "audio", "binary") or (
            self.content_type == "resource" and self.data is not None
        )

    def summary(self) -> str:
        """A short readable line describing the item, for history text."""
        label = self.name or self.uri or self.content_type
        parts = [f"[{self.content_type}: {label}"]
        if self.mime_type:
            parts.append(f", {self.mime_type}")
        if self.data is not None:
            parts.append(f", {_human_size(len(self.data))}")
        parts.append("]")
        line = "".join(parts)
        if self.content_type == "text" and self.text:
            return self.text
        if self.description:
            line += f" {self.description}"
        return line


def _human_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size / (1024 * 1024):.1f} MiB"


class ToolExecutionResult(BaseModel):
    """The outcome of one tool call, whatever the tool's source.

    ``error_code`` is set on failures: ``tool_error`` for a ``ToolError``,
    ``plugin_exception`` for any other exception in the handler,
    ``invalid_result`` for a return value that cannot be normalized, and the
    wire error codes (``timeout``, ``plugin_crashed``...) for runner failures.
    """

    tool_name: str = ""
    success: bool = True
    content: str = ""
    error_message: str = ""
    error_code: str | None = None
    structured_content: Any = None
    content_items: list[ContentItem] = Field(default_factory=list)
    post_history_messages: list[dict[str, Any]] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    mcp_result: Any = Field(default=None, exclude=True, repr=False)
    """An upstream MCP server's answer as it arrived (an ``mcp_types.CallToolResult``).

    ``plughost serve`` sends it on untouched (block order, annotations,
    ``structuredContent``, ``_meta``); model-facing formats (OpenAI, Anthropic,
    history text) read the fields above, which hold the same answer converted.
    Never serialized: it stays in the host.
    """

    @classmethod
    def failure(
        cls,
        tool_name: str,
        message: str,
        code: str,
        *,
        metadata: dict[str, Any] | None = None,
    ) -> ToolExecutionResult:
        """Build a failed result whose message is meant for the model."""
        return cls(
            tool_name=tool_name,
            success=False,
            error_message=message,
            error_code=code,
            metadata=dict(metadata or {}),
        )

    def get_history_content(self) -> str:
        """Render the result as text for a chat history.

        Order: the text content, then a readable summary of content items (never
        their bytes), then the structured content as JSON when there is no text,
        then the error message when the call failed. A result with none of these
        becomes ``(<tool> completed with no output)``: some model APIs reject an
        empty tool result, and an empty string tells the model nothing.
        """
        parts: list[str] = []
        if self.content:
            parts.append(self.content)
        if self.content_items:
            parts.append("\n".join(item.summary() for item in self.content_items))
        if not self.content and self.structured_content is not None:
            parts.append(
                json.dumps(self.structured_content, ensure_ascii=False, default=str, indent=None)
            )
        if not self.success and self.error_message and self.error_message not in parts:
            parts.append(f"Error: {self.error_message}")
        text = "\n".join(parts)
        if not text.strip():
            return f"({self.tool_name or 'tool'} completed with no output)"
        return text
