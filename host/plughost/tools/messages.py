"""Tagged history messages: facts for the embedder that never reach the model API.

Some messages the history helpers build are not what they look like to the
model: an image split out of a tool result arrives as a ``user`` message, and a
reminder of what ``tool_search`` can load is reference material, not a turn of
the conversation. Model APIs refuse unknown keys in messages, so these facts
cannot be keys. They ride on the message object instead: a :class:`Tagged`
message is a plain ``dict`` to ``json.dumps``, httpx and the provider SDKs, and
carries

- ``source``: where it came from, ``"tool_result_media"`` (an image or audio
  item of a tool result) or ``"tool_hint"`` (a discovery reminder);
- ``message_id``: for tool media the media index (``tool_result:<call_id>:<n>``),
  for a hint ``"tool_hint"``;
- ``count_in_context``: False for messages that should not count against a
  context window measured in messages (hints; media count, as they take tokens).

Tags live on the object only: a history saved as JSON and loaded again loses
them, so :func:`tag_of` also recognises tool media by the note the history
helpers put first in every media message or block.

What does not live here: building the messages (:mod:`plughost.tools.history`,
:mod:`plughost.search.hints`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal

__all__ = [
    "MEDIA_SOURCE",
    "Tagged",
    "context_count",
    "drop_tool_media",
    "tag_of",
]

Source = Literal["tool_result_media", "tool_hint"]

MEDIA_SOURCE: Final = "tool_result_media"
"""``source`` of a message or block split out of a tool result."""

_MEDIA_NOTE = re.compile(r"^Media from tool result (tool_result:\S+:\d+) \(not a user message\)")


class Tagged(dict[str, Any]):
    """A message (or content block) dict with tags the model API never sees."""

    __slots__ = ("count_in_context", "message_id", "source")

    def __init__(
        self,
        data: Mapping[str, Any],
        *,
        source: Source,
        message_id: str,
        count_in_context: bool = True,
    ) -> None:
        super().__init__(data)
        self.source: Source = source
        self.message_id = message_id
        self.count_in_context = count_in_context

    def __repr__(self) -> str:
        return f"Tagged({dict.__repr__(self)}, source={self.source!r}, id={self.message_id!r})"


def tag_of(item: Mapping[str, Any]) -> Tagged | None:
    """The tags of a message or block: its own, or read back from a tool media note.

    Returns:
        ``item`` itself when it is :class:`Tagged`; a new :class:`Tagged` copy
        when it is an untagged media message or note block (after a JSON round
        trip); None for anything else.
    """
    if isinstance(item, Tagged):
        return item
    index = _media_index(item)
    if index is None:
        return None
    return Tagged(item, source="tool_result_media", message_id=index)


def drop_tool_media(messages: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The messages without the media split out of tool results.

    Whole media messages (OpenAI shape, one-call Anthropic shape) are dropped;
    in an Anthropic turn message the media blocks are removed and the
    ``tool_result`` blocks kept. Index lines in the tool results stay, so the
    model still knows an image was returned.
    """
    kept: list[Mapping[str, Any]] = []
    for message in messages:
        if _is_media(message):
            continue
        content = message.get("content")
        if isinstance(content, list) and any(_is_map(b) and _is_media(b) for b in content):
            blocks = _without_media(content)
            if not blocks:
                continue
            message = {**message, "content": blocks}
        kept.append(message)
    return kept


def _without_media(blocks: list[Any]) -> list[Any]:
    kept: list[Any] = []
    skip_next = False
    for block in blocks:
        if skip_next:
            skip_next = False
            continue
        if _is_map(block) and _is_media(block):
            # A note read back from JSON lost its tags; the media block follows it.
            skip_next = not isinstance(block, Tagged)
            continue
        kept.append(block)
    return kept


def context_count(messages: Iterable[Mapping[str, Any]]) -> int:
    """How many messages count against a context window measured in messages."""
    return sum(1 for m in messages if getattr(m, "count_in_context", True))


def _is_map(value: Any) -> bool:
    return isinstance(value, Mapping)


def _is_media(item: Mapping[str, Any]) -> bool:
    tag = tag_of(item)
    return tag is not None and tag.source == MEDIA_SOURCE


def _media_index(item: Mapping[str, Any]) -> str | None:
    """The media index named by a media message's or note block's leading text."""
    text: Any = None
    if item.get("type") == "text":
        text = item.get("text")
    else:
        content = item.get("content")
        if item.get("role") == "user" and isinstance(content, list) and content:
            first = content[0]
            if isinstance(first, Mapping) and first.get("type") == "text":
                text = first.get("text")
    match = _MEDIA_NOTE.match(text) if isinstance(text, str) else None
    return match.group(1) if match else None
