"""The runner processes the host starts itself: which plugins share one, replicas, start, retire.

:class:`LocalRunners` keeps the books of every runner the host started: it groups
plugins into runners (one each, or one for all but those that declare
capabilities), starts a plugin's replicas as a pool, starts a reload's candidate
without registering it, and retires runners that serve nothing. What a runner
reports when it is ready or lost is applied here too: its tools and components
replace the plugin's in the registry (owned by the runner, or by its pool), and a
plugin that failed is recorded as a problem. Making a supervisor from the host's
process resources (ZeroMQ context, sockets, keys, fork server, sandbox) is the
host's: :class:`LocalRunners` is handed a factory. Runners on other machines are
:mod:`plughost.remote.registration`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from plughost.events import EventBus, EventKind, LifecycleEvent
from plughost.plugins.command_patterns import FIX
from plughost.plugins.component_info import PluginComponent
from plughost.plugins.components import ComponentRegistry, ToolComponent
from plughost.plugins.source import PluginProblem, PluginSource
from plughost.redaction import SecretRedactor
from plughost.runners.pool import Pools, RunnerPool
from plughost.runners.supervisor import (
    LostCallback,
    ReadyCallback,
    RunnerState,
    RunnerSupervisor,
    wait_all_settled,
)
from plughost.settings import HostSettings

__all__ = ["HostBooks", "LocalRunners", "SupervisorFactory"]

log = logging.getLogger(__name__)

SupervisorFactory = Callable[
    [str, list[PluginSource], ReadyCallback, LostCallback], RunnerSupervisor
]
"""Makes a runner's supervisor: ``(runner_id, sources, on_ready, on_lost)``."""


class HostBooks(Protocol):
    """The host's records its runners are kept in: :class:`~plughost.host.PluginHost`.

    A protocol rather than an import keeps the dependency one way. The reloader's
    view of the host (:class:`~plughost.reloader.ReloadTarget`) extends this one.
    """

    settings: HostSettings
    sources: dict[str, PluginSource]
    problems: dict[str, PluginProblem]
    components: ComponentRegistry
    events: EventBus
    redactor: SecretRedactor

    def record_problem(self, problem: PluginProblem, runner_id: str | None = None) -> None: ...


