"""Replicas: several runners serving one plugin as one pool.

``plugin_replicas = {"<plugin id>": N}`` starts N runners for a plugin. The
pool is the plugin's owner in the component registry, so every call (tools,
commands, events, hooks, APIs) goes through :meth:`RunnerPool.pick`: the
healthy member (ready, its process alive) with the fewest calls in flight, ties
taken in turn. Each member keeps its own socket and supervisor, so a member
that crashes fails only the calls it had in flight and restarts on its own,
while new calls go to the others. A reload replaces members one at a time
(:meth:`RunnerPool.replace`): the new member joins before the old one leaves,
and the old one drains its calls before it stops.

A remote member that is leaving (``draining``: its pod got a SIGTERM) takes no
new call, as one that is stopping: the other members take them. When it was
the only member, a new call is answered at once with ``shutting_down`` (nothing
ran; retry once a new runner has joined) rather than waiting: a remote runner's
replacement is a new process that may never come, unlike a local member,
which a reload replaces before the old one leaves.

Why in-flight count rather than round-robin: tool calls differ by orders of
magnitude in cost, and a member busy with a slow call should not be handed the
next one while another sits idle.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from enum import Enum
from typing import Any, Generic, Protocol, TypeVar

from plughost.runners.supervisor import RunnerSupervisor
from plughost_sdk import wire
from plughost_sdk.errors import RunnerCrashedError
from plughost_sdk.models import ToolExecutionResult

__all__ = ["Member", "Pools", "RunnerPool"]

_GONE = frozenset({"failed", "stopping", "stopped", "draining"})
"""States (by value) of a member that will never take a new call again."""


class Member(Protocol):
    """A pool member: a local runner's supervisor or a remote runner's session."""

    runner_id: str
    pid: int | None

    @property
    def state(self) -> Enum: ...
    @property
    def healthy(self) -> bool: ...
    @property
    def inflight(self) -> int: ...
    async def invoke(
        self, plugin_id: str, tool: str, arguments: dict[str, Any], timeout: float
    ) -> ToolExecutionResult: ...
    async def invoke_component(
        self, plugin_id: str, kind: str, name: str, args: dict[str, Any], timeout: float
    ) -> dict[str, Any]: ...
    async def update_config(
        self, plugin_id: str, config: dict[str, Any], version: str, scope: str = "self"
    ) -> bool: ...
    async def request_content(
        self, method: wire.Method, plugin_id: str, body: dict[str, Any], timeout: float
    ) -> Any: ...


M = TypeVar("M", bound=Member)


def _gone(member: Member) -> bool:
    return str(member.state.value) in _GONE


class RunnerPool(Generic[M]):
    """The runners serving one plugin; calls go to the least-loaded healthy member."""

    def __init__(self, plugin_id: str, members: list[M]) -> None:
        self.plugin_id = plugin_id
        self.members: list[M] = list(members)
        self._turn = itertools.count()

    def __contains__(self, runner: object) -> bool:
        return any(member is runner for member in self.members)

    def __iter__(self) -> Iterator[M]:
        return iter(list(self.members))

    @property
    def runner_id(self) -> str:
        """The first member's id (what single-runner views show)."""
        return self.members[0].runner_id if self.members else ""

    @property
    def pid(self) -> int | None:
        """The pid of the first healthy member, for views that show one."""
        healthy = self.healthy()
        return healthy[0].pid if healthy else None

    @property
    def inflight(self) -> int:
        """Calls in flight across every member."""
        return sum(member.inflight for member in self.members)

    @property
    def leaving(self) -> bool:
        """Whether a member is draining: it finishes its calls, then leaves (a stopped pod)."""
        return any(str(member.state.value) == "draining" for member in self.members)

    def healthy(self) -> list[M]:
        """Members that take calls now: ready, with their process alive."""
        return [member for member in self.members if member.healthy]

    def pick(self) -> M | None:
        """The member for the next call, or None when the pool has none left.

        A healthy member with the fewest calls in flight; when several tie, they
        take turns. With no healthy member, one that is restarting is returned:
        the call then waits for it within its deadline, as with a single runner.
        """
        members = self.members
        if len(members) == 1 and members[0].healthy:  # most plugins: one runner
            return members[0]
        candidates = self.healthy() or [m for m in members if not _gone(m)]
        if not candidates:
            return None
        least = min(member.inflight for member in candidates)
        tied = [member for member in candidates if member.inflight == least]
        return tied[next(self._turn) % len(tied)]

    def add(self, runner: M) -> None:
        """Let ``runner`` take calls too."""
        if runner not in self:
            self.members.append(runner)

    def replace(self, old: M, new: M) -> None:
        """Put ``new`` in ``old``'s place: new calls go to ``new``, ``old`` keeps what it has."""
        for index, member in enumerate(self.members):
            if member is old:
                self.members[index] = new
                return
        self.members.append(new)

    def remove(self, runner: M) -> None:
        """Stop sending calls to ``runner`` (it gave up or is being retired)."""
        self.members = [member for member in self.members if member is not runner]

    async def invoke(
        self, plugin_id: str, tool: str, arguments: dict[str, Any], timeout: float
    ) -> ToolExecutionResult:
        """Run a tool call on one member; never raises.

        A member that turns out to be shutting down (a reload retired it between
        the pick and the send) passes the call to another member.
        """
        tried: list[M] = []
        while True:
            member = self._pick_untried(tried) if tried else self.pick()
            if member is None:
                return ToolExecutionResult.failure(tool, *self._none_left(plugin_id))
            result = await member.invoke(plugin_id, tool, arguments, timeout)
            if result.error_code != "shutting_down":
                return result
            tried.append(member)

    async def invoke_component(
        self, plugin_id: str, kind: str, name: str, args: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        """Run a command, handler, hook or API on one member; never raises."""
        tried: list[M] = []
        while True:
            member = self._pick_untried(tried)
            if member is None:
                message, code = self._none_left(plugin_id)
                return {"success": False, "error": message, "error_code": code}
            reply = await member.invoke_component(plugin_id, kind, name, args, timeout)
            if reply.get("error_code") != "shutting_down":
                return reply
            tried.append(member)

    async def request_content(
        self, method: wire.Method, plugin_id: str, body: dict[str, Any], timeout: float
    ) -> Any:
        """Send a ``resource.read`` or ``prompt.get`` to one member (see the supervisor's).

        Raises:
            RunnerCrashedError: no member is left to serve the plugin.
        """
        member = self.pick()
        if member is None:
            raise RunnerCrashedError(f"plugin {plugin_id} has no runner left to serve it")
        return await member.request_content(method, plugin_id, body, timeout)

    def _none_left(self, plugin_id: str) -> tuple[str, wire.ErrorCode]:
        """Why no member takes a call now (message, code): its runners left, or are leaving."""
        if self.leaving:
            return (
                f"plugin {plugin_id} has no runner to take new calls: its runners are leaving "
                "(draining after a stop); retry once a new runner has joined",
                "shutting_down",
            )
        return f"plugin {plugin_id} has no runner left to serve it", "plugin_crashed"

    def _pick_untried(self, tried: list[M]) -> M | None:
        member = self.pick()
        if member is None or member not in tried:
            return member
        others = [m for m in self.members if not _gone(m) and m not in tried]
        return min(others, key=lambda m: m.inflight) if others else None

    async def update_config(
        self, plugin_id: str, config: dict[str, Any], version: str, scope: str = "self"
    ) -> bool:
        """Deliver configuration to every live member; True when any ran ``on_config_update``.

        Raises:
            RemoteError, RunnerCrashedError, TimeoutError: from the first member that failed.
        """
        delivered = False
        for member in self.members:
            if _gone(member):
                continue
            delivered = await member.update_config(plugin_id, config, version, scope) or delivered
        return delivered


class Pools:
    """The host's pools, by plugin id: which runner belongs to which plugin's replicas."""

    def __init__(self) -> None:
        self._pools: dict[str, RunnerPool[RunnerSupervisor]] = {}

    def get(self, plugin_id: str) -> RunnerPool[RunnerSupervisor] | None:
        """The pool of ``plugin_id``, if it has one."""
        return self._pools.get(plugin_id)

    def ensure(self, plugin_id: str) -> RunnerPool[RunnerSupervisor]:
        """The pool of ``plugin_id``, made empty if it has none yet."""
        pool = self._pools.get(plugin_id)
        if pool is None:
            pool = self._pools[plugin_id] = RunnerPool[RunnerSupervisor](plugin_id, [])
        return pool

    def of(self, runner: RunnerSupervisor) -> RunnerPool[RunnerSupervisor] | None:
        """The pool ``runner`` is a member of, if any."""
        if len(runner.sources) != 1:
            return None
        pool = self._pools.get(runner.plugin_ids[0])
        return pool if pool is not None and runner in pool else None

    def leave(self, runner: RunnerSupervisor) -> bool:
        """Take ``runner`` out of its pool; True when nothing is left serving its plugin."""
        pool = self.of(runner)
        if pool is None:
            return True
        pool.remove(runner)
        if pool.members:
            return False
        del self._pools[pool.plugin_id]
        return True
