"""Chat-history messages from a ToolExecutionResult, and limits on their size.

**Media split.** Many model APIs accept images only in user messages, not in
tool results. So a result with media becomes:

1. the tool-result message: the result's history text, where every media
   item (image, audio, binary) is replaced by an index line such as
   ``[image tool_result:call_1:1 result.png image/png — a chart]``, numbered
   from 1 within the call;
2. one user message per image or audio item the API can take, holding the
   same index in a leading text part that says it comes from a tool result
   and is not a user message, then the media itself. The message (in an
   Anthropic turn, each of its two blocks) is a
   :class:`~plughost.tools.messages.Tagged` dict whose ``source`` is
   ``"tool_result_media"`` and whose ``message_id`` is the media index, so an
   embedder can tell it from a real user message and drop it
   (:func:`~plughost.tools.messages.drop_tool_media`).

An item the API cannot take (binary data, an unsupported format) keeps its
index line, which says why it is not attached. Media bytes never appear as
base64 in tool-result text; a ``data:`` URL a tool wrote into its own text is
replaced by a placeholder.

**Turns.** APIs require every tool result of a turn to come before anything
else: :func:`to_openai_turn` and :func:`to_anthropic_turn` build a whole
turn's messages in that order. :func:`to_openai_messages` and
:func:`to_anthropic_messages` are the one-call case.

**Size.** :class:`ResultLimiter` keeps a huge result out of the context: it
saves the full text to a file and gives the model a preview and the path, or
truncates with a marker when there is nowhere to save.

``post_history_messages`` are not included: their shape is the producer's
business, so the embedder places them.
"""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plughost.tools.messages import MEDIA_SOURCE, Tagged
from plughost_sdk.models import ContentItem, ToolExecutionResult

__all__ = [
    "ResultLimiter",
    "media_index",
    "to_anthropic_messages",
    "to_anthropic_turn",
    "to_openai_messages",
    "to_openai_turn",
]

log = logging.getLogger(__name__)

_DATA_URL = re.compile(r"data:[\w.+/-]+(?:;[\w.+=-]+)*;base64,[A-Za-z0-9+/=]{16,}")
_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image formats both OpenAI and Anthropic accept."""
_OPENAI_AUDIO = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}
_UNSAFE_FILE_CHARS = re.compile(r"[^A-Za-z0-9_.-]")

_Block = dict[str, Any] | str
"""A media content block for one API, or the reason the item cannot be attached."""
_Calls = Sequence[tuple[str, ToolExecutionResult]]


def media_index(call_id: str, number: int) -> str:
    """The index text of a call's ``number``-th media item (from 1)."""
    return f"tool_result:{call_id}:{number}"


@dataclass(frozen=True, slots=True)
class _Media:
    index: str
    item: ContentItem
    block: dict[str, Any]


# --- per-API media blocks ----------------------------------------------------------------


def _openai_block(item: ContentItem) -> _Block:
    mime = item.mime_type or ""
    if item.content_type == "image":
        if item.data is not None and mime in _IMAGE_TYPES:
            url = f"data:{mime};base64,{_b64(item.data)}"
            return {"type": "image_url", "image_url": {"url": url}}
        if item.data is None and _is_web_url(item.uri):
            return {"type": "image_url", "image_url": {"url": item.uri}}
        return _unsupported_image(item)
    if item.content_type == "audio":
        audio_format = _OPENAI_AUDIO.get(mime)
        if item.data is not None and audio_format is not None:
            return {
                "type": "input_audio",
                "input_audio": {"data": _b64(item.data), "format": audio_format},
            }
        return f"{mime or 'this'} audio cannot be attached; only wav and mp3 can"
    return "binary content is not shown to the model"


def _anthropic_block(item: ContentItem) -> _Block:
    mime = item.mime_type or ""
    if item.content_type == "image":
        if item.data is not None and mime in _IMAGE_TYPES:
            source = {"type": "base64", "media_type": mime, "data": _b64(item.data)}
            return {"type": "image", "source": source}
        if item.data is None and _is_web_url(item.uri):
            return {"type": "image", "source": {"type": "url", "url": item.uri}}
        return _unsupported_image(item)
    if item.content_type == "audio":
        return "audio cannot be attached for this model API"
    return "binary content is not shown to the model"


