"""What ``host.status()`` shows: one row per plugin, local, remote or failed.

The rows are read off the host's books (its plugin sources, problems, component
registry and runners) at the moment they are asked for; nothing here is kept up
to date. Kept apart from :mod:`plughost.host` because the rows are the operator's
view (the CLI's table, the web console), not part of running plugins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from plughost.plugins.components import ComponentRegistry
from plughost.plugins.query import ComponentQueryService
from plughost.plugins.source import PluginProblem, PluginSource
from plughost.remote.registration import RemoteRunners
from plughost.runners.supervisor import RunnerSupervisor

__all__ = ["PluginStatus", "StatusSource", "learned_network", "learned_writes", "plugin_statuses"]


@dataclass(frozen=True, slots=True)
class PluginStatus:
    """One plugin as an operator sees it."""

    plugin_id: str
    version: str
    path: str
    state: str
    runner_id: str | None
    pid: int | None
    tools: tuple[str, ...]
    error: str = ""
    sandbox: tuple[str, ...] = ()  # the protections its runner process is confined by
    components: tuple[str, ...] = ()  # commands, handlers, APIs, cards: KIND:plugin_id.name
    runners: tuple[str, ...] = ()  # every runner serving it (several with replicas)
    where: tuple[str, ...] = ()  # where each of those runners is: "local pid N", or an address
    network: tuple[str, ...] = ()  # the destinations its runner may reach (network grants)
    denied: int = 0  # connections its runner's gate refused since it started


class StatusSource(Protocol):
    """What the rows are read from: :class:`~plughost.host.PluginHost`."""

    sources: dict[str, PluginSource]
    problems: dict[str, PluginProblem]
    components: ComponentRegistry
    query: ComponentQueryService
    remote: RemoteRunners | None

    def runner_for(self, plugin_id: str) -> RunnerSupervisor | None: ...
    def runners_for(self, plugin_id: str) -> list[RunnerSupervisor]: ...
    def runners(self) -> list[RunnerSupervisor]: ...


def plugin_statuses(host: StatusSource) -> list[PluginStatus]:
    """Every known plugin, loaded or not, sorted by id."""
    rows: dict[str, PluginStatus] = {}
    for plugin_id, source in host.sources.items():
        runner = host.runner_for(plugin_id)
        tools = tuple(host.query.model_name(c) for c in host.components.by_plugin(plugin_id))
        problem = host.problems.get(plugin_id)
        loaded = host.components.owner(plugin_id) is not None
        rows[plugin_id] = PluginStatus(
            plugin_id=plugin_id,
            version=source.manifest.version,
            path=str(source.path),
            state="loaded" if loaded else ("failed" if problem else "starting"),
            runner_id=runner.runner_id if runner else None,
            pid=runner.pid if runner and loaded else None,
            tools=tools,
            error=problem.describe() if problem else "",
            sandbox=runner.protections if runner and loaded else (),
            components=tuple(c.key for c in host.components.components_of(plugin_id)),
            runners=tuple(r.runner_id for r in host.runners_for(plugin_id)),
            where=tuple(f"local pid {r.pid}" for r in host.runners_for(plugin_id)),
            network=tuple(d.text for d in runner.grants.destinations) if runner else (),
            denied=sum(r.gate.denied.total() for r in host.runners_for(plugin_id) if r.gate),
        )
    remote = host.remote
    for plugin_id, pool in (remote.pools if remote else {}).items():
        tools = tuple(host.query.model_name(c) for c in host.components.by_plugin(plugin_id))
        rows.setdefault(
            plugin_id,
            PluginStatus(
                plugin_id=plugin_id,
                version=remote.versions.get(plugin_id, "") if remote else "",
                path="",
                state="loaded" if pool.healthy() else "draining" if pool.leaving else "lost",
                runner_id=pool.runner_id or None,
                pid=None,
                tools=tools,
                runners=tuple(m.runner_id for m in pool.members),
                where=tuple(m.where for m in pool.members),
                error=remote.problems.get(plugin_id, "") if remote else "",
            ),
        )
    for key, problem in host.problems.items():
        if key not in rows:
            rows[key] = PluginStatus(
                key, "", str(problem.path), "failed", None, None, (), problem.describe()
            )
    return [rows[k] for k in sorted(rows)]


def learned_writes(host: StatusSource) -> dict[str, list[str]]:
    """The paths the sandbox refused each plugin, as write grants to paste."""
    learned: dict[str, list[str]] = {}
    for runner in host.runners():
        for plugin_id in runner.plugin_ids:
            for path in runner.refusals.paths(plugin_id):
                found = learned.setdefault(plugin_id, [])
                if path not in found:
                    found.append(path)
    return {k: sorted(v) for k, v in sorted(learned.items())}


def learned_network(host: StatusSource) -> dict[str, list[str]]:
    """Learn mode's findings: each plugin's destinations, as grants to paste."""
    learned: dict[str, list[str]] = {}
    for runner in host.runners():
        if runner.gate is not None:
            for plugin_id in runner.plugin_ids:
                found = learned.setdefault(plugin_id, [])
                found += [g for g in runner.gate.used if g not in found]
    return {k: sorted(v) for k, v in sorted(learned.items()) if v}