class LocalRunners:
    """The supervised runners of one host, their replica pools and their tasks."""

    def __init__(
        self,
        books: HostBooks,
        *,
        write_planned_config: Callable[[RunnerSupervisor, str, str], None],
        new_supervisor: SupervisorFactory,
    ) -> None:
        """Keep the runners of the host whose records are ``books``.

        Args:
            books: The host's records, read at every use.
            write_planned_config: Writes the config.toml a runner planned for a plugin.
            new_supervisor: Makes the supervisor of a new runner.
        """
        self._books = books
        self._write_planned_config = write_planned_config
        self._new_supervisor = new_supervisor
        self._runners: dict[str, RunnerSupervisor] = {}
        self._pools = Pools()  # plugins with replicas
        self._tasks: dict[str, asyncio.Task[None]] = {}

    async def start(self, sources: list[PluginSource]) -> list[RunnerSupervisor]:
        """Start runners for ``sources`` (grouped per the settings) and wait for them."""
        settings = self._books.settings
        for source in sources:  # every id is a host word before any config is screened
            self._protect(source)
        for source in sources:
            self._books.sources[source.plugin_id] = source
            self._books.redactor.learn_config(source.plugin_id, source.config)
            for warning in source.warnings:
                log.warning("plugin %s: %s (%s)", source.plugin_id, warning, source.path)
        if settings.runner_grouping == "single" and sources:
            if any(n > 1 for n in settings.plugin_replicas.values()):
                log.warning("plugin_replicas is ignored with runner_grouping = 'single'")
            grouped, alone = self._groupable(sources)
            groups = [("runner-all", grouped)] if grouped else []
            groups += [(_runner_id(s.plugin_id), [s]) for s in alone]
        else:
            groups = [
                (_runner_id(s.plugin_id), [s])
                for s in sources
                for _ in range(self.replicas(s.plugin_id))
            ]
        runners = []
        for runner_id, group in groups:
            runner = self._launch(runner_id, group)
            runners.append(runner)
            if len(group) == 1 and self.replicas(group[0].plugin_id) > 1:
                self._pools.ensure(group[0].plugin_id).add(runner)
        await wait_all_settled(runners, self._settle_timeout())
        for runner in runners:
            if runner.state is not RunnerState.STARTING and not runner.report.get("loaded"):
                if self._pools.leave(runner):
                    self._never_ready(runner)
                await self._retire(runner)
        return runners

    def _groupable(
        self, sources: list[PluginSource]
    ) -> tuple[list[PluginSource], list[PluginSource]]:
        """Split ``sources`` into those that share the single runner and those kept apart.

        Plugins in one process can act as each other (call the host in another's
        name, read its memory), so one that declares capabilities gets a runner of its
        own unless the operator lets it share (``group_capability_plugins``).
        """
        if self._books.settings.group_capability_plugins:
            return sources, []
        grouped = [s for s in sources if not s.manifest.capabilities]
        alone = [s for s in sources if s.manifest.capabilities]
        for source in alone:
            log.warning(
                "plugin %s declares capabilities (%s): it runs in a runner of its own, not in "
                "the shared one, since plugins sharing a runner can act as each other; set "
                "group_capability_plugins = true under [host] to group it anyway",
                source.plugin_id,
                ", ".join(source.manifest.capabilities),
            )
        return grouped, alone

    def _protect(self, source: PluginSource, names: list[str] | None = None) -> None:
        """Make the plugin's id, folder and component names host words no secret may hide."""
        words = [str(source.path), source.path.name, *(names or [])]
        self._books.redactor.protect(source.plugin_id, words)

    def _settle_timeout(self) -> float:
        runner = self._books.settings.runner
        return runner.ready_timeout + runner.on_load_timeout

    def replicas(self, plugin_id: str) -> int:
        """How many runners serve ``plugin_id`` (``plugin_replicas``; 1 without replicas)."""
        settings = self._books.settings
        if settings.runner_grouping == "single":
            return 1
        return settings.plugin_replicas.get(plugin_id, 1)

    def pool_for(self, plugin_id: str) -> RunnerPool[RunnerSupervisor] | None:
        """The pool of ``plugin_id``'s replicas, when it has several runners."""
        return self._pools.get(plugin_id)

    async def add_replicas(self, source: PluginSource) -> None:
        """Start the runners a plugin lacks for its ``plugin_replicas`` (a plugin added live)."""
        plugin_id = source.plugin_id
        wanted = self.replicas(plugin_id)
        current = self.runners_for(plugin_id)
        if wanted <= 1 or len(current) >= wanted:
            return
        pool = self._pools.ensure(plugin_id)
        for runner in current:
            pool.add(runner)
        owner = self._books.components.owner(plugin_id)
        if owner is not None and owner is not pool:  # the pool takes over the plugin's calls
            self._runner_ready(current[0], current[0].report)
        missing = wanted - len(current)
        added = [self._launch(_runner_id(plugin_id), [source]) for _ in range(missing)]
        for runner in added:
            pool.add(runner)
        await wait_all_settled(added, self._settle_timeout())
        for runner in added:
            if runner.state is not RunnerState.STARTING and not runner.report.get("loaded"):
                self._pools.leave(runner)
                await self._retire(runner)

    def runner_for(self, plugin_id: str) -> RunnerSupervisor | None:
        """The runner currently serving ``plugin_id`` (with replicas: a healthy one)."""
        owner = self._books.components.owner(plugin_id)
        if isinstance(owner, RunnerSupervisor):
            return owner
        pool = self._pools.get(plugin_id)
        if pool is not None and owner is pool and pool.members:
            return (pool.healthy() or pool.members)[0]
        return next((r for r in self._runners.values() if plugin_id in r.sources), None)

    def runners_for(self, plugin_id: str) -> list[RunnerSupervisor]:
        """Every runner serving ``plugin_id``: its replicas, or its one runner."""
        pool = self._pools.get(plugin_id)
        if pool is not None:
            return list(pool)
        runner = self.runner_for(plugin_id)
        return [runner] if runner is not None else []

    def runners(self) -> list[RunnerSupervisor]:
        """Every supervised runner."""
        return list(self._runners.values())

    def _never_ready(self, runner: RunnerSupervisor) -> None:
        """Report the plugins of a runner that died before it could say how loading went."""
        reported = {str(f.get("plugin_id")) for f in runner.report.get("failed", [])}
        reason = runner.last_error or "the runner stopped before it was ready"
        for plugin_id, source in runner.sources.items():
            if plugin_id not in reported and plugin_id not in self._books.problems:
                problem = PluginProblem(source.path, "start", reason, plugin_id=plugin_id)
                self._books.record_problem(problem, runner.runner_id)

    async def start_candidate(self, source: PluginSource) -> RunnerSupervisor:
        """Start a new version of a plugin in its own runner without registering it yet."""
        self._protect(source)
        self._books.redactor.learn_config(source.plugin_id, source.config)
        runner = self._launch(_runner_id(source.plugin_id), [source], candidate=True)
        await runner.wait_settled(self._settle_timeout())
        return runner

    def adopt(self, runner: RunnerSupervisor, source: PluginSource) -> None:
        """Make a candidate runner the plugin's owner: its tools replace the old ones at once."""
        self._books.sources[source.plugin_id] = source
        self._books.problems.pop(str(source.path), None)
        runner.on_ready = self._runner_ready
        runner.on_lost = self._runner_lost
        self._runner_ready(runner, runner.report)

    async def forget(self, runner: RunnerSupervisor) -> None:
        """Drop a stopped runner from the books."""
        self._pools.leave(runner)
        self._runners.pop(runner.runner_id, None)
        task = self._tasks.pop(runner.runner_id, None)
        if task is not None:
            await task

    async def aclose(self) -> None:
        """Stop every runner and wait for their supervisors to finish."""
        runners = list(self._runners.values())
        await asyncio.gather(*(r.stop() for r in runners), return_exceptions=True)
        for task in self._tasks.values():
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    def _launch(
        self, runner_id: str, sources: list[PluginSource], *, candidate: bool = False
    ) -> RunnerSupervisor:
        runner_id = self._unique_runner_id(runner_id)
        runner = self._new_supervisor(
            runner_id,
            sources,
            _ignore if candidate else self._runner_ready,
            _ignore if candidate else self._runner_lost,
        )
        self._runners[runner_id] = runner
        self._tasks[runner_id] = asyncio.create_task(self._supervise(runner))
        return runner

    def _unique_runner_id(self, runner_id: str) -> str:
        candidate, n = runner_id, 1
        while candidate in self._runners:
            n += 1
            candidate = f"{runner_id}-{n}"
        return candidate

    async def _supervise(self, runner: RunnerSupervisor) -> None:
        try:
            await runner.run()
        except Exception:
            log.exception("supervisor of runner %s failed", runner.runner_id)

    async def _retire(self, runner: RunnerSupervisor) -> None:
        """Stop a runner that serves nothing and forget it."""
        await runner.stop(drain=0)
        task = self._tasks.pop(runner.runner_id, None)
        if task is not None:
            await task
        self._runners.pop(runner.runner_id, None)

    def _runner_ready(self, runner: RunnerSupervisor, report: dict[str, Any]) -> None:
        for loaded in report.get("loaded", []):
            plugin_id = str(loaded["plugin_id"])
            if isinstance(loaded.get("config_file"), str):
                self._write_planned_config(runner, plugin_id, loaded["config_file"])
            components = [ToolComponent.from_wire(plugin_id, d) for d in loaded.get("tools", [])]
            others = [PluginComponent.from_wire(plugin_id, d) for d in loaded.get("components", [])]
            owner = self._pools.of(runner) or runner
            self._books.components.replace_plugin(plugin_id, components, owner, others, loaded)
            named = [c.name for c in components] + [c.name for c in others]
            self._protect(runner.sources[plugin_id], named)
            self._report_refused_commands(runner, others)
            self._books.problems.pop(plugin_id, None)
            names = ", ".join(c.name for c in components) or "no tools"
            self._books.events.emit(
                LifecycleEvent(
                    EventKind.PLUGIN_LOADED,
                    f"plugin {plugin_id} loaded ({names})",
                    plugin_id=plugin_id,
                    runner_id=runner.runner_id,
                    details={
                        "tools": [c.name for c in components],
                        "components": [c.key for c in others],
                        "pid": runner.pid,
                    },
                )
            )
        for failed in report.get("failed", []):
            plugin_id = str(failed.get("plugin_id"))
            self._books.components.remove_plugin(plugin_id)
            problem = PluginProblem(
                path=runner.sources[plugin_id].path,  # the host's record, not the runner's
                stage=str(failed.get("stage", "load")),
                reason=str(failed.get("reason", "")),
                plugin_id=plugin_id,
                file=str(failed.get("file", "")),
                line=int(failed.get("line", 0) or 0),
                traceback=str(failed.get("traceback", "")),
            )
            self._books.record_problem(problem, runner.runner_id)

    def _report_refused_commands(
        self, runner: RunnerSupervisor, components: list[PluginComponent]
    ) -> None:
        """Say which commands never run because the host refuses their pattern."""
        for command in components:
            why = command.pattern_error if command.kind == "COMMAND" else ""
            if why:
                self._books.events.emit(
                    LifecycleEvent(
                        EventKind.COMMAND_REFUSED,
                        f"plugin {command.plugin_id}: command {command.name} never runs: its "
                        f"pattern {command.pattern[:200]!r} is refused: {why}; {FIX}",
                        plugin_id=command.plugin_id,
                        runner_id=runner.runner_id,
                        details={"command": command.name, "reason": why},
                    )
                )

    def _runner_lost(self, runner: RunnerSupervisor, reason: str) -> None:
        pool = self._pools.of(runner)
        if not self._pools.leave(runner):  # its fellow replicas keep serving the plugin
            log.warning(
                "runner %s of plugin %s left its pool: %s",
                runner.runner_id,
                ", ".join(runner.plugin_ids),
                self._books.redactor.redact(reason, runner.plugin_ids),
            )
            return
        stage = "crashed" if runner.report.get("loaded") else "start"
        for plugin_id in runner.plugin_ids:
            owner = self._books.components.owner(plugin_id)
            if owner is runner or (pool is not None and owner is pool):
                self._books.components.remove_plugin(plugin_id)
            source = self._books.sources.get(plugin_id)
            path = source.path if source else Path()
            self._books.record_problem(
                PluginProblem(path, stage, reason, plugin_id=plugin_id), runner.runner_id
            )


def _ignore(*_: Any) -> None:
    """Callbacks of a reload candidate: nothing is registered until it is adopted."""


def _runner_id(plugin_id: str) -> str:
    return "runner-" + re.sub(r"[^A-Za-z0-9_-]", "-", plugin_id)
