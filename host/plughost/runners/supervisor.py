"""One runner process under supervision: spawn, ready, heartbeat, restart, shutdown.

The supervisor owns the runner's socket and process. It declares a runner
READY when the runner reports which plugins loaded; it notices a crash the
moment the process exits (not at the next poll) and fails every call in flight
with a typed error; it notices a hung runner by the runner's own heartbeats
(which a plugin blocking the runner's loop stops) and measures its own lateness
so that a stalled host never kills a healthy runner. Restarts follow
:class:`~plughost.runners.restart.RestartPolicy`; shutdown climbs the ladder
``runner.shutdown`` -> drain -> SIGTERM -> SIGKILL, on the whole process group
so a plugin's children die with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any

import zmq.asyncio

from plughost.events import EventBus, EventKind, LifecycleEvent
from plughost.plugins.source import PluginSource
from plughost.redaction import SecretRedactor
from plughost.runners.call_errors import call_failure, component_failure, component_reply
from plughost.runners.capabilities import CapabilityRouter
from plughost.runners.channel import RemoteError, RunnerChannel
from plughost.runners.child_process import ChildProcess
from plughost.runners.curve import CurveAuthority
from plughost.runners.fork_server import ForkedProcess, ForkServer
from plughost.runners.memory import CgroupMeter, MemoryMeter, open_meter
from plughost.runners.output import MAX_LINE, RunnerOutput
from plughost.runners.processes import ProcessCgroup
from plughost.runners.reports import ProtocolViolation, check_report
from plughost.runners.restart import RestartPolicy
from plughost.runners.sandbox import SandboxReport, runner_policy
from plughost.runners.spawn import (
    SocketDirectory,
    credentials_pipe,
    new_token,
    runner_command,
    runner_env,
    start_runner_process,
)
from plughost.runners.watchdog import Watchdog
from plughost.settings import ResourceLimits, RunnerSettings
from plughost.tools import progress
from plughost.tools.client_link import ClientLink, current_client
from plughost_sdk import wire
from plughost_sdk.errors import ProtocolError, RunnerCrashedError
from plughost_sdk.models import ToolExecutionResult

__all__ = ["RunnerState", "RunnerSupervisor"]

log = logging.getLogger(__name__)
plugin_log = logging.getLogger("plughost.plugin")

ReadyCallback = Callable[["RunnerSupervisor", dict[str, Any]], None]
LostCallback = Callable[["RunnerSupervisor", str], None]


class RunnerState(Enum):
    """Where a runner is in its life."""

    STARTING = "starting"
    READY = "ready"
    RESTARTING = "restarting"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILED = "failed"


class RunnerSupervisor:
    """Keeps one runner (serving one or more plugins) alive and talks to it."""

    def __init__(
        self,
        runner_id: str,
        sources: list[PluginSource],
        *,
        settings: RunnerSettings,
        zmq_context: zmq.asyncio.Context,
        sockets: SocketDirectory,
        events: EventBus,
        capabilities: CapabilityRouter,
        data_root: Path,
        temp_root: Path,
        on_ready: ReadyCallback,
        on_lost: LostCallback,
        redactor: SecretRedactor | None = None,
        limits: ResourceLimits | None = None,
        curve: CurveAuthority | None = None,
        fork_server: ForkServer | None = None,
        sandbox: SandboxReport | None = None,
    ) -> None:
        self.runner_id = runner_id
        self.sources = {s.plugin_id: s for s in sources}
        self.state = RunnerState.STARTING
        self.pid: int | None = None
        self.last_error = ""
        self.generation = 0
        self._settings = settings
        self._zmq = zmq_context
        self._sockets = sockets
        self._events = events
        self._capabilities = capabilities
        self._roots = (data_root, temp_root)
        self.on_ready = on_ready
        self.on_lost = on_lost
        self._redact = redactor.redact if redactor is not None else _unchanged
        self.limits = limits or settings.limits
        self._curve = curve
        self._fork_server = fork_server
        self._sandbox = sandbox
        self.protections: tuple[str, ...] = ()  # what the current runner process is confined by
        self._pids: ProcessCgroup | None = None  # limits.processes on a root host
        self._policy = RestartPolicy(settings)
        self._channel: RunnerChannel | None = None
        self._ready = asyncio.Event()
        self._settled = asyncio.Event()
        self._stopping = asyncio.Event()
        self._process: ChildProcess | ForkedProcess | None = None
        self._watchdog = Watchdog(settings, self.limits, self._ready.is_set)
        self._watchdog.label = f"runner {runner_id}"
        self._output = RunnerOutput(
            runner_id,
            self.sources,
            self._redact,
            lines_per_second=settings.output_lines_per_second,
        )
        self._violation: asyncio.Future[str] | None = None
        self._reported = False  # this process sent its runner.ready
        self.report: dict[str, Any] = {"loaded": [], "failed": []}

    @property
    def plugin_ids(self) -> list[str]:
        """The plugins this runner serves."""
        return sorted(self.sources)

    async def run(self) -> None:
        """Supervise until :meth:`stop`; restart on crashes within the policy."""
        try:
            while not self._stopping.is_set():
                reason = await self._run_once()
                if self._stopping.is_set():
                    break
                delay = self._policy.next_delay()
                self._emit(
                    EventKind.RUNNER_CRASHED,
                    f"runner {self.runner_id} crashed: {reason}",
                    reason=reason,
                    restarts=self._policy.recent_crashes,
                )
                if delay is None:
                    self._give_up(reason)
                    break
                self.state = RunnerState.RESTARTING
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await self._stopping.wait()
        finally:  # however supervision ends (even by a bug), stop() must not wait forever
            if self.state is not RunnerState.FAILED:
                self.state = RunnerState.STOPPED
            self._settled.set()

    async def wait_settled(self, timeout: float) -> RunnerState:
        """Wait until the first start either reached READY or failed for good."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await _first(self._ready.wait(), self._settled.wait())
        return self.state

    def _give_up(self, reason: str) -> None:
        self.state = RunnerState.FAILED
        self.last_error = reason
        budget = f"{self._settings.max_restarts} restarts in {self._settings.restart_window:g} s"
        message = (
            f"runner {self.runner_id} crashed more than {budget}; plugins "
            f"{', '.join(self.plugin_ids)} are marked failed ({reason}). Fix the plugin and "
            "reload it to try again."
        )
        self._emit(EventKind.RUNNER_GAVE_UP, message, reason=reason)
        self.on_lost(self, reason)

    async def _run_once(self) -> str:
        """Spawn one runner process and serve it until it exits; return why it ended."""
        self.generation += 1
        endpoint_id = f"{self.runner_id}-{self.generation}"
        token = new_token()
        self._ready.clear()
        channel = RunnerChannel(
            self._zmq,
            self._endpoint(endpoint_id),
            token,
            hello_reply=self._hello_reply,
            on_request=self._on_request,
            on_event=self._on_event,
            max_message_bytes=self._settings.max_message_bytes,
            curve=self._curve if self._settings.transport == "tcp" else None,
            on_violation=self.protocol_violation,
        )
        self._sockets.secure(endpoint_id)
        self._channel = channel
        curve = self._curve if self._settings.transport == "tcp" else None
        keys = curve.issue() if curve is not None else None
        try:
            credentials = credentials_pipe(
                token, curve.credentials(keys) if curve and keys else None
            )
            del token  # the channel keeps a digest; the runner reads the pipe
            try:
                process = await self._spawn(channel.endpoint, credentials)
            finally:
                os.close(credentials)
        except BaseException as exc:  # the socket must not outlive a failed spawn of any kind
            self._channel = None
            channel.close()
            self._close_meter()
            if curve is not None and keys is not None:
                curve.revoke(keys)
            if not isinstance(exc, OSError):
                raise
            return f"cannot start the runner process: {exc}"
        try:
            if self._stopping.is_set():  # stop() came while this process started: it saw none
                _signal_group(process.pid, signal.SIGTERM)
                return "stopped while starting"
            return await self._serve(channel, process)
        finally:
            self._ready.clear()  # calls from now on wait for the next runner
            self._channel = None
            if self.state is RunnerState.READY:
                self.state = RunnerState.RESTARTING
            if self._stopping.is_set():  # stopped on purpose: its callers get shutting_down
                channel.fail_all(_STOPPED_MID_CALL, shutting_down=True)
            else:
                channel.fail_all(self.last_error or "the runner stopped")
            channel.close()
            if process.returncode is None and not self._stopping.is_set():
                _signal_group(process.pid, signal.SIGKILL)  # hung or unreachable: no ladder
            await self._reap(process)
            process.close()
            self._close_meter()
            if self._pids is not None:
                self._pids.close()
                self._pids = None
            if curve is not None and keys is not None:
                curve.revoke(keys)

    def _endpoint(self, endpoint_id: str) -> str:
        if self._settings.transport == "tcp":
            return "tcp://127.0.0.1:*"
        return self._sockets.endpoint(endpoint_id)

    async def _spawn(self, endpoint: str, credentials: int) -> ChildProcess | ForkedProcess:
        """Start the runner, forked by the fork server or as a new interpreter.

        ``credentials`` is the read end of its credentials pipe: the fork server
        receives it as a descriptor and never reads it; an interpreter inherits it.
        """
        probation = self._settings.probation_nice if self._policy.on_probation() else 0
        nice = min(19, self._settings.nice + probation)
        env = runner_env(self._settings.env_allowlist)
        confined = None
        name = f"{self.runner_id}-{self.generation}"
        memory = CgroupMeter.create(name) if self.limits.memory_mb is not None else None
        self._watchdog.memory = memory  # closed with the runner, even if it never starts
        if self._sandbox is not None:
            data_root, temp_root = self._roots
            cap = self.limits.processes
            if cap is not None:
                self._pids = ProcessCgroup.create(name, cap)
            confined = runner_policy(
                self._sandbox,
                self._settings.sandbox,
                list(self.sources.values()),
                data_root,
                temp_root,
                endpoint,
                processes=cap,
                cgroups=[c.procs for c in (self._pids, memory) if c is not None],
            )
        if confined is not None:
            env["TMPDIR"] = confined.tmpdir
        self.protections = confined.active if confined is not None else ()
        policy = confined.policy if confined is not None else ""
        command = runner_command(endpoint, self.runner_id, nice=nice, sandbox=policy)
        process = await start_runner_process(command, env, credentials, self._fork_server)
        self._process = process
        self.pid = process.pid
        if self.limits.memory_mb is not None:  # measured by the host, from the kernel
            self._watchdog.memory = open_meter(
                process.pid,
                memory,
                joined=confined is not None,  # its policy lists the cgroup: joined first
                pid_namespace="pid_namespace" in self.protections,
            )
        self._emit(
            EventKind.RUNNER_SPAWNED,
            f"runner {self.runner_id} started, pid {process.pid}"
            + (f", nice {nice}" if nice else ""),
            pid=process.pid,
            nice=nice,
            sandbox=list(self.protections),
        )
        return process

    async def _serve(self, channel: RunnerChannel, process: ChildProcess | ForkedProcess) -> str:
        violation: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._violation = violation
        self._reported = False
        tasks = [
            asyncio.create_task(channel.run()),
            asyncio.create_task(self._output.read_pipe(process.stdout, logging.INFO)),
            asyncio.create_task(self._output.read_pipe(process.stderr, logging.WARNING)),
        ]
        exited = asyncio.create_task(process.wait())
        watchdog = asyncio.create_task(self._watchdog.run())
        try:
            waits: list[asyncio.Future[Any]] = [exited, watchdog, violation, tasks[0]]
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            if exited in done:
                self._ready.clear()  # from now on calls wait for the next process (or a peer)
                # Children the plugin left behind may hold the output pipes open: end them
                # first, or collecting the crash output waits for them.
                _signal_group(process.pid, signal.SIGKILL)
                await asyncio.wait(tasks[1:], timeout=1.0)  # collect the crash output
                reason = (
                    "stopped"
                    if self._stopping.is_set()
                    else self._output.exit_reason(process.returncode, self.limits.cpu_seconds)
                )
            elif watchdog in done:
                reason = watchdog.result()
            elif violation in done:
                reason = violation.result()
            else:
                reason = f"the runner's socket failed: {tasks[0].exception()!r}"
            self.last_error = reason
            return reason
        finally:
            self._violation = None
            for task in [*tasks, exited, watchdog]:
                task.cancel()
            await asyncio.gather(*tasks, exited, watchdog, return_exceptions=True)

    def _close_meter(self) -> None:
        meter: MemoryMeter | None = self._watchdog.memory
        if meter is not None:
            meter.close()
            self._watchdog.memory = None

    def _hello_reply(self, hello: dict[str, Any]) -> dict[str, Any]:
        data_root, temp_root = self._roots
        timeout = self._settings.on_load_timeout
        return {
            "plugins": [s.load_spec(data_root, temp_root, timeout) for s in self.sources.values()],
            "heartbeat_interval": self._settings.heartbeat_interval,
            "max_message_bytes": self._settings.max_message_bytes,
            "log_level": logging.getLevelName(self._settings.log_level),
            "limits": self.limits.model_dump(exclude_none=True),
        }

    async def _on_request(self, envelope: wire.Envelope) -> Any:
        method = envelope["method"]
        try:
            if method == "runner.ready":
                self._mark_ready(envelope["body"])
                return {"ok": True}
            if method == "capability.call":
                return await self._capability_call(envelope)
            raise ProtocolViolation(f"a runner does not send {method!r} requests")
        except ProtocolViolation as exc:
            self.protocol_violation(str(exc))
            raise RemoteError(wire.error_body("unauthorized", str(exc))) from None

    async def _capability_call(self, envelope: wire.Envelope) -> Any:
        plugin_id, body = envelope["plugin"], envelope["body"]
        source = self.sources.get(plugin_id) if isinstance(plugin_id, str) else None
        if source is None:  # the runner binds the plugin id: only forged frames get here
            raise ProtocolViolation(f"capability call in the name of plugin {plugin_id!r}")
        if not isinstance(body, dict) or not isinstance(body.get("args", {}), dict):
            raise ProtocolViolation("capability call without a map of arguments")
        channel = self._channel
        call = body.get("call")
        serving = (
            channel is not None
            and isinstance(call, int)
            and channel.serving(call, source.plugin_id)
        )
        # Only a call this plugin is serving may reach that call's client.
        client = self._client_of(call) if serving else None
        return await self._capabilities.dispatch(
            source.manifest,
            str(body.get("capability", "")),
            dict(body.get("args") or {}),
            serving=serving,
            client=client,
        )

    def protocol_violation(self, reason: str) -> None:
        """Recycle the current runner process: it sent what no runner of this host sends.

        The process is killed and counted as a crash (so a plugin that keeps doing it
        ends up marked failed); its replacement gets a new token and a new socket.
        """
        violation = self._violation
        if violation is None or violation.done():
            return
        log.warning("runner %s: protocol violation: %s", self.runner_id, reason)
        violation.set_result(f"protocol violation: {reason}")

    def _mark_ready(self, body: Any) -> None:
        report = check_report(body, self.sources)
        if self._reported:
            raise ProtocolViolation("runner.ready sent a second time")
        self._reported = True
        restarted = self.generation > 1
        self.report = report
        self.state = RunnerState.READY
        self._watchdog.restart_clock()
        self.on_ready(self, report)
        loaded = [p["plugin_id"] for p in report["loaded"]]
        kind = EventKind.RUNNER_RESTARTED if restarted else EventKind.RUNNER_READY
        self._emit(
            kind,
            f"runner {self.runner_id} ready (pid {self.pid}), loaded: "
            f"{', '.join(loaded) or 'nothing'}",
            pid=self.pid,
            loaded=loaded,
        )
        self._ready.set()

    def _on_event(self, envelope: wire.Envelope) -> None:
        method, body = envelope["method"], envelope["body"]
        if not isinstance(body, dict):
            return
        if method == "runner.heartbeat":
            self._watchdog.heartbeat(body)
        elif method == "log.batch":
            self._output.forward_records(body.get("records"))
            self._relay_logs(body.get("records"))
        elif method == "progress":
            channel = self._channel
            context = channel.context_of(envelope["id"]) if channel is not None else None
            if context is not None:  # None: the call is over, or nobody sent it from here
                context.run(_report_progress, body)

    def _relay_logs(self, records: Any) -> None:
        """Pass the log records of a call to the client that made it (tools.client_link)."""
        for record in records if isinstance(records, list) else ():
            plugin = record.get("plugin") if isinstance(record, dict) else None
            if plugin not in self.sources:
                continue
            client = self._client_of(record.get("call"))
            level = record.get("level")
            if client is not None and type(level) is int:
                message = self._redact(str(record.get("message", ""))[:MAX_LINE])
                client.log(level, f"plugin.{plugin}", message)

    def _client_of(self, call: Any) -> ClientLink | None:
        """The client behind host request ``call`` (tools.client_link), if it is pending."""
        if type(call) is not int or self._channel is None:
            return None
        context = self._channel.context_of(call)
        return context.get(current_client) if context is not None else None

    async def request_content(
        self, method: wire.Method, plugin_id: str, body: dict[str, Any], timeout: float
    ) -> Any:
        """Send a ``resource.read`` or ``prompt.get`` to the runner; return the reply body.

        Raises:
            RemoteError: the plugin failed or has no such resource or prompt.
            RunnerCrashedError: the runner went away.
            TimeoutError: no answer in time.
        """
        return await self._request(method, body, plugin_id, timeout)

    async def invoke(
        self, plugin_id: str, tool: str, arguments: dict[str, Any], timeout: float
    ) -> ToolExecutionResult:
        """Call ``tool`` of ``plugin_id``; always returns exactly one result.

        Failures are typed results: ``timeout``, ``plugin_crashed``, ``plugin_not_found``,
        ``message_too_large``... A call made while the runner restarts waits for it
        (within its deadline) instead of failing at once.
        """
        timeout, capped = self._budget(timeout)
        refusal = self._refusal(plugin_id)
        if refusal is not None:
            return ToolExecutionResult.failure(tool, refusal[1], refusal[0])
        body = {"tool": tool, "arguments": arguments}
        try:
            reply = await self._request("tool.invoke", body, plugin_id, timeout)
            return wire.result_from_wire((reply or {}).get("result"))
        except (TimeoutError, RemoteError, RunnerCrashedError, ProtocolError) as exc:
            return call_failure(exc, tool, plugin_id, timeout, capped)

    async def invoke_component(
        self, plugin_id: str, kind: str, name: str, args: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        """Call a command, event handler, hook handler or API of ``plugin_id``; never raises.

        Returns the runner's reply for the component's type (see
        :mod:`plughost_sdk.components`); a failure to reach it is
        ``{"success": False, "error": message, "error_code": code}``, with the
        codes of :meth:`invoke`.
        """
        timeout, capped = self._budget(timeout)
        refusal = self._refusal(plugin_id)
        if refusal is not None:
            return {"success": False, "error": refusal[1], "error_code": refusal[0]}
        body = {"type": kind, "name": name, "args": args}
        try:
            reply = await self._request("component.invoke", body, plugin_id, timeout)
        except (TimeoutError, RemoteError, RunnerCrashedError, ProtocolError) as exc:
            return component_failure(exc, name, plugin_id, timeout, kind, capped)
        return component_reply(reply)

    def _budget(self, timeout: float) -> tuple[float, bool]:
        """The call's time limit after the plugin's wall-clock cap, and whether the cap cut it."""
        cap = self.limits.call_seconds
        if cap is not None and cap < timeout:
            return cap, True
        return timeout, False

    def _refusal(self, plugin_id: str) -> tuple[str, str] | None:
        """``(code, message)`` when no call can reach the plugin now, else None."""
        if self.state in (RunnerState.STOPPING, RunnerState.STOPPED):
            return "shutting_down", f"the runner of plugin {plugin_id} is shutting down"
        if self.state is RunnerState.FAILED:
            return (
                "plugin_crashed",
                f"plugin {plugin_id} is disabled after repeated crashes ({self.last_error}); "
                "it needs a fix and a reload",
            )
        return None

    async def _request(
        self, method: wire.Method, body: dict[str, Any], plugin_id: str, timeout: float
    ) -> Any:
        """Send one call to the runner, waiting for a restarting runner within ``timeout``.

        Raises:
            TimeoutError, RemoteError, RunnerCrashedError, ProtocolError.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        if not self._ready.is_set():  # the runner is (re)starting: wait within the deadline
            async with asyncio.timeout_at(deadline):
                await self._ready.wait()
        channel = self._channel
        if channel is None:
            raise RunnerCrashedError("no runner")
        return await channel.request(
            method, body, plugin=plugin_id, timeout=max(0.001, deadline - loop.time())
        )

    async def update_config(
        self, plugin_id: str, config: dict[str, Any], version: str, scope: str = "self"
    ) -> bool:
        """Deliver new configuration to the running plugin (``on_config_update``).

        ``scope`` is ``"self"`` for the plugin's config.toml; ``"bot"`` or ``"model"``
        carry the embedding bot's configuration to MaiBot plugins that subscribe.
        Returns whether ``on_config_update`` ran.

        Raises:
            RemoteError: the plugin rejected it (invalid, or ``on_config_update`` raised).
            RunnerCrashedError: the runner is not running.
            TimeoutError: no answer in time.
        """
        if self._channel is None or not self._ready.is_set():
            raise RunnerCrashedError(f"runner {self.runner_id} is not ready")
        body = {"config": config, "version": version, "scope": scope, "timeout": 10.0}
        reply = await self._channel.request("config.update", body, plugin=plugin_id, timeout=12.0)
        return bool(reply.get("delivered", True)) if isinstance(reply, dict) else True

    @property
    def healthy(self) -> bool:
        """Whether a call sent now reaches a live runner: ready and its process not exited."""
        process = self._process
        return (
            self.state is RunnerState.READY
            and self._ready.is_set()
            and process is not None
            and process.returncode is None
        )

    @property
    def inflight(self) -> int:
        """Calls sent to the runner and not answered yet."""
        return self._channel.inflight if self._channel else 0

    async def stop(self, drain: float | None = None) -> None:
        """Shut the runner down: ask, let calls drain, then SIGTERM, then SIGKILL."""
        drain = self._settings.shutdown_drain if drain is None else drain
        if self._stopping.is_set():
            await self._settled.wait()
            return
        self._stopping.set()
        self.state = RunnerState.STOPPING
        process, channel = self._process, self._channel
        if process is not None and process.returncode is None and channel is not None:
            with contextlib.suppress(Exception):
                if self._ready.is_set():
                    reply = await channel.request(
                        "runner.shutdown", {"drain": drain}, timeout=drain + 2
                    )
                    for plugin_id, problem in (reply or {}).get("unload_problems", {}).items():
                        log.warning("plugin %s: %s", plugin_id, self._redact(str(problem)))
            await self._reap(process)
        await self._settled.wait()
        self._emit(EventKind.RUNNER_STOPPED, f"runner {self.runner_id} stopped")

    async def _reap(self, process: ChildProcess | ForkedProcess) -> None:
        """Wait for exit; escalate SIGTERM then SIGKILL to the process group."""
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                _signal_group(process.pid, sig)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._settings.term_timeout):
                    await process.wait()
                _signal_group(process.pid, signal.SIGKILL)  # leftover children of the plugin
                return

    def kill(self) -> None:
        """SIGKILL the runner's process group now (for tests and emergencies)."""
        if self._process is not None and self._process.returncode is None:
            _signal_group(self._process.pid, signal.SIGKILL)

    def _emit(self, kind: EventKind, message: str, **details: Any) -> None:
        plugin = self.plugin_ids[0] if len(self.sources) == 1 else None
        self._events.emit(
            LifecycleEvent(
                kind, message, plugin_id=plugin, runner_id=self.runner_id, details=details
            )
        )


_STOPPED_MID_CALL = (
    "the runner was stopped (host shutdown or reload) before this call finished within its "
    "drain time (runner.shutdown_drain); the call may be retried"
)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _unchanged(text: str) -> str:
    return text


async def _first(*awaitables: Any) -> None:
    tasks = [asyncio.ensure_future(a) for a in awaitables]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _report_progress(body: dict[str, Any]) -> None:
    """Hand a runner's progress event to the receiver of the call's context."""
    if not progress.wanted():
        return
    total, message = body.get("total"), body.get("message")
    progress.report(
        float(body["progress"]),
        None if total is None else float(total),
        None if message is None else str(message),
    )
