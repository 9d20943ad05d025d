"""A runner whose event loop an async handler is blocking: what its pulse says, and when to act.

While one step of an async handler blocks a runner's event loop, the runner's
pulse thread keeps sending heartbeats that carry ``"blocked": {"plugin",
"handler", "seconds", "deadline_in"}`` (see ``plughost_runner.link.pulse``). The
supervisor keeps the latest as a :class:`BlockedLoop`, in its own loop's clock,
and leaves the call alone until its deadline has passed by the grace period
(``stuck_grace``): the call runs to its own deadline (the host answers
``timeout`` at that moment by itself), and only a loop still blocked after it
gets the runner recycled. A runner that holds the GIL falls silent instead, and
the missed heartbeats decide, as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["BlockedLoop"]

_MAX_NAME = 200


@dataclass(frozen=True, slots=True)
class BlockedLoop:
    """One async handler blocking a runner's loop, as its latest heartbeat told it.

    Attributes:
        plugin_id: The handler's plugin.
        handler: The handler (a tool's name for a tool).
        since: When the blocking step began, in the host loop's clock.
        deadline: When its call's deadline passes, in the host loop's clock.
    """

    plugin_id: str
    handler: str
    since: float
    deadline: float

    @classmethod
    def from_beat(cls, blocked: Any, now: float) -> BlockedLoop | None:
        """Read a heartbeat's ``blocked`` field received at ``now``; None if absent or bad."""
        if not isinstance(blocked, dict):
            return None
        try:
            seconds = float(blocked["seconds"])
            deadline_in = float(blocked["deadline_in"])
        except (KeyError, TypeError, ValueError):
            return None
        # The runner's word: bounded and quoted where it is shown, never trusted further.
        return cls(
            plugin_id=str(blocked.get("plugin", ""))[:_MAX_NAME],
            handler=str(blocked.get("handler", ""))[:_MAX_NAME],
            since=now - seconds,
            deadline=now + deadline_in,
        )

    def same_step(self, other: BlockedLoop | None) -> bool:
        """Whether ``other`` describes the same blocking step (for logging it once)."""
        return (
            other is not None
            and (other.plugin_id, other.handler) == (self.plugin_id, self.handler)
            and abs(other.since - self.since) < 0.5
        )

    def describe(self, now: float) -> str:
        """Which handler blocks the loop and for how long, for logs."""
        return (
            f"async handler {self.handler!r} of plugin {self.plugin_id!r} has blocked the "
            f"runner's event loop for {now - self.since:.1f} s"
        )

    def overdue(self, now: float, grace: float) -> str | None:
        """A reason to recycle the runner once the call's deadline passed by ``grace``."""
        if now <= self.deadline + grace:
            return None
        return (
            f"unresponsive: {self.describe(now)}, past its call's deadline; a blocking call "
            "in an async def stalls every call of the runner: make the handler a plain def "
            "(it then runs in a worker thread) or use await asyncio.to_thread(...)"
        )
