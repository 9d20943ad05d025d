"""What the console shows, as JSON-ready data: plugins and runners, tools, MCP servers.

Read from the host at the moment of asking (``host.status()``, the runners, the
tool registry) plus what only the event stream tells: which plugins are
reloading right now and how many times each plugin's runner restarted, since
the host started and within the restart window. Every field a newer
``host.status()`` row carries is passed through as it is, so the page shows it
without a change here.

Each plugin's ``members`` pairs every runner serving it (several for replicas
and remote pools) with where ``host.status()`` says it runs (``local pid N``,
or a remote runner's address and credential), its state and calls in flight.
"""

from __future__ import annotations

import collections
import dataclasses
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psutil

from plughost.events import EventKind, LifecycleEvent
from plughost.host import PluginHost
from plughost.runners.supervisor import RunnerState, RunnerSupervisor
from plughost.web.stats import CallStats
from plughost_sdk.models import ToolAvailabilityContext, ToolSpec

__all__ = [
    "EventTracker",
    "ProcessInfo",
    "components",
    "host_sandbox",
    "mcp_servers",
    "plugins",
    "runner_process",
    "tools",
]

_RELOAD_ENDS = frozenset(
    {EventKind.RELOAD_SUCCEEDED, EventKind.RELOAD_FAILED, EventKind.RELOAD_ROLLED_BACK}
)


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    """A runner process as the operating system sees it."""

    rss: int
    started: float


def runner_process(pid: int | None) -> ProcessInfo | None:
    """Resident memory (with children) and start time of ``pid``; None if it is gone."""
    if not pid:
        return None
    try:
        process = psutil.Process(pid)
        with process.oneshot():
            rss = process.memory_info().rss
            started = process.create_time()
        for child in process.children(recursive=True):
            try:
                rss += child.memory_info().rss
            except psutil.Error:
                continue
    except psutil.Error:
        return None
    return ProcessInfo(rss, started)


@dataclass(slots=True)
class _Restarts:
    total: int = 0
    last: float | None = None
    recent: collections.deque[float] = dataclasses.field(default_factory=collections.deque)


class EventTracker:
    """Facts only the event stream tells: reloads under way, restarts per plugin.

    Restarts are kept per plugin, not per runner (a reload starts a runner of
    another id), and counted twice: since the host started, which never
    forgets, and within the last ``restart_window`` seconds, which is what the
    restart policy weighs (this only reads the events; the policy is the
    supervisor's).
    """

    def __init__(self, restart_window: float, clock: Callable[[], float] = time.time) -> None:
        self._window = restart_window
        self._clock = clock
        self.reloading: set[str] = set()
        self._restarts: dict[str, _Restarts] = {}

    def observe(self, event: LifecycleEvent) -> None:
        """An event bus callback."""
        if event.kind is EventKind.RELOAD_STARTED and event.plugin_id:
            self.reloading.add(event.plugin_id)
        elif event.kind in _RELOAD_ENDS and event.plugin_id:
            self.reloading.discard(event.plugin_id)
        elif event.kind is EventKind.RUNNER_RESTARTED:
            served = event.details.get("plugins")
            if not isinstance(served, list) or not served:
                served = [event.plugin_id] if event.plugin_id else []
            for plugin_id in served:
                kept = self._restarts.setdefault(str(plugin_id), _Restarts())
                kept.total += 1
                kept.last = event.time
                kept.recent.append(event.time)

    def restarts(self, plugin_id: str) -> dict[str, Any]:
        """``plugin_id``'s restarts: since start, within the window, and the last one's time."""
        kept = self._restarts.get(plugin_id)
        if kept is None:
            return {"total": 0, "recent": 0, "window_s": self._window, "last": None}
        while kept.recent and kept.recent[0] < self._clock() - self._window:
            kept.recent.popleft()
        return {
            "total": kept.total,
            "recent": len(kept.recent),
            "window_s": self._window,
            "last": kept.last,
        }


def plugins(host: PluginHost, stats: CallStats, tracker: EventTracker) -> list[dict[str, Any]]:
    """One row per plugin: its status, problems, runner and call figures."""
    rows = []
    for status in host.status():
        row = dataclasses.asdict(status)
        key = status.plugin_id
        runner = host.runner_for(key) if status.runner_id else None
        if key in tracker.reloading:
            row["state"] = "reloading"
        elif runner is not None and runner.state is RunnerState.FAILED:
            row["state"] = "gave up"
        row["enabled"] = host.components.is_plugin_enabled(key)
        problem = host.problems.get(key)
        row["problems"] = [] if problem is None else [_problem(problem)]
        row["runner"] = _runner(runner, tracker, key) if runner is not None else None
        row["members"] = _members(host, status.runners, status.where, key)
        row["calls"] = stats.summary(key)
        rows.append(row)
    return rows


def _members(
    host: PluginHost, runner_ids: tuple[str, ...], where: tuple[str, ...], plugin_id: str
) -> list[dict[str, Any]]:
    """Every runner serving ``plugin_id``: where it is, and how it is doing."""
    known: dict[str, Any] = {r.runner_id: r for r in host.runners_for(plugin_id)}
    pool = host.remote.pools.get(plugin_id) if host.remote is not None else None
    known.update({m.runner_id: m for m in pool.members} if pool is not None else {})
    members = []
    for runner_id, place in zip(runner_ids, where, strict=False):
        member = known.get(runner_id)
        members.append(
            {
                "runner_id": runner_id,
                "where": place,
                "remote": not place.startswith("local "),
                "state": member.state.value if member is not None else None,
                "healthy": bool(member.healthy) if member is not None else False,
                "inflight": int(member.inflight) if member is not None else 0,
            }
        )
    return members


