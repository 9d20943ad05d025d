"""Cursor pagination of the lists plughost serves over MCP (``tools/list`` and the like).

A cursor is opaque to clients: the URL-safe base64 of ``"plughost:<offset>"``.
A list that changes between two pages is read at the new offset (an entry may
be skipped or repeated, which a ``list_changed`` notification tells the client
to fix by listing again). A cursor this server did not hand out is refused with
JSON-RPC error -32602 (invalid params), as the specification requires.

What does not live here: the handlers that list things (:mod:`plughost.mcp.server`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import TypeVar

import mcp_types as types
from mcp import MCPError

__all__ = ["DEFAULT_PAGE_SIZE", "page_of"]

DEFAULT_PAGE_SIZE = 100
"""Entries per page unless the server is told otherwise."""

_PREFIX = "plughost:"

T = TypeVar("T")


def page_of(items: Sequence[T], cursor: str | None, page_size: int) -> tuple[list[T], str | None]:
    """Return the page of ``items`` that ``cursor`` points at, and the next page's cursor.

    Args:
        items: The whole list, in a stable order.
        cursor: The client's cursor; None for the first page.
        page_size: Entries per page (at least 1).

    Returns:
        The entries of this page, and the cursor of the next one (None on the last page).

    Raises:
        MCPError: ``INVALID_PARAMS`` for a cursor this server did not hand out.
    """
    if page_size < 1:
        raise ValueError(f"page_size must be at least 1, got {page_size}")
    start = 0 if cursor is None else _offset(cursor)
    end = start + page_size
    next_cursor = _cursor(end) if end < len(items) else None
    return list(items[start:end]), next_cursor


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"{_PREFIX}{offset}".encode()).decode()


def _offset(cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("ascii")
    except (binascii.Error, UnicodeError, ValueError):
        text = ""
    number = text.removeprefix(_PREFIX)
    if not text.startswith(_PREFIX) or not number.isdigit():
        raise MCPError(
            code=types.INVALID_PARAMS,
            message=f"Invalid cursor {cursor[:64]!r}: pass back a nextCursor this server sent, "
            "or no cursor for the first page",
        )
    return int(number)
