"""A remote runner stopped with SIGTERM or SIGINT drains: no call it took fails.

Real runner processes over loopback CurveZMQ, as a Kubernetes rollout or
scale-down stops a runner pod: the runner tells the host it is leaving, the
host sends new calls to the pool's other members at once, the calls in flight
return their results, the runner exits 0 and its member leaves the pool at
once, without the ``[host.remote] grace`` wait (30 s in these settings).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from plughost.host import PluginHost
from plughost.remote.member import RemoteRunner, RemoteState
from plughost_sdk.models import ToolExecutionResult
from tests.integration import shared_remote
from tests.integration.remote_helpers import (
    PLUGIN_ID,
    exited,
    healthy_members,
    issue,
    listening_at,
    logged,
    pause,
    plugin_dir,
    remote_pool,
    start_runner,
    status_of,
)
from tests.integration.shared_remote import keys_of, own_name
from tests.integration.test_replicas import write_plugin
from tests.waiting import wait_until

pytestmark = pytest.mark.asyncio(loop_scope="module")  # the loop the shared host runs on
# Every test takes ``host`` from one shared host, given back clean (see shared_remote).
shared_host = shared_remote.shared_remote_host
host = shared_remote.host_for_the_test


HOLDING_PLUGIN = """
import asyncio
import os
from pathlib import Path
from typing import Any
from plughost_sdk import Plugin, Tool
from plughost_sdk.types import ToolParameterInfo, ToolParamType

class Holding(Plugin):
    @Tool(
        "pause",
        brief_description="Wait, then say who answered",
        parameters=[ToolParameterInfo(name="seconds", param_type=ToolParamType.FLOAT)],
    )
    async def pause(self, seconds: float, **kwargs: Any) -> dict[str, Any]:
        await asyncio.sleep(seconds)
        return {"content": "paused", "pid": os.getpid()}

    @Tool(
        "hold",
        brief_description="Say it started (a file), wait for its release (a file) or "
        "the seconds, then say who answered",
        parameters=[
            ToolParameterInfo(name="seconds", param_type=ToolParamType.FLOAT),
            ToolParameterInfo(name="marker", param_type=ToolParamType.STRING),
        ],
    )
    async def hold(self, seconds: float, marker: str, **kwargs: Any) -> dict[str, Any]:
        Path(marker + ".part").write_text(str(os.getpid()))
        os.replace(marker + ".part", marker)  # seen whole or not at all
        release = Path(marker + ".release")
        end = asyncio.get_running_loop().time() + seconds
        while not release.exists() and asyncio.get_running_loop().time() < end:
            await asyncio.sleep(0.02)  # the test's release lives in another process: a file
        return {"content": "held", "pid": os.getpid()}

def create_plugin() -> Holding:
    return Holding()
