"""What an MCP client's user is shown when a plugin or a server asks: who asks, first.

A plugin's ``ctx.elicit`` (and an upstream MCP server's ``elicitation/create``)
reaches the user of the MCP client that made the call, under plughost's name:
the client knows only that its server asks. Without more, a plugin could ask
"plughost needs your API key to continue" and be believed. So the host, not
the asker, writes the message's start: ``plugin community.x asks (tool
get_weather): ...``, naming the plugin (as the host bound it to its runner,
never as the plugin says) and the tool the client called. The asker's own
text follows on the same line, cleaned so it can neither hide nor imitate that
start:

- control characters and line breaks become spaces, and runs of white space
  one space, so no text can push the start out of sight or begin a line of its
  own that looks like it;
- invisible formatting characters (bidirectional overrides and isolates,
  zero-width characters, tag characters) are removed, so the text cannot
  reorder what is displayed;
- it is cut at :data:`MAX_MESSAGE` characters.

The form's own strings (field titles, descriptions, choices) are cleaned the
same way, a property name with such characters is refused, and the form is
bounded in size (:data:`MAX_FORM_BYTES`) and depth.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any, Final

__all__ = ["MAX_FORM_BYTES", "MAX_MESSAGE", "FormRefused", "asked", "checked_form", "clean"]

MAX_MESSAGE: Final = 2000
"""Characters of an asker's message shown to the user; the rest is cut."""
MAX_FORM_BYTES: Final = 64 * 1024
"""Bytes of JSON an elicitation form's schema may take."""
_MAX_DEPTH: Final = 8
_HIDDEN: Final = frozenset({"Cf", "Co", "Cs", "Cn"})  # format, private use, surrogates, unassigned
_BREAKS: Final = frozenset({"Cc", "Zl", "Zp"})  # controls (line breaks among them), separators


class FormRefused(ValueError):
    """An elicitation form plughost will not show; the message says why."""


def clean(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` on one line, without characters that hide or reorder what is shown, cut."""
    kept = []
    for char in text:
        category = unicodedata.category(char)
        if category in _BREAKS:
            kept.append(" ")
        elif category not in _HIDDEN:
            kept.append(char)
    line = " ".join("".join(kept).split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def asked(asker: str, tool: str, message: str) -> str:
    """The message the user sees: who asks (and during which tool), then what."""
    during = f" (tool {clean(tool, 200)})" if tool else ""
    return f"{clean(asker, 200)} asks{during}: {clean(message)}"


def checked_form(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every string value cleaned, within size and depth.

    Raises:
        FormRefused: the schema is too large or too deep, or a property name holds
            characters that hide or reorder text.
    """
    try:
        size = len(json.dumps(schema, ensure_ascii=False).encode())
    except (TypeError, ValueError, RecursionError):
        raise FormRefused("the form's schema is not plain JSON") from None
    if size > MAX_FORM_BYTES:
        raise FormRefused(f"the form's schema is {size:,} bytes, over {MAX_FORM_BYTES:,}")
    return {key: _cleaned(value, 1) for key, value in _checked_keys(schema).items()}


def _cleaned(value: Any, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise FormRefused(f"the form's schema is nested deeper than {_MAX_DEPTH} levels")
    if isinstance(value, str):
        return clean(value, MAX_MESSAGE)
    if isinstance(value, list):
        return [_cleaned(item, depth + 1) for item in value]
    if isinstance(value, dict):
        return {key: _cleaned(item, depth + 1) for key, item in _checked_keys(value).items()}
    return value


def _checked_keys(mapping: dict[str, Any]) -> dict[str, Any]:
    """``mapping``, once none of its keys (field names) would show differently cleaned."""
    for key in mapping:
        if not isinstance(key, str):
            raise FormRefused(f"the form's schema has a key that is not text: {key!r:.80}")
        if clean(key, len(key)) != key:
            raise FormRefused(f"the form's field name {clean(key, 80)!r} holds hidden characters")
    return mapping