def _unsupported_image(item: ContentItem) -> str:
    if item.data is None:
        return "the image has neither data nor an http(s) URL"
    return f"{item.mime_type or 'unknown'} images cannot be attached"


def _is_web_url(uri: str | None) -> bool:
    return uri is not None and uri.startswith(("https://", "http://"))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


# --- text with index lines ---------------------------------------------------------------


def _split(
    result: ToolExecutionResult, call_id: str, block_of: Callable[[ContentItem], _Block]
) -> tuple[str, list[_Media]]:
    """Return the tool-result text with index lines, and the attachable media."""
    items: list[ContentItem] = []
    media: list[_Media] = []
    number = 0
    for item in result.content_items:
        if not item.is_media:
            items.append(item)
            continue
        number += 1
        index = media_index(call_id, number)
        block = block_of(item)
        reason = block if isinstance(block, str) else None
        items.append(ContentItem(content_type="text", text=_index_line(index, item, reason)))
        if isinstance(block, dict):
            media.append(_Media(index, item, block))
    text = result.model_copy(update={"content_items": items}).get_history_content()
    return _DATA_URL.sub("[inline data omitted]", text), media


def _label(item: ContentItem) -> str:
    parts = [part for part in (item.name or item.uri, item.mime_type) if part]
    text = " ".join(parts)
    if item.description:
        text = f"{text} — {item.description}" if text else item.description
    return text


def _index_line(index: str, item: ContentItem, reason: str | None) -> str:
    label = _label(item)
    line = f"[{item.content_type} {index}" + (f" {label}" if label else "")
    if reason:
        line += f" (not attached: {reason})"
    return line + "]"


def _media_note(media: _Media) -> str:
    label = _label(media.item)
    note = f"Media from tool result {media.index} (not a user message)"
    return f"{note}: {label}" if label else note


# --- OpenAI ------------------------------------------------------------------------------


def to_openai_messages(
    result: ToolExecutionResult,
    call_id: str,
    *,
    limiter: ResultLimiter | None = None,
    session_id: str = "",
) -> list[dict[str, Any]]:
    """Return the Chat Completions messages for one tool call's result.

    Args:
        result: The call's result.
        call_id: The model's tool call id.
        limiter: Bounds the tool-result text, if given.
        session_id: Where the limiter saves oversized text.

    Returns:
        The ``tool`` message, then one ``user`` message per attached media item.
    """
    return to_openai_turn([(call_id, result)], limiter=limiter, session_id=session_id)


def to_openai_turn(
    calls: _Calls, *, limiter: ResultLimiter | None = None, session_id: str = ""
) -> list[dict[str, Any]]:
    """Return a turn's messages: every ``tool`` message first, then the media messages.

    Args:
        calls: ``(call_id, result)`` pairs in the order of the model's tool calls.
        limiter: Bounds each tool-result text, if given.
        session_id: Where the limiter saves oversized text.
    """
    tool_messages: list[dict[str, Any]] = []
    media_messages: list[dict[str, Any]] = []
    for call_id, result in calls:
        text, media = _split(result, call_id, _openai_block)
        text = limiter.limit(text, call_id=call_id, session_id=session_id) if limiter else text
        tool_messages.append({"role": "tool", "tool_call_id": call_id, "content": text})
        media_messages.extend(
            _tagged(
                {"role": "user", "content": [{"type": "text", "text": _media_note(m)}, m.block]}, m
            )
            for m in media
        )
    return tool_messages + media_messages


# --- Anthropic ---------------------------------------------------------------------------


def to_anthropic_messages(
    result: ToolExecutionResult,
    call_id: str,
    *,
    limiter: ResultLimiter | None = None,
    session_id: str = "",
) -> list[dict[str, Any]]:
    """Return the Messages API messages for one tool call's result.

    Returns:
        A ``user`` message holding the ``tool_result`` block, then one ``user``
        message per attached image.
    """
    text, media = _split(result, call_id, _anthropic_block)
    text = limiter.limit(text, call_id=call_id, session_id=session_id) if limiter else text
    messages = [{"role": "user", "content": [_tool_result_block(call_id, result, text)]}]
    messages.extend(_tagged({"role": "user", "content": _anthropic_media(m)}, m) for m in media)
    return messages


