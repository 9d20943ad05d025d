"""What remote runners change in the host once they join: their pools, tools and status rows.

:class:`~plughost.remote.listener.RemoteListener` keeps the sessions; this
module turns them into what the rest of the host sees. Remote runners that
serve the same plugin id and version form one pool, the plugin's owner in the
component registry, so their calls are balanced like local replicas. A
runner's tools are registered when it is ready (from its report, believed only
for the plugins the host accepted), stay while it is silent within the grace,
and go when it leaves its pool last.

A plugin edited on a runner's machine and reloaded there replaces its tools
when the runner reports the new version loaded; a plugin added there joins its
pool (or starts one) the same way, and one removed there leaves it; a reload that failed (or a
version the allow-list refused) leaves the old version serving and is kept in
:attr:`RemoteRunners.problems` for ``host.status()`` until the next success.
While several runners serve one plugin, each reloads on its own, so calls may
be answered by either version until all have.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from plughost.events import EventBus, EventKind, LifecycleEvent
from plughost.plugins.bindings import IdBindings, id_key
from plughost.plugins.component_info import PluginComponent
from plughost.plugins.components import ComponentRegistry, ToolComponent
from plughost.redaction import SecretRedactor
from plughost.remote.keys import RemoteKeyStore
from plughost.remote.listener import RemoteListener
from plughost.remote.member import RemoteRunner
from plughost.runners.capabilities import CapabilityRouter
from plughost.runners.pool import RunnerPool
from plughost.settings import HostSettings

__all__ = ["RemoteRunners", "credentials_allowing"]

log = logging.getLogger(__name__)


class RemoteRunners:
    """Remote runners as pools of the host's component registry."""

    def __init__(
        self,
        settings: HostSettings,
        components: ComponentRegistry,
        events: EventBus,
        redactor: SecretRedactor,
        local_claim: Callable[[str], str | None],
        capabilities: CapabilityRouter | None = None,
        bindings: IdBindings | None = None,
    ) -> None:
        self._components = components
        self._events = events
        self._redact = redactor.redact
        self._bindings = bindings
        self.pools: dict[str, RunnerPool[RemoteRunner]] = {}
        self.versions: dict[str, str] = {}
        self.problems: dict[str, str] = {}
        """Per plugin, why its latest reload on a runner failed (cleared by a success)."""
        self.listener = RemoteListener(
            settings,
            RemoteKeyStore(Path(settings.remote.keys_dir)),
            on_join=self._joined,
            on_silent=self._silent,
            on_leave=self._left,
            on_reload=self._reloaded,
            on_remove=self._removed,
            capabilities=capabilities,
            redactor=redactor,
            local_claim=local_claim,
        )

    async def start(self) -> None:
        """Listen for remote runners."""
        await self.listener.start()

    async def aclose(self) -> None:
        """Stop listening; every remote runner's calls in flight fail."""
        await self.listener.aclose()

    def _joined(self, runner: RemoteRunner) -> None:
        for loaded in runner.report.get("loaded", []):
            self._join(runner, loaded)

    def _join(self, runner: RemoteRunner, loaded: dict[str, Any]) -> None:
        """Add ``runner`` to a plugin's pool, unless the pool serves another version."""
        plugin_id = str(loaded["plugin_id"])
        version = runner.accepted[plugin_id]
        pool = self.pools.get(plugin_id)
        served = (
            {m.accepted.get(plugin_id) for m in pool.members if m is not runner} if pool else set()
        )
        if served and version not in served:
            log.warning(
                "remote runner %s offers %s %s, but its pool serves version %s: not added",
                runner.runner_id,
                plugin_id,
                version,
                ", ".join(sorted(str(v) for v in served)),
            )
            return
        if pool is None:
            pool = self.pools[plugin_id] = RunnerPool[RemoteRunner](plugin_id, [])
        if self._bindings is not None and self._bindings.bind_remote(
            plugin_id, runner.credential.name
        ):
            self._bindings.save()  # once per id ever served remotely: a small file
        self.versions[plugin_id] = version
        if runner not in pool:
            pool.add(runner)
        tools = self._register(plugin_id, pool, loaded)
        self._emit(
            EventKind.PLUGIN_LOADED,
            f"plugin {plugin_id} {version} served by remote runner {runner.runner_id} at "
            f"{runner.address} ({', '.join(t.name for t in tools) or 'no tools'})",
            runner,
            plugin_id,
        )

    def _register(
        self, plugin_id: str, pool: RunnerPool[RemoteRunner], loaded: dict[str, Any]
    ) -> list[ToolComponent]:
        """Make ``loaded``'s tools and components the plugin's, owned by ``pool``."""
        tools = [ToolComponent.from_wire(plugin_id, d) for d in loaded.get("tools", [])]
        others = [PluginComponent.from_wire(plugin_id, d) for d in loaded.get("components", [])]
        self._components.replace_plugin(plugin_id, tools, pool, others)
        return tools

    def _reloaded(self, runner: RemoteRunner, report: dict[str, Any]) -> None:
        """A runner's plugin reloaded there (new tools), or failed to (old ones stay)."""
        for loaded in report["loaded"]:
            plugin_id = str(loaded["plugin_id"])
            runner.report["loaded"] = [
                p for p in runner.report["loaded"] if p.get("plugin_id") != plugin_id
            ] + [loaded]
            pool = self.pools.get(plugin_id)
            if pool is None or runner not in pool:
                if runner.healthy:  # a plugin added there (or now of its pool's version)
                    self._join(runner, loaded)
                continue  # else silent past its grace: its return re-joins
            version = runner.accepted[plugin_id]
            self.versions[plugin_id] = version
            self.problems.pop(plugin_id, None)
            tools = self._register(plugin_id, pool, loaded)
            self._emit(
                EventKind.RELOAD_SUCCEEDED,
                f"plugin {plugin_id} reloaded to {version} on remote runner {runner.runner_id} "
                f"({', '.join(t.name for t in tools) or 'no tools'})",
                runner,
                plugin_id,
            )
        for failed in report["failed"]:
            plugin_id = str(failed["plugin_id"])
            where = str(failed.get("file") or failed.get("path") or "")
            line = failed.get("line")
            where += f":{line}" if isinstance(line, int) and line else ""
            reason = self._redact(
                f"reload on remote runner {runner.runner_id} failed"
                f"{' at ' + str(failed['stage']) if failed.get('stage') else ''}"
                f"{' in ' + where if where else ''}: {failed.get('reason', '')}; "
                "the old version keeps serving"
            )
            self.problems[plugin_id] = reason
            self._emit(EventKind.RELOAD_FAILED, reason, runner, plugin_id, reason=reason)

    def _silent(self, runner: RemoteRunner, reason: str) -> None:
        self._emit(EventKind.RUNNER_CRASHED, reason, runner, None, reason=reason)

    def _left(self, runner: RemoteRunner, reason: str) -> None:
        for plugin_id in runner.plugin_ids:
            self._leave(runner, plugin_id, reason)
        self._emit(EventKind.RUNNER_STOPPED, reason, runner, None, reason=reason)

    def _removed(self, runner: RemoteRunner, plugin_id: str) -> None:
        """The plugin's folder was removed on the runner's machine: no more calls go there."""
        self._leave(
            runner, plugin_id, f"its folder was removed on remote runner {runner.runner_id}"
        )

    def _leave(self, runner: RemoteRunner, plugin_id: str, reason: str) -> None:
        """Take ``runner`` out of the plugin's pool; the plugin's tools go with the last member."""
        pool = self.pools.get(plugin_id)
        if pool is None or runner not in pool:
            return
        pool.remove(runner)
        if pool.members:
            return
        del self.pools[plugin_id]
        self.versions.pop(plugin_id, None)
        if self._components.owner(plugin_id) is pool:
            self._components.remove_plugin(plugin_id)
            self._emit(
                EventKind.PLUGIN_UNLOADED,
                f"plugin {plugin_id} unloaded: {reason}",
                runner,
                plugin_id,
            )

    def _emit(
        self,
        kind: EventKind,
        message: str,
        runner: RemoteRunner,
        plugin_id: str | None,
        **details: object,
    ) -> None:
        self._events.emit(
            LifecycleEvent(
                kind,
                message,
                plugin_id=plugin_id,
                runner_id=runner.runner_id,
                details={"where": runner.where, **details},
            )
        )


def credentials_allowing(settings: HostSettings, plugin_id: str) -> list[str]:
    """The live credentials whose allow-list names ``plugin_id`` (or an id differing in case).

    While one does, an id remote runners served first stays theirs
    (:class:`~plughost.plugins.bindings.IdBindings`); read from disk at each call.
    """
    if not settings.remote.listen:
        return []
    key = id_key(plugin_id)
    store = RemoteKeyStore(Path(settings.remote.keys_dir))
    return [c.name for c in store.credentials() if any(id_key(e.plugin_id) == key for e in c.allow)]
