"""Wrappers of a transport's SessionMessage streams, for what is handled beside an SDK session.

:class:`FilteredReceive` hands a session every message of its transport except
those a ``claim`` function takes for itself; :class:`WatchedSend` shows every
message a session sends to a ``watch`` function before sending it on. Both
are anyio object streams, as the transport's own are, so a session cannot tell
them apart.

Used by :mod:`plughost.mcp.forwarding` (the server side of ``plughost serve``)
and :mod:`plughost.mcp.upstream_tap` (the client side, toward an upstream).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp.shared.message import SessionMessage

__all__ = ["FilteredReceive", "WatchedSend"]


def _nothing() -> None:
    return None


class FilteredReceive(anyio.abc.ObjectReceiveStream[SessionMessage | Exception]):
    """``inner``'s items, minus the messages ``claim`` returns True for.

    Args:
        inner: The transport's read stream.
        claim: Sees each message first; True keeps it from the session.
        on_end: Called when the stream ends, fails or is closed.
    """

    def __init__(
        self,
        inner: Any,
        claim: Callable[[types.JSONRPCMessage], bool],
        on_end: Callable[[], None] = _nothing,
    ) -> None:
        self._inner = inner
        self._claim = claim
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        """The sender's context of the last item, when the inner stream keeps one."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        """The next item the session should see."""
        while True:
            try:
                item: SessionMessage | Exception = await self._inner.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._on_end()
                raise
            if not isinstance(item, SessionMessage) or not self._claim(item.message):
                return item

    async def aclose(self) -> None:
        """Close the inner stream."""
        self._on_end()
        await self._inner.aclose()


class WatchedSend(anyio.abc.ObjectSendStream[SessionMessage]):
    """``inner``, showing each message to ``watch`` before it is sent."""

    def __init__(self, inner: Any, watch: Callable[[types.JSONRPCMessage], None]) -> None:
        self._inner = inner
        self._watch = watch

    async def send(self, item: SessionMessage, /) -> None:
        """Show ``item`` to the watcher, then send it."""
        self._watch(item.message)
        await self._inner.send(item)

    async def aclose(self) -> None:
        """Close the inner stream."""
        await self._inner.aclose()
