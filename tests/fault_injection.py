"""Tools for fault-injection tests: plugin copies, events, a call ledger, an intruder, processes.

Nothing here asserts; tests decide what the records must show.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import shutil
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import zmq
import zmq.asyncio

import plughost.runners.supervisor
from plughost.events import EventKind, LifecycleEvent
from plughost.host import PluginHost
from plughost.runners import channel as channel_module
from plughost.runners.channel import RunnerChannel
from plughost.runners.supervisor import RunnerSupervisor
from plughost.settings import HostSettings
from plughost_sdk import wire
from plughost_sdk.models import ToolExecutionResult
from tests.conftest import fast_settings
from tests.waiting import wait_until

_ISSUED: dict[bytes, str] = {}
_credentials_pipe = plughost.runners.supervisor.credentials_pipe


def _tapped_credentials_pipe(token: str, curve: tuple[str, str, str] | None = None) -> int:
    _ISSUED[channel_module._digest(token)] = token
    return _credentials_pipe(token, curve)


# The host keeps only a digest of each runner's token. Tests that play a thief who stole
# one read it here: importing this module taps the supervisor's credentials pipe.
plughost.runners.supervisor.credentials_pipe = _tapped_credentials_pipe


def runner_token(channel: RunnerChannel) -> str:
    """The token the host issued for ``channel``'s runner (see the tap above)."""
    return _ISSUED[channel._token_digest]


MARGIN = 3.0
"""Seconds past a call's deadline within which its result must have arrived."""


def patient_settings(tmp_path: Path, **runner: Any) -> HostSettings:
    """Fast test settings that still do not take a runner starved of CPU for a hung one.

    Runners may also write ``tmp_path/pids``, where the spawn_children plugin records
    its children for the test (as an operator grants a folder: sandbox.write_paths);
    a ``sandbox`` argument adds to that.
    """
    pids = tmp_path / "pids"
    pids.mkdir(exist_ok=True)
    options: dict[str, Any] = {
        "heartbeat_interval": 0.2,
        "heartbeat_misses": 10,
    }
    options.update(runner)
    options["sandbox"] = {"write_paths": [pids], **runner.get("sandbox", {})}
    return fast_settings(tmp_path, **options)


@dataclass
class EventLog:
    """Records a host's events; ``next`` consumes them in order, so none in a burst is missed."""

    events: list[LifecycleEvent] = field(default_factory=list)
    cursor: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def __call__(self, event: LifecycleEvent) -> None:
        self.events.append(event)
        self.changed.set()

    async def next(
        self, kind: EventKind | set[EventKind], plugin_id: str, timeout: float = 20.0
    ) -> LifecycleEvent:
        """The next event of ``kind`` (or of any of a set) about ``plugin_id``, in order."""
        kinds = kind if isinstance(kind, set) else {kind}
        async with asyncio.timeout(timeout):
            while True:
                for index in range(self.cursor, len(self.events)):
                    event = self.events[index]
                    if event.kind in kinds and event.plugin_id == plugin_id:
                        self.cursor = index + 1
                        return event
                self.changed.clear()
                await self.changed.wait()

    def of(self, plugin_id: str, kinds: set[EventKind] | None = None) -> list[LifecycleEvent]:
        """Every event about ``plugin_id`` so far (of ``kinds`` only, if given)."""
        return [
            e
            for e in self.events
            if e.plugin_id == plugin_id and (kinds is None or e.kind in kinds)
        ]


def copy_plugin(source: Path, dest: Path, plugin_id: str, *, fault: str | None = None) -> Path:
    """Copy the plugin folder ``source`` to ``dest`` under another id (and a ``fault.txt``)."""
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__"))
    manifest_file = dest / "_manifest.json"
    manifest = json.loads(manifest_file.read_text())
    manifest["id"] = plugin_id
    manifest["name"] = plugin_id.rsplit(".", 1)[-1]
    manifest_file.write_text(json.dumps(manifest))
    if fault is not None:
        (dest / "fault.txt").write_text(fault)
    return dest


