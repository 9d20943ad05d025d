"""Hot reload, one plugin at a time, blue/green, without failing a call.

A source change starts the new version in a fresh runner while the old one
keeps serving. Only when the new version has loaded (imported, created,
configured, ``on_load`` done) are the plugin's components and owner swapped
in one step; calls already running on the old runner finish (it drains under a
deadline), new calls go to the new one, then the old runner stops. A broken
edit never reaches the registry: the new runner is discarded, the error is
reported with file, line and reason, and the old version keeps serving.

A change to ``config.toml`` alone is delivered to the running instance
(``on_config_update``), with no restart. A plugin with replicas is reloaded one
member at a time: a new member joins the pool, then one old member leaves and
drains, so the pool never has fewer members serving than before. Requests for a plugin that is
already reloading are coalesced into one more reload after the current one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from pathlib import Path
from typing import Any, Protocol

from plughost.dependencies import DependencyError, PluginEnvironments
from plughost.dependencies.environments import problem_of
from plughost.events import EventKind, LifecycleEvent
from plughost.plugins.bindings import IdBindings
from plughost.plugins.source import (
    PluginProblem,
    PluginSource,
    read_config,
    read_plugin,
    write_config,
)
from plughost.plugins.watcher import ChangeKind, PluginChange, PluginWatcher
from plughost.runners.channel import RemoteError
from plughost.runners.config_subscriptions import subscribed_scopes
from plughost.runners.fleet import HostBooks
from plughost.runners.pool import RunnerPool
from plughost.runners.supervisor import RunnerState, RunnerSupervisor
from plughost_sdk.errors import ManifestError, RunnerCrashedError
from plughost_sdk.manifest import MANIFEST_FILE

__all__ = ["PluginReloader", "ReloadTarget"]

_OVER = frozenset({RunnerState.FAILED, RunnerState.STOPPED})

log = logging.getLogger(__name__)


class ReloadTarget(HostBooks, Protocol):
    """What the reloader needs of the host it reloads: :class:`~plughost.host.PluginHost`.

    A protocol rather than an import keeps the dependency one way: the host owns a
    reloader, the reloader only sees this narrow view of the host: its records
    (:class:`~plughost.runners.fleet.HostBooks`) and how to start and drop runners.
    """

    bindings: IdBindings
    packages: PluginEnvironments

    def plugin_id_at(self, path: Path) -> str | None: ...
    async def start_candidate(self, source: PluginSource) -> RunnerSupervisor: ...
    def adopt(self, runner: RunnerSupervisor, source: PluginSource) -> None: ...
    async def forget_runner(self, runner: RunnerSupervisor) -> None: ...
    def runner_for(self, plugin_id: str) -> RunnerSupervisor | None: ...
    def runners(self) -> list[RunnerSupervisor]: ...
    def runners_for(self, plugin_id: str) -> list[RunnerSupervisor]: ...
    async def add_replicas(self, source: PluginSource) -> None: ...
    def pool_for(self, plugin_id: str) -> RunnerPool[RunnerSupervisor] | None: ...


class PluginReloader:
    """Applies plugin folder changes to a running :class:`~plughost.host.PluginHost`."""

    def __init__(self, host: ReloadTarget) -> None:
        self._host = host
        self._busy: dict[Path, asyncio.Event] = {}
        self._again: dict[Path, PluginChange] = {}

    async def watch(self, watcher: PluginWatcher) -> None:
        """Apply every change ``watcher`` reports until cancelled."""
        async with asyncio.TaskGroup() as group:
            async for batch in watcher.changes():
                for change in batch:
                    group.create_task(self._apply_reported(change))

    async def _apply_reported(self, change: PluginChange) -> None:
        """Apply one change; should it fail unexpectedly, report it and keep watching."""
        try:
            await self.apply(change)
        except Exception as exc:  # one folder's failure must not end every plugin's reloads
            log.exception("applying a change to %s failed", change.path)
            plugin_id = self._host.plugin_id_at(change.path)
            self._emit(
                EventKind.RELOAD_FAILED,
                f"reload of {plugin_id or change.path.name} failed: {exc!r}",
                plugin_id,
                stage="reload",
                reason=repr(exc),
                file=str(change.path),
            )

    async def apply(self, change: PluginChange) -> None:
        """Apply one change; a change for a plugin already being handled is coalesced."""
        key = change.path.resolve()
        if key in self._busy:
            self._again[key] = _merge(self._again.get(key), change)
            await self._busy[key].wait()
            return
        done = self._busy[key] = asyncio.Event()
        try:
            while True:
                await self._apply_once(change)
                follow_up = self._again.pop(key, None)
                if follow_up is None:
                    break
                change = follow_up
        finally:
            del self._busy[key]
            done.set()

    async def _apply_once(self, change: PluginChange) -> None:
        plugin_id = self._host.plugin_id_at(change.path)
        if change.kind is ChangeKind.REMOVED or not change.path.exists():
            if plugin_id is not None:
                await self.unload(plugin_id)
            await self._forget_folder(change.path.resolve())
            return
        serving = plugin_id is not None and self._host.components.owner(plugin_id) is not None
        if plugin_id is not None and serving and change.kind is ChangeKind.CONFIG:
            await self.update_config(plugin_id)
            return
        await self.reload_path(change.path)

    async def _forget_folder(self, folder: Path) -> None:
        """A folder is gone: its row goes, and a folder it kept from an id may now have it."""
        self._host.problems.pop(str(folder), None)
        left = self._host.bindings.forget_folder(folder)
        if left is not None and self._host.plugin_id_at(left) is None:
            log.info("%s is now the only folder claiming its plugin id; loading it", left)
            await self.apply(PluginChange(left, ChangeKind.SOURCE))

    async def reload(self, plugin_id: str) -> bool:
        """Reload a plugin by id (the embedder's API); True when the new version serves."""
        source = self._host.sources.get(plugin_id)
        if source is None:
            raise KeyError(f"no plugin {plugin_id!r} is known to this host")
        return await self.reload_path(source.path)

    async def reload_path(self, path: Path) -> bool:
        """Load the plugin folder at ``path`` anew; keep the old version if that fails."""
        old_id = self._host.plugin_id_at(path)
        started = time.perf_counter()
        self._emit(
            EventKind.RELOAD_STARTED, f"reloading {old_id or path.name}", old_id, path=str(path)
        )
        try:
            source = await asyncio.to_thread(read_plugin, path)  # parsing is off the loop
        except ManifestError as exc:
            problem = PluginProblem(path, "manifest", "; ".join(exc.problems), old_id, exc.path)
            return self._failed(problem, old_id)
        refusal = self._host.bindings.claim(source.plugin_id, source.path)
        if refusal is not None:  # another folder owns the id: the owner and this one keep theirs
            file = str(source.path / MANIFEST_FILE)
            problem = PluginProblem(source.path, "duplicate", refusal, source.plugin_id, file)
            return self._failed(problem, old_id)
        self._host.bindings.announce(self._host.events)
        await self._host.bindings.save_soon()
        if old_id is not None and old_id != source.plugin_id:
            await self.unload(old_id)
        try:  # its packages, installed (or found) before the new version starts
            source = await self._host.packages.prepare(source)
        except DependencyError as exc:
            return self._failed(problem_of(source, exc), source.plugin_id)
        old_owner = self._host.components.owner(source.plugin_id)
        pool = self._host.pool_for(source.plugin_id)
        if pool is not None and old_owner is pool:
            return await self._roll(pool, source, started)
        candidate = await self._host.start_candidate(source)
        failure = _candidate_failure(candidate, source)
        if failure is not None:
            await candidate.stop(drain=0)
            await self._host.forget_runner(candidate)
            return self._failed(failure, source.plugin_id)
        self._host.adopt(candidate, source)
        if isinstance(old_owner, RunnerSupervisor) and old_owner is not candidate:
            await self._retire(old_owner, source.plugin_id)
        for stale in self._host.runners():  # e.g. a runner that gave up before this fix
            if (
                stale is not candidate
                and source.plugin_id in stale.sources
                and stale.state in _OVER
            ):
                await self._retire(stale, source.plugin_id)
        await self._host.add_replicas(source)
        await self._succeeded(source, started, candidate.pid)
        return True

    async def _roll(
        self, pool: RunnerPool[RunnerSupervisor], source: PluginSource, started: float
    ) -> bool:
        """Replace a pool's members one at a time, each new one ready before an old one leaves."""
        old_members = list(pool)
        pid: int | None = None
        for index, old in enumerate(old_members):
            candidate = await self._host.start_candidate(source)
            failure = _candidate_failure(candidate, source)
            if failure is not None:
                await candidate.stop(drain=0)
                await self._host.forget_runner(candidate)
                if index:
                    log.warning(
                        "plugin %s: %d of %d replicas run the new version, the others the "
                        "previous one",
                        source.plugin_id,
                        index,
                        len(old_members),
                    )
                return self._failed(failure, source.plugin_id)
            pool.replace(old, candidate)  # new calls go to the new member from here on
            self._host.adopt(candidate, source)
            pid = candidate.pid
            await self._retire(old, source.plugin_id)  # drains the old member's calls
        await self._succeeded(source, started, pid)
        return True

    async def _succeeded(self, source: PluginSource, started: float, pid: int | None) -> None:
        elapsed = time.perf_counter() - started
        self._emit(
            EventKind.RELOAD_SUCCEEDED,
            f"plugin {source.plugin_id} {source.manifest.version} reloaded in "
            f"{elapsed * 1000:.0f} ms (pid {pid})",
            source.plugin_id,
            pid=pid,
            seconds=elapsed,
        )
        await self._reload_dependents(source.plugin_id)

    async def _retire(self, old: RunnerSupervisor, plugin_id: str) -> None:
        """Let the old runner finish its calls, then stop it (or hand it its other plugins)."""
        if set(old.sources) - {plugin_id}:
            old.sources.pop(plugin_id, None)
            return  # a shared runner keeps serving its other plugins
        await old.stop()  # still naming the plugin, so its stop events do too
        await self._host.forget_runner(old)

    def _failed(self, problem: PluginProblem, plugin_id: str | None) -> bool:
        serving = plugin_id is not None and self._host.components.owner(plugin_id) is not None
        whose = (problem.plugin_id,) if problem.plugin_id else ()
        problem = problem.redacted(self._host.redactor.for_plugins(whose))  # what it reported
        self._emit(
            EventKind.RELOAD_FAILED,
            f"reload of {problem.describe()}",
            plugin_id,
            stage=problem.stage,
            reason=problem.reason,
            file=problem.file,
            line=problem.line,
            traceback=problem.traceback,
        )
        if serving:
            self._emit(
                EventKind.RELOAD_ROLLED_BACK,
                f"plugin {plugin_id}: the previous version keeps serving; fix the error and save "
                "again to retry",
                plugin_id,
            )
        else:
            self._host.record_problem(problem)
        return False

    async def _reload_dependents(self, plugin_id: str) -> None:
        dependents = [
            s.plugin_id
            for s in self._host.sources.values()
            if plugin_id in s.manifest.plugin_dependencies
        ]
        for dependent in dependents:
            log.info("reloading %s because it depends on %s", dependent, plugin_id)
            await self.apply(PluginChange(self._host.sources[dependent].path, ChangeKind.SOURCE))

    async def update_config(self, plugin_id: str) -> bool:
        """Deliver a changed ``config.toml`` to the running plugin; keep the old one on error."""
        source = self._host.sources[plugin_id]
        runners = self._host.runners_for(plugin_id)
        try:
            config, version = await asyncio.to_thread(read_config, source.path)
            self._host.redactor.learn_config(plugin_id, config)
            if not runners:
                raise RunnerCrashedError("the plugin has no running runner")
            if version == source.config_version:
                return True
            for runner in runners:  # every replica gets it
                await runner.update_config(plugin_id, config, version)
        except (ManifestError, RemoteError, RunnerCrashedError, TimeoutError) as exc:
            reason = self._host.redactor.redact(str(exc), (plugin_id,))  # the plugin's words
            self._emit(
                EventKind.CONFIG_REJECTED,
                f"config of plugin {plugin_id} rejected, the old configuration stays: {reason}",
                plugin_id,
                reason=reason,
                file=str(source.path / "config.toml"),
            )
            return False
        updated = dataclasses.replace(source, config=config, config_version=version)
        self._host.sources[plugin_id] = updated
        for runner in runners:
            runner.sources[plugin_id] = updated
        pids = ", ".join(str(runner.pid) for runner in runners)
        self._emit(
            EventKind.CONFIG_UPDATED,
            f"config of plugin {plugin_id} updated (version {version}, pid {pids})",
            plugin_id,
            version=version,
            pid=runners[0].pid,
        )
        return True

    def write_planned_config(self, runner: RunnerSupervisor, plugin_id: str, text: str) -> None:
        """Write the config.toml a MaiBot plugin's runner derived from its config model.

        The runner may not write the plugin folder, so it sends the text; the
        source then holds the written version, and the watcher's echo of this
        write is not delivered again.
        """
        source = self._host.sources.get(plugin_id) or runner.sources.get(plugin_id)
        if source is None or not self._host.settings.write_plugin_config:
            return
        try:
            config, version = write_config(source.path, text)
        except (OSError, ManifestError) as exc:
            log.warning("cannot write config.toml of plugin %s: %s", plugin_id, exc)
            return
        updated = dataclasses.replace(source, config=config, config_version=version)
        self._host.sources[plugin_id] = updated
        runner.sources[plugin_id] = updated
        log.info("wrote config.toml of plugin %s from its config model", plugin_id)

    async def broadcast_config(self, scope: str, config: dict[str, Any], version: str) -> list[str]:
        """Deliver the bot's configuration to the MaiBot plugins subscribed to ``scope``.

        Only to the runners whose load report lists ``scope`` for the plugin
        (:mod:`plughost.runners.config_subscriptions`): no other runner receives it.

        Returns:
            The ids of the plugins whose ``on_config_update`` ran, sorted.
        """
        delivered: list[str] = []
        for plugin_id, source in sorted(self._host.sources.items()):
            runners = [
                runner
                for runner in self._host.runners_for(plugin_id)
                if scope in subscribed_scopes(runner.report, plugin_id)
            ]
            if not source.manifest.targets_maibot or not runners:
                continue
            try:
                ran = [await r.update_config(plugin_id, config, version, scope) for r in runners]
                if any(ran):
                    delivered.append(plugin_id)
            except (RemoteError, RunnerCrashedError, TimeoutError) as exc:
                log.warning(
                    "plugin %s did not take the %s configuration: %s", plugin_id, scope, exc
                )
        return delivered

    async def unload(self, plugin_id: str) -> None:
        """Remove a plugin: tools gone from every registry, runner stopped."""
        runners = self._host.runners_for(plugin_id)
        self._host.components.remove_plugin(plugin_id)
        self._host.sources.pop(plugin_id, None)
        self._host.problems.pop(plugin_id, None)
        for runner in runners:
            await self._retire(runner, plugin_id)
        self._emit(EventKind.PLUGIN_UNLOADED, f"plugin {plugin_id} unloaded", plugin_id)

    def _emit(self, kind: EventKind, message: str, plugin_id: str | None, **details: Any) -> None:
        self._host.events.emit(LifecycleEvent(kind, message, plugin_id=plugin_id, details=details))


def _candidate_failure(candidate: RunnerSupervisor, source: PluginSource) -> PluginProblem | None:
    for failed in candidate.report.get("failed", []):
        if failed.get("plugin_id") == source.plugin_id:
            return PluginProblem(
                path=source.path,
                stage=str(failed.get("stage", "load")),
                reason=str(failed.get("reason", "")),
                plugin_id=source.plugin_id,
                file=str(failed.get("file", "")),
                line=int(failed.get("line", 0) or 0),
                traceback=str(failed.get("traceback", "")),
            )
    if candidate.state is not RunnerState.READY:
        reason = (
            candidate.last_error or f"the new runner did not become ready ({candidate.state.value})"
        )
        return PluginProblem(source.path, "start", reason, source.plugin_id)
    return None


def _merge(pending: PluginChange | None, change: PluginChange) -> PluginChange:
    """Coalesce two changes to one folder: a source change wins over a config change."""
    if pending is None or change.kind is not ChangeKind.CONFIG:
        return change
    return pending