def to_anthropic_turn(
    calls: _Calls, *, limiter: ResultLimiter | None = None, session_id: str = ""
) -> list[dict[str, Any]]:
    """Return a turn as one ``user`` message: all ``tool_result`` blocks, then the media.

    The Messages API rejects a ``tool_result`` block that follows other
    content, so several calls' results cannot simply be concatenated.
    """
    results: list[dict[str, Any]] = []
    media_blocks: list[dict[str, Any]] = []
    for call_id, result in calls:
        text, media = _split(result, call_id, _anthropic_block)
        text = limiter.limit(text, call_id=call_id, session_id=session_id) if limiter else text
        results.append(_tool_result_block(call_id, result, text))
        for item in media:
            media_blocks.extend(_anthropic_media(item))
    return [{"role": "user", "content": results + media_blocks}] if results else []


def _tool_result_block(call_id: str, result: ToolExecutionResult, text: str) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": text}
    if not result.success:
        block["is_error"] = True
    return block


def _anthropic_media(media: _Media) -> list[dict[str, Any]]:
    note = {"type": "text", "text": _media_note(media)}
    return [_tagged(note, media), _tagged(media.block, media)]


def _tagged(data: dict[str, Any], media: _Media) -> Tagged:
    return Tagged(data, source=MEDIA_SOURCE, message_id=media.index)


# --- size limits -------------------------------------------------------------------------


@dataclass(slots=True)
class ResultLimiter:
    """Keep oversized tool-result text out of the context.

    Attributes:
        max_chars: Text up to this length passes unchanged.
        persist_dir: Where full texts are saved, as ``<session>/<call_id>.txt``;
            None truncates instead.
        preview_chars: How much of a saved text the model sees (at most half
            of ``max_chars``).
    """

    max_chars: int = 16_000
    persist_dir: Path | None = None
    preview_chars: int = 1_200

    def __post_init__(self) -> None:
        if self.max_chars < 200:
            raise ValueError(f"max_chars must be at least 200, got {self.max_chars}")
        if self.preview_chars < 0:
            raise ValueError(f"preview_chars must not be negative, got {self.preview_chars}")

    def limit(self, text: str, *, call_id: str, session_id: str = "") -> str:
        """Return ``text``, or a preview with the saved file's path, or a truncation.

        Saving writes one small file synchronously; if it fails, the text is
        truncated instead and a warning is logged.
        """
        if len(text) <= self.max_chars:
            return text
        if self.persist_dir is not None:
            path = self._persist(text, call_id, session_id)
            if path is not None:
                return self._preview(text, path)
        return self._truncate(text)

    def path_for(self, call_id: str, session_id: str = "") -> Path | None:
        """Where the full text of ``call_id`` is (or would be) saved."""
        if self.persist_dir is None:
            return None
        session = _file_part(session_id, "default")
        return self.persist_dir / session / f"{_file_part(call_id, 'call')}.txt"

    def _persist(self, text: str, call_id: str, session_id: str) -> Path | None:
        path = self.path_for(call_id, session_id)
        if path is None:
            return None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            log.warning("tool result not saved, truncating path=%s error=%s", path, exc)
            return None
        return path

    def _preview(self, text: str, path: Path) -> str:
        shown = min(self.preview_chars, self.max_chars // 2)  # the preview must fit the limit
        return (
            f"[Result too large for the context: {len(text)} characters. The full text is "
            f"saved at {path}; read that file for the rest instead of repeating the call. "
            f"First {shown} characters:]\n"
            f"{text[:shown]}\n"
            f"[... {len(text) - shown} more characters in {path} ...]"
        )

    def _truncate(self, text: str) -> str:
        keep = self.max_chars - 100  # room for the marker, so the result fits max_chars
        dropped = len(text) - keep
        marker = f"[... truncated {dropped} characters; narrow the request to see the rest ...]"
        return f"{text[:keep]}\n{marker}"


def _file_part(value: str, fallback: str) -> str:
    cleaned = _UNSAFE_FILE_CHARS.sub("_", value).strip(".")
    return cleaned or fallback
