"""The runner's life around its calls: start-up, heartbeats, logs, health, shutdown.

Start-up: connect, ``runner.hello`` (token and protocol version; the
credentials are wiped once it is sent), apply what the host answered
(heartbeat interval, message size, log level, limits), start the heartbeats,
load the plugins the host named (or, for a remote runner, those of its offers
the host accepted), and send ``runner.ready`` with what loaded and what failed.
Then, until ``runner.shutdown`` (calls drain, plugins unload) or until the host
goes away: a heartbeat every interval from the loop (and from the pulse thread
while a handler blocks it), which also hands freed memory back after an idle
beat; the plugins' log records in batches; ``runner.health`` on request.

At rest nothing wakes the runner but its heartbeat. Once ready, after a whole
interval with no request served and none in flight, the beat stretches to the
host's ``heartbeat_idle_interval`` and the pulse thread sleeps; the next request
wakes both at once (the beat goes out straight away, then every interval again).
Log records are sent when there are some: the first one of a burst arms a send
``LOG_BATCH_SECONDS`` later, so the burst travels as one batch.

Kept out of :mod:`plughost_runner.service`, which serves the calls and loads
the plugins: of all this, the call path only sends a call's pending log records
before its reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

import zmq

from plughost_runner.link.bridge import HostError
from plughost_runner.link.pulse import Pulse
from plughost_runner.link.transport import Transport
from plughost_runner.plugins.invoker import Invoker
from plughost_runner.plugins.loader import LoadedPlugin, PluginSpec, unload_plugin
from plughost_runner.process.capture import LogCollector
from plughost_runner.process.credentials import Credentials
from plughost_runner.process.heap import release_freed_memory
from plughost_runner.process.limits import apply_limits
from plughost_sdk import __version__ as sdk_version
from plughost_sdk import wire

__all__ = ["ServiceLifecycle"]

log = logging.getLogger("plughost_runner")

LOG_BATCH_SECONDS = 0.1
"""How long after the first record of a burst its batch is sent."""


class ServiceLifecycle:
    """The runner service's start-up, background sends, health and shutdown."""

    _runner_id: str
    _credentials: Credentials
    _collector: LogCollector
    _offers: list[PluginSpec] | None  # a remote runner's own plugins; None when spawned
    _transport: Transport
    _invoker: Invoker
    _plugins: dict[str, LoadedPlugin]
    _tasks: dict[int, asyncio.Task[None]]  # the requests being served, by id
    _pulse: Pulse | None
    _beat_seq: int
    _served: int  # requests answered, so an idle beat knows whether to trim the heap
    _trimmed_at: int
    _max_bytes: int
    _heartbeat_interval: float
    _idle_interval: float | None = None  # the host's heartbeat_idle_interval; None: never rest
    _settled = False  # runner.ready was answered: beats may stretch when idle
    _resting = False  # the beat waits out an idle interval and the pulse sleeps
    _woken: asyncio.Event
    _shutting_down: bool
    _stopped: asyncio.Event
    _loop: asyncio.AbstractEventLoop | None

    if TYPE_CHECKING:  # the service's own

        def _on_frame(self, group: asyncio.TaskGroup, parts: list[zmq.Frame]) -> None: ...

        async def request(
            self, method: wire.Method, body: Any, *, plugin: str | None = None, timeout: float
        ) -> Any: ...

        async def _load(self, specs: list[PluginSpec]) -> dict[str, Any]: ...

        async def _serving(self, group: asyncio.TaskGroup) -> None: ...

    async def run(self) -> int:
        """Serve until shutdown; return the process exit code."""
        exit_code = 0
        self._loop = asyncio.get_running_loop()
        try:
            async with asyncio.TaskGroup() as group:
                # A partial, not a lambda: one Python frame less on every message.
                group.create_task(self._transport.serve(functools.partial(self._on_frame, group)))
                group.create_task(self._serve_host(group))
        except* _StopRunner:
            pass
        except* HostError as refused:
            for exc in refused.exceptions:
                print(f"plughost runner: the host refused this runner: {exc}", file=sys.__stderr__)
            exit_code = 3
        finally:
            if self._pulse is not None:
                self._pulse.stop()
            self._invoker.shutdown()
            self._transport.close()
        return exit_code

    async def _serve_host(self, group: asyncio.TaskGroup) -> None:
        hello = await self._hello()
        self._configure(hello)
        self._woken = asyncio.Event()
        group.create_task(self._beat())
        self._pulse = Pulse(
            self._transport, self._invoker, self._heartbeat_interval, self._beat_counters
        )
        self._pulse.start()
        group.create_task(self._flush_logs())
        # Let the first heartbeat out before plugin code runs: the host then knows this
        # runner is alive, and tells a plugin blocking the loop from a slow start.
        await asyncio.sleep(0)
        if self._offers is not None:
            accepted = {str(plugin_id) for plugin_id in hello.get("accepted", [])}
            specs = [spec for spec in self._offers if spec.plugin_id in accepted]
        else:
            specs = [PluginSpec.from_wire(p) for p in hello.get("plugins", [])]
        report = await self._load(specs)
        await self._serving(group)
        await self.request("runner.ready", report, timeout=30.0)
        self._settled = True
        await self._stopped.wait()
        await self._send_logs()
        raise _StopRunner

    async def _hello(self, timeout: float = 10.0) -> dict[str, Any]:
        """Say hello until the host answers (a remote runner) or ``timeout`` passes once."""
        body = {
            "token": self._credentials.token.decode(),
            "protocol": wire.PROTOCOL_VERSION,
            "runner_id": self._runner_id,
            "pid": os.getpid(),
            "sdk_version": sdk_version,
        }
        if self._offers is not None:
            body["offers"] = [spec.offer() for spec in self._offers]
        try:
            while True:
                try:
                    reply = await self.request("runner.hello", body, timeout=timeout)
                    break
                except TimeoutError:
                    if self._offers is None:
                        raise
                    # A remote runner may start before its host is reachable: keep asking.
                    print("plughost runner: no answer from the host yet", file=sys.__stderr__)
        finally:
            # Spent: the host accepts a token once. Wiped before any plugin code runs.
            self._credentials.wipe()
            body.clear()
        return reply if isinstance(reply, dict) else {}

    def _configure(self, hello: dict[str, Any]) -> None:
        self._max_bytes = int(hello.get("max_message_bytes", self._max_bytes))
        self._heartbeat_interval = float(hello.get("heartbeat_interval", self._heartbeat_interval))
        idle = hello.get("heartbeat_idle_interval")
        self._idle_interval = max(float(idle), self._heartbeat_interval) if idle else None
        # A step this long already cost the host two heartbeats: worth a warning.
        self._invoker.slow_step = 2 * self._heartbeat_interval
        logging.getLogger().setLevel(int(hello.get("log_level", logging.INFO)))
        apply_limits(dict(hello.get("limits") or {}))

    async def _on_health(self, envelope: wire.Envelope) -> Any:
        return {
            "pid": os.getpid(),
            "plugins": sorted(self._plugins),
            "inflight": len(self._tasks),
            "stuck": self._invoker.stuck_calls(),
        }

    async def _on_shutdown(self, envelope: wire.Envelope) -> Any:
        self._shutting_down = True
        drain = float((envelope["body"] or {}).get("drain", 5.0))
        others = [t for rid, t in self._tasks.items() if rid != envelope["id"]]
        if others:
            await asyncio.wait(others, timeout=drain)
        problems = {}
        for plugin_id, plugin in self._plugins.items():
            problem = await unload_plugin(plugin, timeout=max(0.5, drain / 2))
            if problem:
                problems[plugin_id] = problem
        self._plugins.clear()
        asyncio.get_running_loop().call_soon(self._stopped.set)
        return {"unload_problems": problems}

    async def _beat(self) -> None:
        served = -1
        while True:
            body = self._beat_counters()
            await self._transport.send((wire.encode(wire.event("runner.heartbeat", body)),))
            quiet = served == self._served and not self._tasks  # over the whole last pause
            served = self._served
            await self._pause(quiet)
            if not self._tasks and served == self._served != self._trimmed_at:
                # No call for a whole beat after some: what they freed goes back now.
                self._trimmed_at = served
                release_freed_memory()

    async def _pause(self, quiet: bool) -> None:
        """Wait until the next beat is due: an interval, or while quiet an idle one."""
        idle = self._idle_interval
        if not (quiet and self._settled and idle is not None):
            if self._resting:
                self._wake()
            await asyncio.sleep(self._heartbeat_interval)  # the beat's period
            return
        self._woken.clear()
        if not self._resting:
            self._resting = True
            if self._pulse is not None:
                self._pulse.rest()
        # On a grid of the monotonic clock, which every process shares: the beats of all
        # resting runners reach the host together, and it wakes once for them.
        pause = idle - asyncio.get_running_loop().time() % idle
        if pause < self._heartbeat_interval:
            pause += idle
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(pause):
                await self._woken.wait()  # set by the next request (see _wake)

    def _wake(self) -> None:
        """A request came: beat now and every interval again, and wake the pulse thread.

        Called before the request's first step runs, which may block the loop.
        """
        self._resting = False
        self._woken.set()
        if self._pulse is not None:
            self._pulse.resume()

    def _beat_counters(self) -> dict[str, Any]:
        """A heartbeat's fields; also called on the pulse thread, so it only reads."""
        self._beat_seq += 1
        return {
            "seq": self._beat_seq,
            "inflight": len(self._tasks),
            "stuck": self._invoker.stuck_calls(),
        }

    async def _flush_logs(self) -> None:
        news = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop_thread = threading.get_ident()

        def announce() -> None:  # on any thread a plugin logs from
            if threading.get_ident() == loop_thread:
                news.set()
                return
            with contextlib.suppress(RuntimeError):  # the loop is closed: the runner is ending
                loop.call_soon_threadsafe(news.set)

        self._collector.on_news = announce
        if self._collector.has_news():  # queued before anyone listened (start-up)
            news.set()
        try:
            while True:
                await news.wait()
                await asyncio.sleep(LOG_BATCH_SECONDS)  # gather the burst: one batch
                news.clear()
                await self._send_logs()
        finally:
            self._collector.on_news = None

    async def _send_logs(self) -> None:
        self._collector.taken()
        while self._collector.has_news():
            records = self._collector.drain(500)
            if self._collector.dropped:
                dropped, self._collector.dropped = self._collector.dropped, 0
                records.append(
                    {
                        "level": logging.WARNING,
                        "logger": "plughost_runner",
                        "message": f"{dropped} log lines dropped: a plugin writes output faster "
                        "than it can be forwarded",
                        "plugin": None,
                        "time": time.time(),
                    }
                )
            await self._transport.send(
                (wire.encode(wire.event("log.batch", {"records": records})),)
            )
            if len(records) < 500:
                return


class _StopRunner(Exception):
    """Ends the task group when the runner is told to stop."""
