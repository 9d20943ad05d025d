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

The façade owns the host's lifecycle and its process resources (ZeroMQ context,
socket directory, CurveZMQ keys, fork server); the parts live beside it:
:mod:`plughost.startup` (fork server, sandbox plan), :mod:`plughost.host_capabilities` (what
plugins may ask of every host), :mod:`plughost.status` (status rows); its runners are kept by
:mod:`plughost.runners.fleet` (its own) and :mod:`plughost.remote.registration` (other machines).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable, Mapping
from enum import Enum
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import zmq.asyncio

from plughost.chat import ChatSession, build_tool_search
from plughost.dependencies import PluginEnvironments
from plughost.destinations import parse_destination
from plughost.dispatch.apis import ApiOutcome
from plughost.dispatch.commands import CommandOutcome
from plughost.dispatch.events import EventOutcome
from plughost.dispatch.hooks import HookOutcome, HookSpec
from plughost.dispatch.service import ComponentDispatcher
from plughost.events import EventBus, EventKind, LifecycleEvent
from plughost.host_capabilities import register_host_capabilities
from plughost.monitor import MonitorPublisher
from plughost.plugins.bindings import IdBindings
from plughost.plugins.components import ComponentRegistry
from plughost.plugins.provider import PluginToolProvider
from plughost.plugins.query import ComponentQueryService
from plughost.plugins.source import PluginProblem, PluginSource, scan_plugin_dirs
from plughost.redaction import SecretRedactor
from plughost.reloader import PluginReloader
from plughost.remote.registration import RemoteRunners, credentials_allowing
from plughost.runners.capabilities import CapabilityHandler, CapabilityRouter
from plughost.runners.curve import CurveAuthority
from plughost.runners.early import EarlyChildren
from plughost.runners.fleet import LocalRunners
from plughost.runners.fork_server import ForkServer
from plughost.runners.pool import RunnerPool
from plughost.runners.refusals import write_grant
from plughost.runners.sandbox import SandboxReport, network_for
from plughost.runners.spawn import SocketDirectory
from plughost.runners.supervisor import LostCallback, ReadyCallback, RunnerSupervisor
from plughost.settings import HostSettings
from plughost.startup import adopt_early, fork_server_starting, plan_sandbox
from plughost.status import PluginStatus, learned_network, learned_writes, plugin_statuses
from plughost.tools import progress
from plughost.tools.progress import ProgressCallback
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import ToolExecutionContext, ToolExecutionResult, ToolInvocation

if TYPE_CHECKING:
    from plughost.plugins.watcher import PluginWatcher

__all__ = ["PluginHost", "PluginStatus"]