def _problem(problem: Any) -> dict[str, Any]:
    return {
        "stage": problem.stage,
        "file": problem.file or str(problem.path),
        "line": problem.line,
        "reason": problem.reason,
        "traceback": problem.traceback,
    }


def _runner(runner: RunnerSupervisor, tracker: EventTracker, plugin_id: str) -> dict[str, Any]:
    ready = runner.state is RunnerState.READY
    restarts = tracker.restarts(plugin_id)
    info = runner_process(runner.pid) if ready else None
    return {
        "runner_id": runner.runner_id,
        "state": runner.state.value,
        "pid": runner.pid if ready else None,
        "uptime_s": round(time.time() - info.started, 1) if info else None,
        "memory_bytes": info.rss if info else None,
        "restarts": restarts["total"],  # since the host started
        "restarts_recent": restarts["recent"],  # within the restart window
        "restart_window_s": restarts["window_s"],
        "last_restart": restarts["last"],
        "plugins": runner.plugin_ids,
        "last_error": runner.last_error,
    }


async def tools(host: PluginHost, session_id: str = "") -> list[dict[str, Any]]:
    """Every tool with its schema, visibility, provider and enabled state.

    ``enabled`` is the global switch; ``enabled_in_session`` says whether a
    model in ``session_id`` would see and may call it (None without a session).
    Disabled plugin tools are listed too, so they can be switched back on.
    """
    specs = await host.tools.list_tools(include_hidden=True)
    in_session: set[str] | None = None
    if session_id:
        context = ToolAvailabilityContext(session_id=session_id)
        in_session = {s.name for s in await host.tools.list_tools(context, include_hidden=True)}
    rows = [_tool(spec, True, in_session) for spec in specs]
    listed = {spec.tool_id for spec in specs}
    for component in host.components.all():
        if f"plugin:{component.plugin_id}:{component.name}" in listed:
            continue
        enabled = host.components.is_enabled(component.full_name)
        rows.append(
            {
                "name": host.query.model_name(component),
                "full_name": component.full_name,
                "description": component.description,
                "provider": "plugins",
                "provider_type": "plugin",
                "plugin_id": component.plugin_id,
                "component_type": component.component_type,
                "visibility": component.visibility,
                "parameters": component.parameters_schema,
                # Enabled yet not listed: another tool of the same name came first.
                "enabled": enabled and host.components.is_plugin_enabled(component.plugin_id),
                "enabled_in_session": False if in_session is not None else None,
            }
        )
    return rows


def _tool(spec: ToolSpec, enabled: bool, in_session: set[str] | None) -> dict[str, Any]:
    return {
        "name": spec.name,
        "full_name": spec.metadata.get("full_name"),
        "description": spec.description,
        "provider": spec.provider_name,
        "provider_type": spec.provider_type,
        "plugin_id": spec.metadata.get("plugin_id"),
        "component_type": spec.metadata.get("component_type", "tool"),
        "visibility": spec.visibility,
        "parameters": spec.parameters_schema,
        "enabled": enabled,
        "enabled_in_session": None if in_session is None else spec.name in in_session,
    }


def components(host: PluginHost) -> list[dict[str, Any]]:
    """Every command, event handler, hook handler, API and home card, with its enabled state."""
    return [
        {
            "key": component.key,
            "name": component.name,
            "kind": component.kind,
            "plugin_id": component.plugin_id,
            "description": component.description,
            "metadata": component.metadata,
            "enabled": host.components.component_enabled(component),
        }
        for component in host.components.components()
    ]


def host_sandbox(host: PluginHost) -> dict[str, Any] | None:
    """The protections every runner of this host gets, and why the others are missing.

    The page compares each plugin's ``sandbox`` with ``active`` to say what a
    runner lacks; None until the host has started.
    """
    report = host.sandbox
    if report is None:
        return None
    return {
        "enabled": report.enabled,
        "active": list(report.active),
        "missing": dict(sorted(report.missing.items())),
    }


def mcp_servers(host: PluginHost) -> list[dict[str, Any]]:
    """Every upstream MCP server the host's registry consumes, with its connection state.

    A host none of whose providers was made by :mod:`plughost.mcp.provider` has
    not imported it (nor the MCP SDK): the console does not import it for them.
    """
    module = sys.modules.get("plughost.mcp.provider")
    if module is None:
        return []
    rows = []
    for provider in host.tools.providers:
        if not isinstance(provider, module.MCPToolProvider):
            continue
        for name, status in sorted(provider.status().items()):
            rows.append(
                {
                    "name": name,
                    "provider": provider.provider_name,
                    "state": status.state.value,
                    "transport": status.transport,
                    "reason": status.reason,
                    "tools": status.tools,
                    "failures": status.failures,
                    "retry_in": status.retry_in,
                    "sandbox": list(status.sandbox),
                    "network": list(status.network),
                    "denied": status.denied,
                    "refused": list(status.refused),
                }
            )
    return rows
