"""The host's side of remote runners: their pools, tools and status rows.

:class:`~plughost.runners.remote.RemoteListener` keeps the sessions; this
module turns them into what the rest of the host sees. Remote runners that
serve the same plugin id and version form one pool, the plugin's owner in the
component registry, so their calls are balanced like local replicas. A
runner's tools are registered when it is ready (from its report, believed only
for the plugins the host accepted), stay while it is silent within the grace,
and go when it leaves its pool last.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from plughost.events import EventBus, EventKind, LifecycleEvent
from plughost.plugins.component_info import PluginComponent
from plughost.plugins.components import ComponentRegistry, ToolComponent
from plughost.redaction import SecretRedactor
from plughost.runners.pool import RunnerPool
from plughost.runners.remote import RemoteListener, RemoteRunner
from plughost.runners.remote_keys import RemoteKeyStore
from plughost.settings import HostSettings

__all__ = ["RemoteRunners"]

log = logging.getLogger(__name__)


class RemoteRunners:
    """Remote runners as pools of the host's component registry."""

    def __init__(
        self,
        settings: HostSettings,
        components: ComponentRegistry,
        events: EventBus,
        redactor: SecretRedactor,
        is_local: Callable[[str], bool],
    ) -> None:
        self._components = components
        self._events = events
        self.pools: dict[str, RunnerPool[RemoteRunner]] = {}
        self.versions: dict[str, str] = {}
        self.listener = RemoteListener(
            settings,
            RemoteKeyStore(Path(settings.remote.keys_dir)),
            on_join=self._joined,
            on_silent=self._silent,
            on_leave=self._left,
            redactor=redactor,
            is_local=is_local,
        )

    async def start(self) -> None:
        """Listen for remote runners."""
        await self.listener.start()

    async def aclose(self) -> None:
        """Stop listening; every remote runner's calls in flight fail."""
        await self.listener.aclose()

    def _joined(self, runner: RemoteRunner) -> None:
        for loaded in runner.report.get("loaded", []):
            plugin_id = str(loaded["plugin_id"])
            version = runner.accepted[plugin_id]
            pool = self.pools.get(plugin_id)
            if pool is not None and pool.members and self.versions[plugin_id] != version:
                log.warning(
                    "remote runner %s offers %s %s, but its pool serves version %s: not added",
                    runner.runner_id,
                    plugin_id,
                    version,
                    self.versions[plugin_id],
                )
                continue
            if pool is None:
                pool = self.pools[plugin_id] = RunnerPool[RemoteRunner](plugin_id, [])
            self.versions[plugin_id] = version
            pool.add(runner)
            tools = [ToolComponent.from_wire(plugin_id, d) for d in loaded.get("tools", [])]
            others = [PluginComponent.from_wire(plugin_id, d) for d in loaded.get("components", [])]
            self._components.replace_plugin(plugin_id, tools, pool, others)
            self._emit(
                EventKind.PLUGIN_LOADED,
                f"plugin {plugin_id} {version} served by remote runner {runner.runner_id} at "
                f"{runner.address} ({', '.join(t.name for t in tools) or 'no tools'})",
                runner,
                plugin_id,
            )

    def _silent(self, runner: RemoteRunner, reason: str) -> None:
        self._emit(EventKind.RUNNER_CRASHED, reason, runner, None, reason=reason)

    def _left(self, runner: RemoteRunner, reason: str) -> None:
        for plugin_id in runner.plugin_ids:
            pool = self.pools.get(plugin_id)
            if pool is None or runner not in pool:
                continue
            pool.remove(runner)
            if not pool.members:
                del self.pools[plugin_id]
                if self._components.owner(plugin_id) is pool:
                    self._components.remove_plugin(plugin_id)
                    self._emit(
                        EventKind.PLUGIN_UNLOADED,
                        f"plugin {plugin_id} unloaded: {reason}",
                        runner,
                        plugin_id,
                    )
        self._emit(EventKind.RUNNER_STOPPED, reason, runner, None, reason=reason)

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