log = logging.getLogger(__name__)


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
        self.redactor.protect("", [kind.value for kind in EventKind])  # no plugin's secret
        self.events = EventBus(redactor=self.redactor)
        self.monitor = MonitorPublisher(self.events)
        self.components = ComponentRegistry()
        self.query = ComponentQueryService(self.components)
        self.tool_provider = PluginToolProvider(
            self.components, self.query, default_timeout=self.settings.call_timeout
        )
        self.tools = ToolRegistry(enforce_visibility=self.settings.enforce_tool_visibility)
        self.tools.register_provider(self.tool_provider)
        # tool_search and its built-in, when settings.tool_search.enabled; else None.
        self.search = build_tool_search(self.tools, self.settings.tool_search)
        # A plugin tool refused or renamed for its name is an event the operator sees.
        self.tools.name_guard.add_listener(lambda conflict: self.events.emit(conflict.to_event()))
        self.query.add_conflict_listener(lambda conflict: self.events.emit(conflict.to_event()))
        self.capabilities = CapabilityRouter()
        # Commands, events, hooks and APIs; ctx.api.* reads the grants at every call too.
        self.dispatcher = ComponentDispatcher(
            self.components, lambda: self.settings, self._plugin_config
        )
        register_host_capabilities(
            self.capabilities,
            tools=self.tools,
            settings=lambda: self.settings,  # read at every call: grant changes apply at once
            dispatcher=self.dispatcher,
            plugin_config=self._plugin_config,
            owns_resource=self.tool_provider.content.owns,
        )
        self.problems: dict[str, PluginProblem] = {}
        # Which folder owns each id (<data_dir>/.bindings.json), read when the host starts.
        self.bindings = IdBindings(
            self.settings.data_dir, lambda plugin_id: credentials_allowing(self.settings, plugin_id)
        )
        self.sources: dict[str, PluginSource] = {}
        self._zmq: zmq.asyncio.Context | None = None
        self._sockets: SocketDirectory | None = None
        self._curve: CurveAuthority | None = None
        self._fork_server: ForkServer | None = None
        self.sandbox: SandboxReport | None = None  # known once started
        self.remote: RemoteRunners | None = None  # with [host.remote] listen, once started
        self._started = False
        self._drained = False
        # A plugin's own packages: installed off the loop before its runner starts.
        self.packages = PluginEnvironments(lambda: self.settings, self.events, self.record_problem)
        self.reloader = PluginReloader(self)
        self._local = LocalRunners(
            self,
            write_planned_config=self.reloader.write_planned_config,
            new_supervisor=self._new_supervisor,
        )
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
        early, self._early = self._early, None
        early = await adopt_early(early, self.settings.runner)
        forking = await fork_server_starting(early, self.settings.runner)
        planned, forked = await asyncio.gather(
            plan_sandbox(self.settings.runner, early.probe if early is not None else None),
            forking or asyncio.sleep(0),
            return_exceptions=True,
        )
        if isinstance(planned, SandboxReport):
            self.sandbox = planned
        if isinstance(forked, ForkServer):
            self._fork_server = forked
        for outcome in (planned, forked):
            if isinstance(outcome, BaseException):
                if self._fork_server is not None:
                    await self._fork_server.aclose()
                    self._fork_server = None
                raise outcome
        # Reading and parsing every manifest and config.toml: off the loop.
        sources, problems = await asyncio.to_thread(
            scan_plugin_dirs, self.settings.plugin_dirs, self.bindings
        )
        for problem in problems:
            self.record_problem(problem)
        self.bindings.announce(self.events)
        await self.start_runners(sources)
        if self.settings.remote.listen:
            self.remote = RemoteRunners(
                self.settings,
                self.components,
                self.events,
                self.redactor,
                local_claim=self.bindings.remote_refusal,
                capabilities=self.capabilities,
                bindings=self.bindings,
            )
            await self.remote.start()

    async def start_runners(self, sources: list[PluginSource]) -> list[RunnerSupervisor]:
        """Start runners for ``sources`` (grouped per the settings) and wait for them."""
        return await self.packages.start_runners(sources, self._local.start)

    def replicas(self, plugin_id: str) -> int:
        """How many runners serve ``plugin_id`` (``plugin_replicas``; 1 without replicas)."""
        return self._local.replicas(plugin_id)

    def pool_for(self, plugin_id: str) -> RunnerPool[RunnerSupervisor] | None:
        """The pool of ``plugin_id``'s replicas, when it has several runners."""
        return self._local.pool_for(plugin_id)

    async def add_replicas(self, source: PluginSource) -> None:
        """Start the runners a plugin lacks for its ``plugin_replicas`` (a plugin added live)."""
        await self._local.add_replicas(source)

    def runners_for(self, plugin_id: str) -> list[RunnerSupervisor]:
        """Every runner serving ``plugin_id``: its replicas, or its one runner."""
        return self._local.runners_for(plugin_id)

    async def start_candidate(self, source: PluginSource) -> RunnerSupervisor:
        """Start a new version of a plugin in its own runner without registering it yet."""
        return await self._local.start_candidate(source)

    def adopt(self, runner: RunnerSupervisor, source: PluginSource) -> None:
        """Make a candidate runner the plugin's owner: its tools replace the old ones at once."""
        self._local.adopt(runner, source)

    async def forget_runner(self, runner: RunnerSupervisor) -> None:
        """Drop a stopped runner from the host's books."""
        await self._local.forget(runner)

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

    def _new_supervisor(
        self,
        runner_id: str,
        sources: list[PluginSource],
        on_ready: ReadyCallback,
        on_lost: LostCallback,
    ) -> RunnerSupervisor:
        """A supervisor for a runner of ``sources``, sharing the host's process resources."""
        if self._zmq is None or self._sockets is None:
            raise RuntimeError("the host is not started; use 'async with PluginHost(...)'")
        return RunnerSupervisor(
            runner_id,
            sources,
            settings=self.settings.runner,
            zmq_context=self._zmq,
            sockets=self._sockets,
            events=self.events,
            capabilities=self.capabilities,
            data_root=self.settings.data_dir,
            temp_root=self.settings.temp_dir,
            on_ready=on_ready,
            on_lost=on_lost,
            redactor=self.redactor,
            limits=self.settings.limits_for([s.plugin_id for s in sources]),
            curve=self._curve,
            fork_server=self._fork_server,
            sandbox=self.sandbox,
            network_grants=network_for(self.settings, sources),
            write_grants=[
                p for s in sources for p in self.settings.write_grants.get(s.plugin_id, [])
            ],
        )

    async def grant_network(self, plugin_id: str, destinations: list[str]) -> list[str]:
        """Let ``plugin_id`` reach ``destinations`` from now on, without a restart.

        The grants join ``settings.network_grants`` (which then replaces the
        MaiBot default for this plugin) and the plugin's running gates; a plugin
        that had no grant, and so no gate, is reloaded (blue/green) to get one.
        They last until the host stops: ``plughost grant`` writes them to the file.

        Returns:
            The plugin's grants now.

        Raises:
            ValueError: an unknown plugin, or a destination that is not a grant.
        """
        source = self.sources.get(plugin_id)
        if source is None:
            raise ValueError(f"no plugin {plugin_id!r}; plughost status lists them")
        for destination in destinations:
            parse_destination(destination)
        current = network_for(self.settings, [source])
        grants = list(dict.fromkeys([*current, *destinations]))
        self.settings.network_grants[plugin_id] = grants
        runners = self.runners_for(plugin_id)
        for runner in runners:
            runner.grant(grants)
        log.info("network granted plugin=%s grants=%s", plugin_id, ",".join(grants))
        if any(runner.gate is None for runner in runners):
            await self.reload_plugin(plugin_id)
        return grants

    async def grant_write(self, plugin_id: str, path: str) -> list[Path]:
        """Let ``plugin_id`` write under ``path`` (made if missing) from its next runner on.

        Landlock's rules are fixed when a runner starts, so the plugin is
        reloaded (blue/green) to get it. Lasts until the host stops, like
        :meth:`grant_network`.

        Returns:
            The plugin's write grants now.

        Raises:
            ValueError: an unknown plugin, or a path that is not absolute.
        """
        if plugin_id not in self.sources:
            raise ValueError(f"no plugin {plugin_id!r}; plughost status lists them")
        if write_grant(path) is None:
            raise ValueError(f"{path!r} is not an absolute path")
        grants = self.settings.write_grants.setdefault(plugin_id, [])
        if Path(path) not in grants:
            grants.append(Path(path))
        log.info("write granted plugin=%s path=%s", plugin_id, path)
        await self.reload_plugin(plugin_id)
        return list(grants)

    def learned_writes(self) -> dict[str, list[str]]:
        """The paths the sandbox refused each plugin, as write grants to paste."""
        return learned_writes(self)

    def learned_network(self) -> dict[str, list[str]]:
        """Learn mode's findings: each plugin's destinations, as grants to paste."""
        return learned_network(self)

    def record_problem(self, problem: PluginProblem, runner_id: str | None = None) -> None:
        """Remember why a plugin is not serving, and tell subscribers."""
        whose = (problem.plugin_id,) if problem.plugin_id else ()
        problem = problem.redacted(self.redactor.for_plugins(whose))  # what the plugin reported
        # A folder refused an id another owns has a row of its own: the owner's load keeps it.
        duplicate = problem.stage == "duplicate"
        key = str(problem.path) if duplicate or not problem.plugin_id else problem.plugin_id
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
        bot's configuration changes; the embedder calls this then. The host sends
        a scope only to the runners of the plugins that listed it when they loaded:
        no other plugin's process receives it.

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
        return self._local.runner_for(plugin_id)

    @property
    def runtime_dir(self) -> Path | None:
        """The host's private directory (runner sockets, CurveZMQ keys) while it runs."""
        return self._sockets.path if self._sockets is not None else None

    def runners(self) -> list[RunnerSupervisor]:
        """Every supervised runner."""
        return self._local.runners()

    def status(self) -> list[PluginStatus]:
        """Every known plugin, loaded or not, sorted by id."""
        return plugin_statuses(self)

    def session(self, session_id: str, **context: Any) -> ChatSession:
        """One conversation of your turn loop, its context given once (:mod:`plughost.chat`).

        ``context`` takes :class:`ToolExecutionContext`'s fields (``stream_id``,
        ``user_id``, ``group_id``, ``platform``, ``message``...).
        """
        call_context = ToolExecutionContext(session_id=session_id, **context)
        return ChatSession(self.tools, call_context, self.search)

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
        self, name: str, /, args: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> ApiOutcome:
        """Call a plugin's API; ``args``, ``version=``, ``timeout=`` as ComponentDispatcher's."""
        return await self.dispatcher.call_api(name, args, **kwargs)

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
        runners = self._local.runners()
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
        await self._local.aclose()
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
