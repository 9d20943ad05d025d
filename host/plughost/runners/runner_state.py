"""Where a runner is in its life, and what its supervisor knows of it.

:class:`~plughost.runners.supervisor.RunnerSupervisor` is written in three
modules, so that each reads in one sitting: ``supervisor`` (spawn, ready
handshake, restart policy, the call path), ``runner_messages`` (what it and its
runner say besides calls) and ``shutdown`` (how a runner process ends). They
share one object; :class:`SupervisedRunner` types the state they share once for
all three. ``RunnerSupervisor.__init__`` sets every attribute declared here.

What does not live here: anything that talks to the runner or its process.
"""

from __future__ import annotations

import asyncio
from enum import Enum
from pathlib import Path
from typing import Any

from plughost.events import EventBus, EventKind, LifecycleEvent
from plughost.plugins.source import PluginSource
from plughost.redaction import Redact
from plughost.runners.capabilities import CapabilityRouter
from plughost.runners.channel import RunnerChannel
from plughost.runners.child_process import ChildProcess
from plughost.runners.fork_server import ForkedProcess
from plughost.runners.output import RunnerOutput
from plughost.runners.refusals import PathRefusals
from plughost.runners.watchdog import Watchdog
from plughost.settings import ResourceLimits, RunnerSettings

__all__ = ["RunnerState", "SupervisedRunner"]


class RunnerState(Enum):
    """Where a runner is in its life."""

    STARTING = "starting"
    READY = "ready"
    RESTARTING = "restarting"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILED = "failed"


class SupervisedRunner:
    """One runner as its supervisor keeps it: plugins, state, socket, process, watchers."""

    runner_id: str
    sources: dict[str, PluginSource]
    refusals: PathRefusals  # paths the sandbox refused its plugins (reported by the runner)
    state: RunnerState
    last_error: str
    limits: ResourceLimits
    report: dict[str, Any]
    _settings: RunnerSettings
    _events: EventBus
    _capabilities: CapabilityRouter
    _roots: tuple[Path, Path]  # the plugins' data and temp roots
    _redact: Redact  # text from the plugins it names: their secrets and the host's
    _channel: RunnerChannel | None  # the current process's socket, None between processes
    _process: ChildProcess | ForkedProcess | None
    _ready: asyncio.Event  # set while the current process is READY: calls wait for it
    _settled: asyncio.Event  # supervision has ended
    _stopping: asyncio.Event
    _watchdog: Watchdog
    _output: RunnerOutput
    _violation: asyncio.Future[str] | None  # resolved to recycle the current process
    _reported: bool  # the current process sent its runner.ready

    @property
    def plugin_ids(self) -> list[str]:
        """The plugins this runner serves."""
        return sorted(self.sources)

    def _emit(self, kind: EventKind, message: str, **details: Any) -> None:
        plugin = self.plugin_ids[0] if len(self.sources) == 1 else None
        details.setdefault("plugins", self.plugin_ids)  # every plugin this runner serves
        self._events.emit(
            LifecycleEvent(
                kind, message, plugin_id=plugin, runner_id=self.runner_id, details=details
            )
        )
