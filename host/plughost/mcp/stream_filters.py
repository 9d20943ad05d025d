"""Wrappers of a transport's SessionMessage streams, for what is handled beside an SDK session.

:class:`FilteredReceive` hands a session every message of its transport except
those a ``claim`` function takes for itself; :class:`WatchedSend` shows every
message a session sends to a ``watch`` function before sending it on. Both
are anyio object streams, as the transport's own are, so a session cannot tell
them apart.

Used by :mod:`plughost.mcp.forwarding` (the server side of ``plughost serve``)
and :mod:`plughost.mcp.upstream_tap` (the client side, toward an upstream).

:func:`eager_memory_stream` makes the memory streams the stdio transports hand
their sessions: anyio's memory stream yields a turn of the event loop at every
send and receive, even when the other end is already waiting, and a message on
its way from a pipe to the task that answers it crosses such a stream at each
hop. An eager end skips that turn when the item can move at once (a receiver is
waiting, or a sender is); a cancelled sender still raises before its item goes,
so what arrives, in which order, and what a cancel stops are unchanged.

A :class:`FilteredReceive` over an eager stream asks the stream to show it each
message as it is sent (:meth:`EagerReceive.intercept`): the message is claimed
in the sending task (the one that read it from the pipe), in the order sent, and
a claimed message never enters the stream, so the task waiting for it is woken
straight from there instead of through the session's task.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

import anyio
import anyio.abc
import anyio.lowlevel
import mcp_types as types
from anyio.streams.memory import (
    MemoryObjectReceiveStream,
    MemoryObjectSendStream,
    MemoryObjectStreamStatistics,
)
from mcp.shared.message import SessionMessage

__all__ = [
    "EagerReceive",
    "EagerSend",
    "FilteredReceive",
    "WatchedSend",
    "eager_memory_stream",
]

T = TypeVar("T")


def _nothing() -> None:
    return None


class FilteredReceive(anyio.abc.ObjectReceiveStream[SessionMessage | Exception]):
    """``inner``'s items, minus the messages ``claim`` returns True for.

    Over an eager stream, ``claim`` sees each message in the task that sends it;
    over any other, in the task that receives.

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
        self._pushed = isinstance(inner, EagerReceive) and inner.intercept(self._claims)

    def _claims(self, item: object) -> bool:
        return isinstance(item, SessionMessage) and self._claim(item.message)

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
            if self._pushed or not self._claims(item):  # pushed: claimed as it was sent
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


class _Interception:
    """What the receiving side of an eager stream takes off it as the items are sent."""

    __slots__ = ("claim",)

    def __init__(self) -> None:
        self.claim: Callable[[Any], bool] | None = None


class _MemoryEnd:
    """What both eager ends pass straight to the memory stream's end they wrap."""

    def __init__(
        self,
        inner: MemoryObjectSendStream[Any] | MemoryObjectReceiveStream[Any],
        interception: _Interception,
    ):
        self._end = inner
        self._interception = interception

    def statistics(self) -> MemoryObjectStreamStatistics:
        """The inner stream's statistics."""
        return self._end.statistics()

    def close(self) -> None:
        """Close the inner stream."""
        self._end.close()

    async def aclose(self) -> None:
        """Close the inner stream."""
        self._end.close()


class EagerSend(_MemoryEnd, anyio.abc.ObjectSendStream[T], Generic[T]):
    """A memory stream's send end that hands an item over without a turn when it can."""

    def __init__(self, inner: MemoryObjectSendStream[T], interception: _Interception) -> None:
        super().__init__(inner, interception)
        self._inner = inner

    async def send(self, item: T, /) -> None:
        """Send ``item``; wait only when no receiver is ready for it."""
        await anyio.lowlevel.checkpoint_if_cancelled()
        claim = self._interception.claim
        if claim is not None and claim(item):
            return
        try:
            self._inner.send_nowait(item)
        except anyio.WouldBlock:
            await self._inner.send(item)

    def send_nowait(self, item: T) -> None:
        """Send ``item`` now, or raise :class:`anyio.WouldBlock`."""
        claim = self._interception.claim
        if claim is not None and claim(item):
            return
        self._inner.send_nowait(item)


class EagerReceive(_MemoryEnd, anyio.abc.ObjectReceiveStream[T], Generic[T]):
    """A memory stream's receive end that takes a waiting item without a turn."""

    def __init__(self, inner: MemoryObjectReceiveStream[T], interception: _Interception) -> None:
        super().__init__(inner, interception)
        self._inner = inner

    def intercept(self, claim: Callable[[T], bool]) -> bool:
        """Show ``claim`` each item as it is sent, in the sending task; True keeps it out.

        Returns False, and changes nothing, if items already wait in the stream or
        another claim was installed first: the receiver then claims as it receives.
        """
        if self._interception.claim is not None or self._end.statistics().current_buffer_used:
            return False
        self._interception.claim = claim
        return True

    async def receive(self) -> T:
        """The next item; wait only when none is ready.

        A ready item is taken even by a cancelled task (its next wait raises): the
        receivers of a transport are cancelled only when the transport goes away.
        """
        try:
            return self._inner.receive_nowait()
        except anyio.WouldBlock:
            return await self._inner.receive()

    def close(self) -> None:
        """Close the inner stream; senders are no longer shown to a claim."""
        self._interception.claim = None
        self._end.close()

    async def aclose(self) -> None:
        """Close the inner stream; senders are no longer shown to a claim."""
        self.close()

    def receive_nowait(self) -> T:
        """The next item now, or raise :class:`anyio.WouldBlock`."""
        return self._inner.receive_nowait()


class eager_memory_stream(tuple[EagerSend[T], EagerReceive[T]]):  # noqa: N801 - used as a function
    """``anyio.create_memory_object_stream[T](size)``, with both ends eager.

    Written ``eager_memory_stream[T](size)``, as anyio's own is.
    """

    def __new__(cls, max_buffer_size: float = 0) -> eager_memory_stream[T]:
        send, receive = anyio.create_memory_object_stream[T](max_buffer_size)
        interception = _Interception()
        return tuple.__new__(
            cls, (EagerSend(send, interception), EagerReceive(receive, interception))
        )