def write_bare_plugin(folder: Path, plugin_id: str) -> Path:
    """A plugin folder with a manifest and an empty plugin.py (for a fake runner to serve)."""
    folder.mkdir(parents=True)
    manifest = {
        "manifest_version": 2,
        "id": plugin_id,
        "version": "1.0.0",
        "name": plugin_id.rsplit(".", 1)[-1],
        "description": "Served by tests/fake_runner.py, never imported",
        "author": {"name": "plughost tests"},
        "license": "MIT",
    }
    (folder / "_manifest.json").write_text(json.dumps(manifest))
    (folder / "plugin.py").write_text('"""Never imported: a fake runner serves this plugin."""\n')
    return folder


def outcome(result: ToolExecutionResult) -> str:
    """``ok`` for a success, else the error code."""
    return "ok" if result.success else str(result.error_code)


async def model_name(host: PluginHost, plugin_id: str, tool: str) -> str:
    """The name the model calls ``plugin_id``'s ``tool`` by (qualified if another took it)."""
    tool_id = f"plugin:{plugin_id}:{tool}"
    specs = await host.tools.list_tools(include_hidden=True)
    return next(spec.name for spec in specs if spec.tool_id == tool_id)


async def invoke_with_deadline(
    host: PluginHost, plugin_id: str, tool: str, deadline: float, **arguments: object
) -> ToolExecutionResult:
    """Call a plugin's tool through its supervisor with an explicit deadline."""
    runner = host.runner_for(plugin_id)
    if runner is None:
        return ToolExecutionResult.failure(tool, f"no runner for {plugin_id}", "no_runner")
    return await runner.invoke(plugin_id, tool, dict(arguments), deadline)


@dataclass
class Ledger:
    """Counts calls and results; keeps only the calls that broke a promise.

    Records are small and only the broken calls are kept, so that a storm of
    100,000 calls does not itself grow the process whose memory a test measures.
    """

    issued: int = 0
    answered: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    lost: list[str] = field(default_factory=list)
    late: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)

    async def run(
        self,
        call_id: str,
        target: str,
        deadline: float,
        call: Awaitable[ToolExecutionResult],
        check: Callable[[ToolExecutionResult], str] = lambda _: "",
    ) -> bool:
        """Await ``call`` under deadline + MARGIN and count what it returned.

        ``check`` returns a description of what is wrong with a result ('' if nothing).
        Returns whether the call was answered in time and passed ``check``.
        """
        self.issued += 1
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            async with asyncio.timeout(deadline + MARGIN):
                result = await call
        except TimeoutError:
            self.lost.append(call_id)
            return False
        self.answered += 1
        self.outcomes[f"{target} {outcome(result)}"] += 1
        if loop.time() - started > deadline + MARGIN:
            self.late.append(call_id)
            return False
        problem = check(result)
        if problem:
            self.wrong.append(f"{call_id}: {problem}")
        return not problem


