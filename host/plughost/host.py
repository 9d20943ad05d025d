"""PluginHost: the object a bot runtime embeds.

``async with PluginHost(plugin_dirs=[...]) as host:`` finds the plugin folders,
starts one supervised runner per plugin (or one for all, as a setting), and
offers the ComponentRegistry, the ComponentQueryService, the
PluginToolProvider and a ToolRegistry that already holds the plugin provider.
Built-in and MCP providers are added to ``host.tools`` by the embedder.
Plugins may call tools too (``ctx.call_tool``, the ``tools.call`` capability,
under the operator's grants: :mod:`plughost.runners.tool_calls`).
A plugin that fails to load is reported (``host.problems``, events) and the
others load regardless.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import zmq.asyncio

from plughost.dispatch.apis import API_CAPABILITIES, REPLACE_DYNAMIC, ApiOutcome
from plughost.dispatch.commands import CommandOutcome
from plughost.dispatch.events import EventOutcome
from plughost.dispatch.hooks import HookOutcome, HookSpec
from plughost.dispatch.service import ComponentDispatcher
from plughost.events import EventBus, EventKind, LifecycleEvent
from plughost.monitor import MonitorPublisher
from plughost.plugins.component_info import PluginComponent
from plughost.plugins.components import ComponentRegistry, ToolComponent
from plughost.plugins.provider import PluginToolProvider
from plughost.plugins.query import ComponentQueryService
from plughost.plugins.source import PluginProblem, PluginSource, scan_plugin_dirs
from plughost.redaction import SecretRedactor
from plughost.reloader import PluginReloader
from plughost.remote_runners import RemoteRunners
from plughost.runners import client_requests
from plughost.runners.capabilities import CapabilityHandler, CapabilityRouter
from plughost.runners.curve import CurveAuthority
from plughost.runners.early import EarlyChildren, start_fork_server
from plughost.runners.fork_server import ForkServer
from plughost.runners.plugin_config import PLUGIN_CONFIG_CAPABILITIES, PluginConfigCapability
from plughost.runners.pool import Pools, RunnerPool
from plughost.runners.sandbox import SandboxReport, SandboxSupport, probe_support, sandbox_report
from plughost.runners.spawn import SocketDirectory, runner_env
from plughost.runners.supervisor import RunnerState, RunnerSupervisor
from plughost.runners.tool_calls import TOOLS_CALL, ToolCallCapability
from plughost.settings import HostSettings, ResourceLimits
from plughost.tools import progress
from plughost.tools.progress import ProgressCallback
from plughost.tools.registry import ToolRegistry
from plughost_sdk.context import LLM_GENERATE, RESOURCES_UPDATED, USER_ELICIT
from plughost_sdk.models import ToolExecutionContext, ToolExecutionResult, ToolInvocation

if TYPE_CHECKING:
    from plughost.plugins.watcher import PluginWatcher

__all__ = ["PluginHost", "PluginStatus"]

log = logging.getLogger(__name__)


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


class PluginHost:
    """Loads plugins into supervised runners and exposes their tools."""

    def __init__(
        self,
        plugin_dirs: Iterable[str | Path] = (),
        *,
        settings: HostSettings | None = None,
        early: EarlyChildren | None = None,
    ) -> None:
        """Create a host; nothing starts before :meth:`start`.

        Args:
            plugin_dirs: Folders of plugin folders, after ``settings.plugin_dirs``.
            settings: The host's settings; the defaults when None.
            early: The fork server and sandbox probe the caller started ahead of
                its own imports (:mod:`plughost.runners.early`); the host adopts them
                when they fit its settings, and closes them otherwise.
        """
        self._early = early
        base = settings or HostSettings()
        dirs = [*base.plugin_dirs, *(Path(d) for d in plugin_dirs)]
        self.settings = base.model_copy(update={"plugin_dirs": dirs})
        self.redactor = SecretRedactor()
        self.redactor.add_environment(os.environ)
        self.events = EventBus(redactor=self.redactor)
        self.monitor = MonitorPublisher(self.events)
        self.components = ComponentRegistry()
        self.query = ComponentQueryService(self.components)
        self.tool_provider = PluginToolProvider(
            self.components, self.query, default_timeout=self.settings.call_timeout
        )
        self.tools = ToolRegistry(enforce_visibility=self.settings.enforce_tool_visibility)
        self.tools.register_provider(self.tool_provider)
        self.capabilities = CapabilityRouter()
        # ctx.call_tool: it reads self.settings at every call, so grant changes apply at once.
        tool_calls = ToolCallCapability(self.tools, lambda: self.settings)
        self.capabilities.register(TOOLS_CALL, tool_calls)
        # Commands, events, hooks and APIs; ctx.api.* reads the grants at every call too.
        self.dispatcher = ComponentDispatcher(
            self.components, lambda: self.settings, self._plugin_config
        )
        for name in API_CAPABILITIES:
            self.capabilities.register(name, self.dispatcher.apis)
        self.capabilities.register(REPLACE_DYNAMIC, self.dispatcher.apis, needs_manifest=False)
        # ctx.config.get_plugin/get_all of MaiBot plugins: their own config, as the host holds it.
        own_config = PluginConfigCapability(self._plugin_config)
        for name in PLUGIN_CONFIG_CAPABILITIES:
            self.capabilities.register(name, own_config)
        # Asked of the client behind the call (plughost serve: the MCP client); an
        # embedder with a model of its own registers its own llm.generate over this.
        self.capabilities.register(LLM_GENERATE, client_requests.generate)
        self.capabilities.register(USER_ELICIT, client_requests.elicit)
        self.capabilities.register(
            RESOURCES_UPDATED,
            client_requests.ResourceUpdates(
                self.tool_provider.content.owns, self.tools.notify_resource_updated
            ),
        )
        self.problems: dict[str, PluginProblem] = {}
        self.sources: dict[str, PluginSource] = {}
        self._runners: dict[str, RunnerSupervisor] = {}
        self._pools = Pools()  # plugins with replicas
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._zmq: zmq.asyncio.Context | None = None
        self._sockets: SocketDirectory | None = None
        self._curve: CurveAuthority | None = None
        self._fork_server: ForkServer | None = None
        self.sandbox: SandboxReport | None = None  # known once started
        self.remote: RemoteRunners | None = None  # with [host.remote] listen, once started
        self._started = False
        self._drained = False
        self.reloader = PluginReloader(self)
        self.watcher: PluginWatcher | None = None

    async def __aenter__(self) -> PluginHost:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Find and load every plugin; return when each is ready or has failed."""
        if self._started:
            raise RuntimeError("PluginHost.start() was already called")
        self._started = True
        self._zmq = zmq.asyncio.Context()
        self._sockets = SocketDirectory()
        if self.settings.runner.transport == "tcp":
            self._curve = CurveAuthority(self._zmq, self._sockets.path)
        # Both wait on a child interpreter starting (about 0.1 s each): overlap them.
        early = await self._adopt_early()
        forking = await self._fork_server_starting(early)
        planned, forked = await asyncio.gather(
            self._plan_sandbox(early.probe if early is not None else None),
            forking or asyncio.sleep(0),
            return_exceptions=True,
        )
        if isinstance(forked, ForkServer):
            self._fork_server = forked
        for outcome in (planned, forked):
            if isinstance(outcome, BaseException):
                if self._fork_server is not None:
                    await self._fork_server.aclose()
                    self._fork_server = None
                raise outcome
        sources, problems = scan_plugin_dirs(self.settings.plugin_dirs)
        for problem in problems:
            self.record_problem(problem)
        await self.start_runners(sources)
        if self.settings.remote.listen:
            self.remote = RemoteRunners(
                self.settings,
                self.components,
                self.events,
                self.redactor,
                is_local=lambda plugin_id: plugin_id in self.sources,
                capabilities=self.capabilities,
            )
            await self.remote.start()

    async def _adopt_early(self) -> EarlyChildren | None:
        """The caller's early children if they are the ones these settings ask for."""
        early, self._early = self._early, None
        runner = self.settings.runner
        env = runner_env(runner.env_allowlist)
        fits = early is not None and early.fits(
            env, ready_timeout=runner.ready_timeout, fork_timeout=runner.fork_timeout
        )
        if early is not None and not fits:
            await early.aclose()
            return None
        return early

    async def _fork_server_starting(
        self, early: EarlyChildren | None
    ) -> Awaitable[ForkServer | None] | None:
        """The fork server being started for this host: the caller's early one if any."""
        runner = self.settings.runner
        if not runner.fork_server:
            if early is not None:
                server = await early.fork_server
                if server is not None:
                    await server.aclose()
            return None
        if early is not None:
            return early.fork_server
        return start_fork_server(
            runner_env(runner.env_allowlist),
            ready_timeout=runner.ready_timeout,
            fork_timeout=runner.fork_timeout,
        )

    async def _plan_sandbox(self, probe: Awaitable[SandboxSupport] | None) -> None:
        """Find out which protections runners get; refuse to start without required ones.

        Raises:
            RunnerStartError: a protection in ``runner.sandbox.require`` is not available.
        """
        settings = self.settings.runner.sandbox
        if settings.enabled:
            if probe is None:
                probe = probe_support(env=runner_env(self.settings.runner.env_allowlist))
            support = await probe
        else:
            if probe is not None:  # started early for nothing: its answer is not needed
                await probe
            support = SandboxSupport(frozenset())
        self.sandbox = sandbox_report(settings, support)
        log.info("%s", self.sandbox.describe())

    async def start_runners(self, sources: list[PluginSource]) -> list[RunnerSupervisor]:
        """Start runners for ``sources`` (grouped per the settings) and wait for them."""
        for source in sources:
            self.sources[source.plugin_id] = source
            self.redactor.add_config(source.config)
            for warning in source.warnings:
                log.warning("plugin %s: %s (%s)", source.plugin_id, warning, source.path)
        if self.settings.runner_grouping == "single" and sources:
            if any(n > 1 for n in self.settings.plugin_replicas.values()):
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
        timeout = self.settings.runner.ready_timeout + self.settings.runner.on_load_timeout
        await asyncio.gather(*(r.wait_settled(timeout) for r in runners))
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
        if self.settings.group_capability_plugins:
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

    def replicas(self, plugin_id: str) -> int:
        """How many runners serve ``plugin_id`` (``plugin_replicas``; 1 without replicas)."""
        if self.settings.runner_grouping == "single":
            return 1
        return self.settings.plugin_replicas.get(plugin_id, 1)

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
        owner = self.components.owner(plugin_id)
        if owner is not None and owner is not pool:  # the pool takes over the plugin's calls
            self._runner_ready(current[0], current[0].report)
        missing = wanted - len(current)
        added = [self._launch(_runner_id(plugin_id), [source]) for _ in range(missing)]
        for runner in added:
            pool.add(runner)
        timeout = self.settings.runner.ready_timeout + self.settings.runner.on_load_timeout
        await asyncio.gather(*(r.wait_settled(timeout) for r in added))
        for runner in added:
            if runner.state is not RunnerState.STARTING and not runner.report.get("loaded"):
                self._pools.leave(runner)
                await self._retire(runner)

    def runners_for(self, plugin_id: str) -> list[RunnerSupervisor]:
        """Every runner serving ``plugin_id``: its replicas, or its one runner."""
        pool = self._pools.get(plugin_id)
        if pool is not None:
            return list(pool)
        runner = self.runner_for(plugin_id)
        return [runner] if runner is not None else []

    def _never_ready(self, runner: RunnerSupervisor) -> None:
        """Report the plugins of a runner that died before it could say how loading went."""
        reported = {str(f.get("plugin_id")) for f in runner.report.get("failed", [])}
        reason = runner.last_error or "the runner stopped before it was ready"
        for plugin_id, source in runner.sources.items():
            if plugin_id not in reported and plugin_id not in self.problems:
                problem = PluginProblem(source.path, "start", reason, plugin_id=plugin_id)
                self.record_problem(problem, runner.runner_id)

    async def start_candidate(self, source: PluginSource) -> RunnerSupervisor:
        """Start a new version of a plugin in its own runner without registering it yet."""
        self.redactor.add_config(source.config)
        runner = self._launch(_runner_id(source.plugin_id), [source], candidate=True)
        timeout = self.settings.runner.ready_timeout + self.settings.runner.on_load_timeout
        await runner.wait_settled(timeout)
        return runner

    def adopt(self, runner: RunnerSupervisor, source: PluginSource) -> None:
        """Make a candidate runner the plugin's owner: its tools replace the old ones at once."""
        self.sources[source.plugin_id] = source
        self.problems.pop(str(source.path), None)
        runner.on_ready = self._runner_ready
        runner.on_lost = self._runner_lost
        self._runner_ready(runner, runner.report)

    async def forget_runner(self, runner: RunnerSupervisor) -> None:
        """Drop a stopped runner from the host's books."""
        self._pools.leave(runner)
        self._runners.pop(runner.runner_id, None)
        task = self._tasks.pop(runner.runner_id, None)
        if task is not None:
            await task

    def plugin_id_at(self, path: Path) -> str | None:
        """The id of the plugin known to live at folder ``path``, if any."""
        path = path.resolve()
        for plugin_id, source in self.sources.items():
            if source.path == path:
                return plugin_id
        return None

    async def reload_plugin(self, plugin_id: str) -> bool:
        """Reload one plugin blue/green; True when the new version serves.

        A broken new version is reported (events, ``problems``) and the old one keeps serving.

        Raises:
            KeyError: no such plugin.
        """
        return await self.reloader.reload(plugin_id)

    async def watch(self, *, force_polling: bool = False, step_ms: int = 50) -> None:
        """Watch the plugin directories and hot-reload changes until cancelled."""
        from plughost.plugins.watcher import PluginWatcher  # watchfiles: only when watching

        self.watcher = PluginWatcher(
            self.settings.plugin_dirs, step_ms=step_ms, force_polling=force_polling
        )
        await self.reloader.watch(self.watcher)

    def _launch(
        self, runner_id: str, sources: list[PluginSource], *, candidate: bool = False
    ) -> RunnerSupervisor:
        if self._zmq is None or self._sockets is None:
            raise RuntimeError("the host is not started; use 'async with PluginHost(...)'")
        runner_id = self._unique_runner_id(runner_id)
        runner = RunnerSupervisor(
            runner_id,
            sources,
            settings=self.settings.runner,
            zmq_context=self._zmq,
            sockets=self._sockets,
            events=self.events,
            capabilities=self.capabilities,
            data_root=self.settings.data_dir,
            temp_root=self.settings.temp_dir,
            on_ready=_ignore if candidate else self._runner_ready,
            on_lost=_ignore if candidate else self._runner_lost,
            redactor=self.redactor,
            limits=self._limits_for(sources),
            curve=self._curve,
            fork_server=self._fork_server,
            sandbox=self.sandbox,
        )
        self._runners[runner_id] = runner
        self._tasks[runner_id] = asyncio.create_task(self._supervise(runner))
        return runner

    def _limits_for(self, sources: list[PluginSource]) -> ResourceLimits:
        """The global runner limits, with a plugin's own overrides when it runs alone."""
        limits = self.settings.runner.limits
        if len(sources) == 1:
            return limits.merged(self.settings.plugin_limits.get(sources[0].plugin_id))
        return limits

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
                self.reloader.write_planned_config(runner, plugin_id, loaded["config_file"])
            components = [ToolComponent.from_wire(plugin_id, d) for d in loaded.get("tools", [])]
            others = [PluginComponent.from_wire(plugin_id, d) for d in loaded.get("components", [])]
            owner = self._pools.of(runner) or runner
            self.components.replace_plugin(plugin_id, components, owner, others, loaded)
            self.problems.pop(plugin_id, None)
            names = ", ".join(c.name for c in components) or "no tools"
            self.events.emit(
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
            self.components.remove_plugin(plugin_id)
            problem = PluginProblem(
                path=runner.sources[plugin_id].path,  # the host's record, not the runner's
                stage=str(failed.get("stage", "load")),
                reason=str(failed.get("reason", "")),
                plugin_id=plugin_id,
                file=str(failed.get("file", "")),
                line=int(failed.get("line", 0) or 0),
                traceback=str(failed.get("traceback", "")),
            )
            self.record_problem(problem, runner.runner_id)

    def _runner_lost(self, runner: RunnerSupervisor, reason: str) -> None:
        pool = self._pools.of(runner)
        if not self._pools.leave(runner):  # its fellow replicas keep serving the plugin
            log.warning(
                "runner %s of plugin %s left its pool: %s",
                runner.runner_id,
                ", ".join(runner.plugin_ids),
                self.redactor.redact(reason),
            )
            return
        stage = "crashed" if runner.report.get("loaded") else "start"
        for plugin_id in runner.plugin_ids:
            owner = self.components.owner(plugin_id)
            if owner is runner or (pool is not None and owner is pool):
                self.components.remove_plugin(plugin_id)
            source = self.sources.get(plugin_id)
            path = source.path if source else Path()
            self.record_problem(
                PluginProblem(path, stage, reason, plugin_id=plugin_id), runner.runner_id
            )

    def record_problem(self, problem: PluginProblem, runner_id: str | None = None) -> None:
        """Remember why a plugin is not serving, and tell subscribers."""
        key = problem.plugin_id or str(problem.path)
        self.problems[key] = problem
        self.events.emit(
            LifecycleEvent(
                EventKind.PLUGIN_FAILED,
                f"plugin {problem.describe()}",
                plugin_id=problem.plugin_id,
                runner_id=runner_id,
                details={
                    "path": str(problem.path),
                    "stage": problem.stage,
                    "reason": problem.reason,
                    "file": problem.file,
                    "line": problem.line,
                    "traceback": problem.traceback,
                },
            )
        )

    async def broadcast_config(
        self, scope: str, config: dict[str, Any], version: str = ""
    ) -> list[str]:
        """Give the bot's own configuration to the MaiBot plugins that subscribe to it.

        MaiBot plugins list ``config_reload_subscriptions = ("bot",)`` (or
        ``"model"``) to get ``on_config_update(scope, config, version)`` when the
        bot's configuration changes; the embedder calls this then.

        Returns:
            The ids of the plugins whose ``on_config_update`` ran.

        Raises:
            ValueError: ``scope`` is not ``"bot"`` or ``"model"``.
        """
        if scope not in ("bot", "model"):
            raise ValueError(f"scope must be 'bot' or 'model', got {scope!r}")
        return await self.reloader.broadcast_config(scope, dict(config), version)

    def register_capability(self, name: str, handler: CapabilityHandler) -> None:
        """Answer plugins' ``ctx`` calls to ``name`` (``send.text``, or ``send.*``)."""
        self.capabilities.register(name, handler)

    def runner_for(self, plugin_id: str) -> RunnerSupervisor | None:
        """The runner currently serving ``plugin_id`` (with replicas: a healthy one)."""
        owner = self.components.owner(plugin_id)
        if isinstance(owner, RunnerSupervisor):
            return owner
        pool = self._pools.get(plugin_id)
        if pool is not None and owner is pool and pool.members:
            return (pool.healthy() or pool.members)[0]
        return next((r for r in self._runners.values() if plugin_id in r.sources), None)

    @property
    def runtime_dir(self) -> Path | None:
        """The host's private directory (runner sockets, CurveZMQ keys) while it runs."""
        return self._sockets.path if self._sockets is not None else None

    def runners(self) -> list[RunnerSupervisor]:
        """Every supervised runner."""
        return list(self._runners.values())

    def status(self) -> list[PluginStatus]:
        """Every known plugin, loaded or not, sorted by id."""
        rows: dict[str, PluginStatus] = {}
        for plugin_id, source in self.sources.items():
            runner = self.runner_for(plugin_id)
            tools = tuple(self.query.model_name(c) for c in self.components.by_plugin(plugin_id))
            problem = self.problems.get(plugin_id)
            loaded = self.components.owner(plugin_id) is not None
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
                components=tuple(c.key for c in self.components.components_of(plugin_id)),
                runners=tuple(r.runner_id for r in self.runners_for(plugin_id)),
                where=tuple(f"local pid {r.pid}" for r in self.runners_for(plugin_id)),
            )
        for plugin_id, pool in (self.remote.pools if self.remote else {}).items():
            tools = tuple(self.query.model_name(c) for c in self.components.by_plugin(plugin_id))
            rows.setdefault(
                plugin_id,
                PluginStatus(
                    plugin_id=plugin_id,
                    version=self.remote.versions.get(plugin_id, "") if self.remote else "",
                    path="",
                    state="loaded" if pool.healthy() else "draining" if pool.leaving else "lost",
                    runner_id=pool.runner_id or None,
                    pid=None,
                    tools=tools,
                    runners=tuple(m.runner_id for m in pool.members),
                    where=tuple(m.where for m in pool.members),
                    error=self.remote.problems.get(plugin_id, "") if self.remote else "",
                ),
            )
        for key, problem in self.problems.items():
            if key not in rows:
                rows[key] = PluginStatus(
                    key, "", str(problem.path), "failed", None, None, (), problem.describe()
                )
        return [rows[k] for k in sorted(rows)]

    async def invoke(
        self,
        tool_name: str,
        arguments: dict[str, Any] | str | None = None,
        context: ToolExecutionContext | None = None,
        *,
        call_id: str = "",
        trusted: bool = False,
        on_progress: ProgressCallback | None = None,
    ) -> ToolExecutionResult:
        """Call any tool of ``host.tools`` by name (a shortcut over ``host.tools.invoke``).

        Cancelling the task that awaits this cancels the call where it runs: the
        plugin's handler task is cancelled in its runner, and an upstream MCP
        server is sent ``notifications/cancelled``.

        Args:
            tool_name: The tool's model-facing name.
            arguments: A dict, or the JSON text of one.
            context: The conversation the call happens in.
            call_id: The model's id for this call, passed through to the result.
            trusted: Run hidden and undiscovered tools too: for the embedder's own
                calls, never for a model's.
            on_progress: Receives a :class:`~plughost.tools.progress.Progress` for each
                report of the tool (a plugin's ``ctx.report_progress``, an MCP server's
                progress notifications); called on the event loop, so it must not block.
        """
        invocation = ToolInvocation(tool_name=tool_name, arguments=arguments or {}, call_id=call_id)
        if on_progress is None:
            return await self.tools.invoke(invocation, context, trusted=trusted)
        with progress.reporting(on_progress):
            return await self.tools.invoke(invocation, context, trusted=trusted)

    async def dispatch_command(
        self,
        text: str,
        *,
        message: dict[str, Any] | None = None,
        stream_id: str = "",
        group_id: str = "",
        user_id: str = "",
        platform: str = "",
        session_id: str = "",
        timeout: float | None = None,
    ) -> CommandOutcome:
        """Match ``text`` against every enabled command and run the first match in its runner.

        Commands switched off in ``session_id`` (default: ``stream_id``) are passed over.

        Returns whether a command handled it and whether to keep processing the
        message; never raises for a failing command (see :mod:`plughost.dispatch.commands`).
        """
        return await self.dispatcher.dispatch_command(
            text,
            message=message,
            stream_id=stream_id,
            group_id=group_id,
            user_id=user_id,
            platform=platform,
            session_id=session_id,
            timeout=timeout,
        )

    async def emit_event(
        self,
        event_type: str | Enum,
        message: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        **extra: Any,
    ) -> EventOutcome:
        """Emit a bot event (``EventType``): intercepting handlers in weight order, then the rest.

        Never raises for a failing handler (see :mod:`plughost.dispatch.events`).
        """
        return await self.dispatcher.emit_event(event_type, message, timeout=timeout, **extra)

    async def run_hook(
        self, hook: str, *, timeout: float | None = None, **kwargs: Any
    ) -> HookOutcome:
        """Run the named hook chain over ``kwargs``; blocking handlers may rewrite or abort it.

        Never raises for a failing handler (see :mod:`plughost.dispatch.hooks`).
        """
        return await self.dispatcher.run_hook(hook, timeout=timeout, **kwargs)

    def register_hook_spec(self, spec: HookSpec) -> None:
        """Declare what a named hook allows its handlers (abort, rewriting, default limit)."""
        self.dispatcher.register_hook_spec(spec)

    async def call_api(
        self, name: str, *, version: str = "", timeout: float | None = None, **args: Any
    ) -> ApiOutcome:
        """Call a plugin's API (``plugin_id.name`` or ``name``) with ``args``; never raises."""
        return await self.dispatcher.call_api(name, version=version, timeout=timeout, **args)

    async def drain_background(self, timeout: float = 10.0) -> bool:
        """Wait for background event and observe-hook handlers; False if ``timeout`` passed."""
        return await self.dispatcher.drain(timeout)

    def _plugin_config(self, plugin_id: str) -> dict[str, Any]:
        source = self.sources.get(plugin_id)
        return dict(source.config) if source is not None else {}

    async def drain(self, timeout: float | None = None) -> None:
        """Stop taking calls, let the calls in flight finish, then stop the runners.

        From now on a new call is answered at once with ``shutting_down``. Calls in
        flight get up to ``timeout`` seconds (``runner.shutdown_drain`` by default);
        one still running then is answered with ``shutting_down`` as its runner
        stops. Every caller gets exactly one result either way. :meth:`aclose`
        drains first; calling this before it lets a server keep answering its
        clients while the calls finish.
        """
        if self._drained:
            return
        self._drained = True
        timeout = self.settings.runner.shutdown_drain if timeout is None else timeout
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        self.tools.begin_shutdown()
        finished = await self.tools.wait_idle(timeout)
        if not finished:
            log.warning("%d calls still running after the drain", self.tools.inflight)
        remaining = max(0.0, deadline - loop.time())
        runners = list(self._runners.values())
        await asyncio.gather(*(r.stop(drain=remaining) for r in runners), return_exceptions=True)
        # The callers of calls cut short now hold their shutting_down results.
        await self.tools.wait_idle(self.settings.runner.term_timeout)

    async def aclose(self) -> None:
        """Drain (see :meth:`drain`), stop every runner and release sockets."""
        if self._early is not None:  # never started: the caller's fork server is ours to close
            early, self._early = self._early, None
            await early.aclose()
        await self.drain()
        await self.dispatcher.aclose()
        if self.remote is not None:
            await self.remote.aclose()
        runners = list(self._runners.values())
        await asyncio.gather(*(r.stop() for r in runners), return_exceptions=True)
        for task in self._tasks.values():
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        await self.tools.close()
        if self._fork_server is not None:
            await self._fork_server.aclose()
            self._fork_server = None
        if self._curve is not None:
            self._curve.stop()
            self._curve = None
        if self._zmq is not None:
            self._zmq.destroy(linger=0)  # runners are gone; nothing is left worth waiting for
            self._zmq = None
        if self._sockets is not None:
            self._sockets.remove()
            self._sockets = None


def _ignore(*_: Any) -> None:
    """Callbacks of a reload candidate: nothing is registered until it is adopted."""


def _runner_id(plugin_id: str) -> str:
    return "runner-" + re.sub(r"[^A-Za-z0-9_-]", "-", plugin_id)