"""


def holding_plugins(root: Path) -> Path:
    """The test plugin, plus ``hold``: a call that shows when it has started in its runner."""
    plugin_dir(root)
    (root / PLUGIN_ID / "plugin.py").write_text(HOLDING_PLUGIN)
    return root


async def held(
    host: PluginHost, seconds: float, marker: Path
) -> tuple[asyncio.Task[ToolExecutionResult], int]:
    """A ``hold`` call, once it runs in a runner; returns it and that runner's pid.

    It returns once ``marker`` + ``.release`` exists (see :func:`release`), or after ``seconds``.
    """
    call = asyncio.create_task(
        host.invoke("hold", {"seconds": seconds, "marker": str(marker)}, trusted=True)
    )
    await wait_until(marker.exists, timeout=10, what="the long call started in its runner")
    return call, int(marker.read_text())


def release(marker: Path) -> None:
    """Let the ``hold`` call that wrote ``marker`` return."""
    marker.with_name(marker.name + ".release").touch()


def members(host: PluginHost) -> list[RemoteRunner]:
    pool = remote_pool(host)
    return pool.members if pool is not None else []


async def draining_with_a_call(
    host: PluginHost,
    runners: list[subprocess.Popen[bytes]],
    tmp_path: Path,
    sig: signal.Signals,
    *extra: str,
) -> tuple[subprocess.Popen[bytes], asyncio.Task[ToolExecutionResult]]:
    """One runner with a long call in flight, sent ``sig``; returns once the host knows."""
    name = own_name(tmp_path, "solo")
    credential = issue(keys_of(host), name, [PLUGIN_ID], tmp_path / "solo.json")
    plugins = holding_plugins(tmp_path / "remote-plugins")
    runner = start_runner(listening_at(host), credential, plugins, tmp_path, extra=extra)
    runners.append(runner)
    await wait_until(lambda: healthy_members(host) == 1, timeout=30, what="the runner joined")
    (only,) = members(host)
    stuck, _ = await held(host, 60.0, tmp_path / "started")
    os.kill(runner.pid, sig)
    await wait_until(lambda: only.state is RemoteState.DRAINING, timeout=5, what="draining")
    return runner, stuck


async def test_a_runner_stopped_mid_call_finishes_it_while_the_other_takes_new_calls(
    host: PluginHost,
    runners: list[subprocess.Popen[bytes]],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    name = own_name(tmp_path, "pods")
    credential = issue(keys_of(host), name, [PLUGIN_ID], tmp_path / "pods.json")
    plugins = holding_plugins(tmp_path / "remote-plugins")
    for _ in range(2):
        runners.append(start_runner(listening_at(host), credential, plugins, tmp_path))
    await wait_until(lambda: healthy_members(host) == 2, timeout=30, what="two runners joined")

    slow, pid_a = await held(host, 60.0, tmp_path / "started")
    a = next(m for m in members(host) if m.remote_pid == pid_a)
    b = next(m for m in members(host) if m is not a)
    process_a = next(p for p in runners if p.pid == a.remote_pid)
    os.kill(process_a.pid, signal.SIGTERM)  # what the kubelet sends a pod's process
    await wait_until(
        lambda: a.state is RemoteState.DRAINING, timeout=5, what="the host heard A is leaving"
    )
    assert not slow.done()

    after = await asyncio.gather(*(pause(host, 0.05) for _ in range(10)))
    assert all(r.success for r in after), [r.error_message for r in after]
    assert Counter(r.structured_content["pid"] for r in after) == {b.remote_pid: 10}
    assert not slow.done()  # held until released: every new call went to B meanwhile

    release(tmp_path / "started")
    result = await slow
    assert result.success, result.error_message
    assert result.structured_content["pid"] == a.remote_pid
    assert await exited(process_a, timeout=15) == 0
    # Out of the pool at once: the grace period (30 s here) is for runners that vanish.
    await wait_until(lambda: members(host) == [b], timeout=5, what="A left the pool")
    assert a.state is RemoteState.STOPPED
    assert logged(caplog.records, f"remote runner {a.runner_id} drained its calls and left")
    assert not logged(caplog.records, "fell silent")
    assert not logged(caplog.records, "say hello again")
    assert (await pause(host, 0)).success


async def test_a_drain_that_runs_out_fails_the_call_and_an_only_runner_refuses_new_ones(
    host: PluginHost,
    runners: list[subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    # Ctrl-C in a terminal drains as a SIGTERM does.
    runner, stuck = await draining_with_a_call(
        host, runners, tmp_path, signal.SIGINT, "--drain-timeout", "2"
    )

    # The only runner is leaving: a new call is told so at once, not queued behind it.
    refused = await pause(host, 0)
    assert not refused.success and refused.error_code == "shutting_down"
    assert "runners are leaving" in (refused.error_message or "")
    assert status_of(host).state == "draining"

    cut = await stuck
    assert not cut.success and cut.error_code == "plugin_crashed"
    assert "--drain-timeout" in (cut.error_message or "")
    assert await exited(runner, timeout=15) == 0
    await wait_until(lambda: remote_pool(host) is None, timeout=5, what="its tools went")


async def test_a_second_signal_ends_the_drain_at_once(
    host: PluginHost,
    runners: list[subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    runner, stuck = await draining_with_a_call(host, runners, tmp_path, signal.SIGTERM)
    os.kill(runner.pid, signal.SIGTERM)  # well inside the default 25 s drain
    cut = await asyncio.wait_for(stuck, timeout=15)
    assert not cut.success and cut.error_code == "plugin_crashed"
    assert await exited(runner, timeout=15) == 0


async def test_a_runner_stopped_before_it_joined_exits_0_at_once(
    tmp_path: Path, runners: list[subprocess.Popen[bytes]]
) -> None:
    # A pod stopped while its host is unreachable: nothing is in flight, nothing to drain.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        silent = f"tcp://127.0.0.1:{probe.getsockname()[1]}"  # nobody listens there
        credential = issue(tmp_path / "keys", "early", [PLUGIN_ID], tmp_path / "early.json")
        runner = start_runner(silent, credential, plugin_dir(tmp_path / "p"), tmp_path)
        runners.append(runner)
        log = next(tmp_path.glob("runner-*.log"))
        # Its signal handlers go in as it starts asking for its host: not its first ask's
        # 10 s timeout, the moment it would handle a SIGTERM at all.
        await wait_until(
            lambda: catches(runner.pid, signal.SIGTERM),
            timeout=30,
            what="the runner handling SIGTERM while it waits for its host",
        )
        os.kill(runner.pid, signal.SIGTERM)
        assert await exited(runner, timeout=10) == 0
    text = log.read_text()
    assert "SIGTERM before joining: stopping" in text
    assert "draining" not in text


def catches(pid: int, signum: signal.Signals) -> bool:
    """Whether a process has a handler for ``signum`` (the SigCgt mask of its status)."""
    status = Path(f"/proc/{pid}/status").read_text()
    (mask,) = [line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")]
    return bool(int(mask, 16) & (1 << (signum - 1)))


async def test_an_edit_during_the_drain_loads_nothing(
    host: PluginHost,
    runners: list[subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    runner, stuck = await draining_with_a_call(
        host, runners, tmp_path, signal.SIGTERM, "--drain-timeout", "30"
    )
    write_plugin(tmp_path / "remote-plugins" / PLUGIN_ID, "2.0.0")
    log = next(tmp_path.glob("runner-*.log"))
    await wait_until(
        lambda: "not reloaded: this runner is leaving" in log.read_text(),
        timeout=15,
        what="the edit seen and set aside",
    )
    os.kill(runner.pid, signal.SIGTERM)  # end the drain
    await asyncio.wait_for(stuck, timeout=15)
    assert await exited(runner, timeout=15) == 0
    assert "reloaded to" not in log.read_text()


async def test_a_runner_killed_while_draining_is_ended_without_the_grace_wait(
    host: PluginHost,
    runners: list[subprocess.Popen[bytes]],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    runner, stuck = await draining_with_a_call(host, runners, tmp_path, signal.SIGTERM)
    os.kill(runner.pid, signal.SIGKILL)  # the engine's kill after its grace period
    cut = await asyncio.wait_for(stuck, timeout=15)
    assert not cut.success and cut.error_code == "plugin_crashed"
    # Ended once silent for the heartbeat window, not after [host.remote] grace (30 s).
    await wait_until(lambda: remote_pool(host) is None, timeout=10, what="its tools went")
    assert logged(caplog.records, "fell silent while leaving")