class Intruder:
    """Talks to a host's runner sockets from outside: garbage, forged and stolen hellos."""

    def __init__(self) -> None:
        self._context = zmq.asyncio.Context()
        self.sent = 0
        self.unreachable = 0

    async def send(
        self, endpoint: str, parts: list[bytes], *, reply: bool, patience: float = 5.0
    ) -> bytes | None:
        """Send one message of ``parts`` to ``endpoint``; return the reply if one is expected.

        Returns None when no reply is expected, or when the endpoint went away (its runner
        restarted) before the message could be delivered or answered within ``patience``.
        """
        sock = self._context.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 2000)  # deliver the frames even though we close at once
        sock.connect(endpoint)
        try:
            async with asyncio.timeout(patience):  # a DEALER waits forever for a gone peer
                await sock.send_multipart(parts)
                if not reply:
                    self.sent += 1
                    return None
                answer = bytes(await sock.recv())
                self.sent += 1
                return answer
        except TimeoutError:
            self.unreachable += 1
            return None
        finally:
            sock.close()

    async def hello(
        self,
        endpoint: str,
        token: str,
        protocol: int = wire.PROTOCOL_VERSION,
        patience: float = 5.0,
    ) -> str:
        """Say hello with ``token``; return the refusal's error code ('' if accepted).

        Returns ``unreachable`` when the endpoint went away first.
        """
        body = {"token": token, "protocol": protocol, "pid": os.getpid()}
        frame = wire.encode(wire.request(1, "runner.hello", body))
        answer = await self.send(endpoint, [frame], reply=True, patience=patience)
        if answer is None:
            return "unreachable"
        error = wire.decode(answer)["error"]
        return "" if error is None else str(error["code"])

    async def garbage(self, runner: RunnerSupervisor, patience: float = 5.0) -> str:
        """Send the runner's socket a frame that is not msgpack and a three-part message.

        Returns ``rejected`` once the host has counted both as rejected, ``unreachable``
        when the runner restarted meanwhile (its socket is gone), else ``ignored``.
        """
        channel = runner._channel
        if channel is None:
            return "unreachable"
        before = channel.rejected_frames
        await self.send(channel.endpoint, [b"\x00\xffnot msgpack"], reply=False, patience=patience)
        await self.send(channel.endpoint, [b"three", b"parts"], reply=False, patience=patience)
        try:
            await wait_until(lambda: channel.rejected_frames >= before + 2, timeout=patience)
        except AssertionError:
            return "unreachable" if runner._channel is not channel else "ignored"
        return "rejected"

    async def forge_hello(
        self, runner: RunnerSupervisor, how: str, patience: float = 5.0
    ) -> tuple[str, str]:
        """Say hello to the runner's socket as an impostor; return (answer, expected answer).

        ``how``: ``forged`` (a made-up token), ``old_protocol`` (the right token, another
        protocol version) or ``stolen`` (the right token while the runner is connected:
        refused, and the runner is recycled, since its token is known to be stolen).
        """
        channel = runner._channel
        if channel is None:
            return "unreachable", "unreachable"
        endpoint, token = channel.endpoint, runner_token(channel)
        if how == "forged":
            return await self.hello(endpoint, "forged", patience=patience), "unauthorized"
        if how == "old_protocol":
            return await self.hello(endpoint, token, 999, patience), "protocol_mismatch"
        return await self.hello(endpoint, token, patience=patience), "unauthorized"

    def close(self) -> None:
        """Close the context and every socket still open."""
        self._context.destroy(linger=0)


def rss_mb() -> float:
    """This process's resident memory in MiB, after a full garbage collection."""
    gc.collect()
    return psutil.Process().memory_info().rss / 2**20


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running (not zombie) process."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def processes_mentioning(*needles: str) -> list[psutil.Process]:
    """Live processes whose command line contains every one of ``needles``."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        cmdline = " ".join(process.info["cmdline"] or ())
        if process.info["status"] != psutil.STATUS_ZOMBIE and all(n in cmdline for n in needles):
            found.append(process)
    return found


def runners_of_this_process() -> list[psutil.Process]:
    """Runner processes (real or fake) started by this test process."""
    return processes_mentioning("--runner-id", f"--parent-pid {os.getpid()}")


def pids_recorded(folder: Path) -> dict[str, int]:
    """The ``ROLE.PID`` files the spawn_children test plugin leaves, as role -> pid."""
    if not folder.exists():
        return {}
    return {p.name.split(".")[0]: int(p.name.split(".")[1]) for p in folder.iterdir()}


def kill_all(pids: Iterable[int]) -> None:
    """SIGKILL every pid still alive (cleanup after a test that expects survivors)."""
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


async def kill_host_and_wait_for_its_children(script: Path, cwd: Path, *, ready: float) -> None:
    """Run ``script`` (a host that prints the pids to watch, then waits), SIGKILL it, and
    wait until none of those processes is left: a host's children never outlive it."""
    process = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=cwd
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), ready)
        pids = [int(p) for p in line.split()]
        assert pids and all(psutil.pid_exists(p) for p in pids)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)
        await wait_until(
            lambda: not any(_alive(p) for p in pids), timeout=10, what="every child ending"
        )
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        if process.stdout is not None:
            process.stdout.close()


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
