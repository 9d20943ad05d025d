"""How many console event streams may be open at once: a few in all, fewer per client.

Each open ``/api/stream`` costs the host a little on every feed entry (a
queue put) and every second (an overview), so their number is bounded: past
:data:`MAX_STREAMS` in all a new one is answered ``503``, past
:data:`MAX_STREAMS_PER_CLIENT` from one client address ``429``, each with a
JSON reason, and the host's other work never waits for them. A slot is held
from the moment the stream is answered until its response ends (the client
went away, or the console stops), and given back however it ends.

What a stream costs while it is open is bounded elsewhere: its queue of feed
entries (:mod:`plughost.web.feed`) drops the oldest when a reader falls behind,
and the overview it sends is made once a tick for every stream together
(:mod:`plughost.web.app`).
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Iterator
from typing import Final

__all__ = ["MAX_STREAMS", "MAX_STREAMS_PER_CLIENT", "StreamRefused", "StreamSlots"]

MAX_STREAMS: Final = 16
"""Event streams open at once, from every client together."""
MAX_STREAMS_PER_CLIENT: Final = 8
"""Event streams open at once from one client address (a browser tab holds one)."""


class StreamRefused(Exception):
    """No slot is free; ``status`` is the HTTP status, the message says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class StreamSlots:
    """Counts the open event streams, in all and per client address."""

    def __init__(self, limit: int = MAX_STREAMS, per_client: int = MAX_STREAMS_PER_CLIENT) -> None:
        self.limit = limit
        self.per_client = per_client
        self._open: collections.Counter[str] = collections.Counter()

    @property
    def open(self) -> int:
        """Streams open now."""
        return self._open.total()

    def take(self, client: str) -> None:
        """Hold a slot for ``client``; give it back with :meth:`give_back`.

        Raises:
            StreamRefused: every slot is taken, or ``client`` holds its share.
        """
        if self._open.total() >= self.limit:
            raise StreamRefused(
                503,
                f"the console already serves {self.limit} event streams, its limit; close "
                "another console tab, or retry later",
            )
        if self._open[client] >= self.per_client:
            raise StreamRefused(
                429,
                f"{client} already has {self.per_client} event streams open, the limit per "
                "client; close one of them first",
            )
        self._open[client] += 1

    def give_back(self, client: str) -> None:
        """Free a slot :meth:`take` held for ``client``."""
        self._open[client] -= 1
        if self._open[client] <= 0:
            del self._open[client]

    @contextlib.contextmanager
    def held(self, client: str) -> Iterator[None]:
        """A slot for ``client`` while inside (see :meth:`take`)."""
        self.take(client)
        try:
            yield
        finally:
            self.give_back(client)
