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

:class:`RunnerSupervisor` is one class written in three modules, so that each
reads in one sitting and the call path reads on its own. Here: the restart
loop, spawning a process, the ready handshake and the call path (``invoke``,
``invoke_component``, ``request_content`` -> ``_request`` -> the channel).
What the runner sends besides replies, and configuration updates, live in
:mod:`~plughost.runners.runner_messages`; how a process ends (watched until it
does, or stopped by the ladder) in :mod:`~plughost.runners.shutdown`. The state
the three share is typed once in :mod:`~plughost.runners.runner_state`, with
:class:`RunnerState`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import zmq.asyncio

from plughost.destinations import Grants
from plughost.egress import EgressGate
from plughost.events import EventBus, EventKind
from plughost.plugins.source import PluginSource
from plughost.redaction import SecretRedactor, unchanged
from plughost.runners.call_errors import call_failure, component_failure, component_reply
from plughost.runners.capabilities import CapabilityRouter
from plughost.runners.channel import RemoteError, RunnerChannel
from plughost.runners.child_process import ChildProcess
from plughost.runners.curve import CurveAuthority
from plughost.runners.disk import DiskMeter
from plughost.runners.fork_server import ForkedProcess, ForkServer
from plughost.runners.output import RunnerOutput
from plughost.runners.processes import ProcessCgroup
from plughost.runners.refusals import PathRefusals
from plughost.runners.reports import ProtocolViolation, check_report
from plughost.runners.restart import RestartPolicy
from plughost.runners.runner_messages import RunnerMessages
from plughost.runners.runner_state import RunnerState
from plughost.runners.sandbox import SandboxReport, manifest_ports, runner_policy
from plughost.runners.shutdown import RunnerShutdown, signal_group
from plughost.runners.spawn import (
    SocketDirectory,
    credentials_pipe,
    new_token,
    runner_command,
    runner_env,
    start_runner_process,
)
from plughost.runners.view_code import set_aside_view_code
from plughost.runners.watchdog import Watchdog
from plughost.settings import ResourceLimits, RunnerSettings
from plughost_sdk import wire
from plughost_sdk.errors import ProtocolError, RunnerCrashedError
from plughost_sdk.models import ToolExecutionResult

__all__ = ["RunnerState", "RunnerSupervisor", "wait_all_settled"]

log = logging.getLogger(__name__)
plugin_log = logging.getLogger("plughost.plugin")

ReadyCallback = Callable[["RunnerSupervisor", dict[str, Any]], None]
LostCallback = Callable[["RunnerSupervisor", str], None]


