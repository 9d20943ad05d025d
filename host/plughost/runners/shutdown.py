"""How a runner process ends: noticed while it is served, or brought about by the host.

A served process ends at the first of: its exit (seen the moment it happens,
not at the next poll), the watchdog's verdict (no heartbeat, a stuck call, too
much memory), a protocol violation, or a failure of its socket
(:meth:`RunnerShutdown._serve` says which, and the supervisor's restart policy
takes it from there). The host ends one by climbing the ladder
``runner.shutdown`` -> drain -> SIGTERM -> SIGKILL (:meth:`RunnerShutdown.stop`),
always on the whole process group, so that a plugin's children die with it.

Kept out of :mod:`plughost.runners.supervisor`, which spawns the process and
carries the call path: nothing here is on a call's way to the runner and back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from typing import Any

from plughost.events import EventKind
from plughost.runners.channel import RunnerChannel
from plughost.runners.child_process import ChildProcess
from plughost.runners.fork_server import ForkedProcess
from plughost.runners.runner_state import RunnerState, SupervisedRunner

__all__ = ["RunnerShutdown", "signal_group"]

log = logging.getLogger("plughost.runners.supervisor")  # one logger for a runner's supervision


class RunnerShutdown(SupervisedRunner):
    """Watching a runner process until it ends, and ending it."""

    async def _serve(self, channel: RunnerChannel, process: ChildProcess | ForkedProcess) -> str:
        violation: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._violation = violation
        self._reported = False
        tasks = [
            asyncio.create_task(channel.run()),
            asyncio.create_task(self._output.read_pipe(process.stdout, logging.INFO)),
            asyncio.create_task(self._output.read_pipe(process.stderr, logging.WARNING)),
        ]
        exited = process.exit_code()
        watchdog = asyncio.create_task(self._watchdog.run())
        try:
            waits: list[asyncio.Future[Any]] = [exited, watchdog, violation, tasks[0]]
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            if exited in done:
                self._ready.clear()  # from now on calls wait for the next process (or a peer)
                # Children the plugin left behind may hold the output pipes open: end them
                # first, or collecting the crash output waits for them.
                signal_group(process.pid, signal.SIGKILL)
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
            pending: list[asyncio.Future[Any]] = [*tasks, exited, watchdog]
            for task in pending:
                task.cancel()
            await asyncio.gather(*tasks, exited, watchdog, return_exceptions=True)

    def _close_meter(self) -> None:
        self._watchdog.close_meters()

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
                        said = self._redact(str(problem), (plugin_id,))
                        log.warning("plugin %s: %s", plugin_id, said)
            await self._reap(process)
        await self._settled.wait()
        self._emit(EventKind.RUNNER_STOPPED, f"runner {self.runner_id} stopped")

    async def _reap(self, process: ChildProcess | ForkedProcess) -> None:
        """Wait for exit; escalate SIGTERM then SIGKILL to the process group."""
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                signal_group(process.pid, sig)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._settings.term_timeout):
                    await process.wait()
                signal_group(process.pid, signal.SIGKILL)  # leftover children of the plugin
                return

    def kill(self) -> None:
        """SIGKILL the runner's process group now (for tests and emergencies)."""
        if self._process is not None and self._process.returncode is None:
            signal_group(self._process.pid, signal.SIGKILL)


def signal_group(pid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to process group ``pid``, which may be gone already."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