class RunnerSupervisor(RunnerMessages, RunnerShutdown):
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
        network_grants: Sequence[str] = (),
        write_grants: Sequence[Path] = (),
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
        # Text from this runner is masked with its plugins' secrets: each call names them.
        self._redact = redactor.redact if redactor is not None else unchanged
        self.limits = limits or settings.limits
        self._curve = curve
        self._fork_server = fork_server
        self._sandbox = sandbox
        self.grants = Grants(network_grants)
        self.refusals = PathRefusals()
        self._write_grants = tuple(write_grants)
        self.gate: EgressGate | None = None  # the runner's way to its grants, once it has any
        self.protections: tuple[str, ...] = ()  # what the current runner process is confined by
        self._pids: ProcessCgroup | None = None  # limits.processes on a root host
        self._policy = RestartPolicy(settings)
        self._channel = None
        self._ready = asyncio.Event()
        self._settled = asyncio.Event()
        # Set once the first start is over: READY, or supervision ended. Awaited
        # directly (no task per wait), so fifty runners settle without 150 tasks.
        self.first_start_over = asyncio.Event()
        self._stopping = asyncio.Event()
        self._process = None
        self._watchdog = Watchdog(
            settings, self.limits, self._ready.is_set, waiting=lambda: self.inflight
        )
        self._watchdog.label = f"runner {runner_id}"
        self._output = RunnerOutput(
            runner_id,
            self.sources,
            self._redact,
            lines_per_second=settings.output_lines_per_second,
        )
        self._violation = None
        self._reported = False
        self.report = {"loaded": [], "failed": []}

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
            self.first_start_over.set()
            if self.gate is not None:
                await self.gate.aclose()

    async def wait_settled(self, timeout: float) -> RunnerState:
        """Wait until the first start either reached READY or failed for good."""
        await wait_all_settled([self], timeout)
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
            on_ask=self._watchdog.asked,
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
                signal_group(process.pid, signal.SIGTERM)
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
                signal_group(process.pid, signal.SIGKILL)  # hung or unreachable: no ladder
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
        meters = self._watchdog.make_cgroups(name)  # closed with the runner, started or not
        if self._sandbox is not None:
            data_root, temp_root = self._roots
            cap = self.limits.processes
            if cap is not None:
                self._pids = ProcessCgroup.create(name, cap)
            gate = await self._open_gate()
            await set_aside_view_code(self.sources, data_root, self._events, self.runner_id)
            confined = runner_policy(
                self._sandbox,
                self._settings.sandbox,
                list(self.sources.values()),
                data_root,
                temp_root,
                endpoint,
                processes=cap,
                cgroups=[*([self._pids.procs] if self._pids else []), *meters],
                runner_id=self.runner_id,
                disk_mb=self.limits.disk_mb,
                egress=str(gate.path) if gate is not None else "",
                write_grants=self._write_grants,
            )
        self._watchdog.disk = None
        if confined is not None:
            env["TMPDIR"] = confined.tmpdir
            if self.limits.disk_mb is not None:
                self._watchdog.disk = DiskMeter(confined.disk, self.limits.disk_mb * 2**20)
        self.protections = confined.active if confined is not None else ()
        policy = confined.policy if confined is not None else ""
        command = runner_command(endpoint, self.runner_id, nice=nice, sandbox=policy)
        process = await start_runner_process(command, env, credentials, self._fork_server)
        self._process = process
        self.pid = process.pid
        self._watchdog.attach(  # memory and CPU, measured by the host from the kernel
            process.pid,
            joined=confined is not None,  # its policy lists the cgroups: joined first
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

    def grant(self, grants: Sequence[str]) -> None:
        """Replace this runner's network grants; a running gate applies them at once.

        A runner started with no grant has no gate, and no way out of its
        network namespace: it gets one at its next start (a reload does that).
        """
        self.grants = Grants(grants)
        if self.gate is not None:
            self.gate.grants = self.grants

    async def _open_gate(self) -> EgressGate | None:
        """The runner's gate to the network its plugins were granted (made once, kept)."""
        sandbox = self._settings.sandbox
        ports = manifest_ports(sandbox, list(self.sources.values()))
        if not self.grants and not sandbox.learn and not ports:
            return None
        if self.gate is None:
            self.gate = EgressGate(
                self._sockets.path / f"{self.runner_id}.egress",
                self.grants,
                runner_id=self.runner_id,
                plugin_ids=list(self.sources),
                events=self._events,
                pinned=sandbox.hosts,
                learn=sandbox.learn,
                ports=ports,
            )
            await self.gate.start()
        return self.gate

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
        self.first_start_over.set()

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
        if self.state is not RunnerState.READY:  # a ready runner refuses nothing
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

    def _request(
        self, method: wire.Method, body: dict[str, Any], plugin_id: str, timeout: float
    ) -> Awaitable[Any]:
        """Send one call to the runner, waiting for a restarting runner within ``timeout``.

        A ready runner's channel is awaited directly (one coroutine less on every call).

        Raises:
            TimeoutError, RemoteError, RunnerCrashedError, ProtocolError.
        """
        channel = self._channel
        if channel is not None and self._ready.is_set():
            return channel.request(method, body, plugin=plugin_id, timeout=timeout)
        return self._request_when_ready(method, body, plugin_id, timeout)

    async def _request_when_ready(
        self, method: wire.Method, body: dict[str, Any], plugin_id: str, timeout: float
    ) -> Any:
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
    def resting(self) -> bool:
        """Whether the runner rests between idle heartbeats (:mod:`plughost.runners.watchdog`)."""
        return self._watchdog.resting

    @property
    def inflight(self) -> int:
        """Calls sent to the runner and not answered yet."""
        return self._channel.inflight if self._channel else 0


_STOPPED_MID_CALL = (
    "the runner was stopped (host shutdown or reload) before this call finished within its "
    "drain time (runner.shutdown_drain); the call may be retried"
)


async def wait_all_settled(runners: Sequence[RunnerSupervisor], timeout: float) -> None:
    """Wait, under one deadline, until every runner's first start is over.

    The runners start together, so one deadline for all is each one's own; an
    event already set is passed without a suspension.
    """
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            for runner in runners:
                await runner.first_start_over.wait()
