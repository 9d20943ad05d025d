"""A runner's processes: hidden and taken along with a pid namespace, counted by limits.processes.

Every attempt succeeds without those: the intruder reads any process's command
line in ``/proc``, a grandchild that starts its own session outlives the runner
(the fault-storm test pins that, with the pid namespace turned off), and a fork
bomb starts all it asks for. The pid namespace is on by default; these tests
use the default settings, and skip where the kernel does not offer it.

Inside its namespace the runner is pid 2 under a minimal init, so a plugin
that kills itself, or spins past ``limits.cpu_seconds``, ends its runner as it
would without the namespace (as the namespace's init it would be immune).
"""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from plughost.events import EventKind, LifecycleEvent
from plughost.host import PluginHost
from plughost.runners.cgroups import own_cgroup
from plughost.runners.memory import ProcMeter
from plughost.settings import ResourceLimits
from tests.conftest import TEST_PLUGINS, fast_settings
from tests.fault_injection import processes_mentioning
from tests.security.sandboxed import Attack, plant_plugins, planted_host, require
from tests.waiting import wait_until

pytestmark = pytest.mark.asyncio(loop_scope="module")  # the loop the shared host runs on


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def watched(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Attack]:
    """One host, default settings, serving the intruder and its neighbour (echo).

    Shared by the tests that only look and call: none of them ends, restarts or
    reloads a runner (the intruder's signals are refused), so each sees the runners
    as the host started them. Tests that end or restart a runner, or set a limit,
    start a host of their own.
    """
    async with planted_host(tmp_path_factory.mktemp("processes")) as attack:
        yield attack


async def test_in_a_pid_namespace_a_plugin_cannot_see_the_host_process(watched: Attack) -> None:
    require(watched.host, "pid_namespace")

    host_cmdline = await watched.attempt("intrude_read", path=f"/proc/{os.getpid()}/cmdline")
    own_status = await watched.attempt("intrude_read", path="/proc/self/status")

    assert not host_cmdline["allowed"]
    assert own_status["allowed"] and "NSpid" in own_status["detail"]


async def test_in_a_pid_namespace_a_detached_grandchild_dies_with_its_runner(
    tmp_path: Path,
) -> None:
    pids, marker = tmp_path / "pids", f"plughost-test-{uuid.uuid4().hex}"
    pids.mkdir()
    settings = fast_settings(tmp_path, sandbox={"write_paths": [pids]}, max_restarts=0)
    async with PluginHost([TEST_PLUGINS / "spawn_children"], settings=settings) as host:
        require(host, "pid_namespace")
        arguments = {"pid_dir": str(pids), "marker": marker, "escape": True}

        result = await host.invoke("spawn_and_exit", arguments)

        assert result.error_code == "plugin_crashed"
        assert {p.name.split(".")[0] for p in pids.iterdir()} >= {"escaped", "grandchild"}
        await wait_until(
            lambda: not processes_mentioning(marker), timeout=10, what="every child gone"
        )


async def test_a_fork_bomb_stops_at_the_runners_process_limit(tmp_path: Path) -> None:
    plugins = plant_plugins(tmp_path)
    settings = fast_settings(tmp_path)
    settings.plugin_limits = {"tests.hostile-intruder": ResourceLimits(processes=12)}
    async with PluginHost([plugins / "hostile_intruder"], settings=settings) as host:
        require(host, "user_namespace")
        if os.geteuid() == 0 and own_cgroup("pids") is None:
            pytest.skip("root ignores RLIMIT_NPROC, and this host has no cgroup v1 pids to use")
        attack = Attack(host, plugins, settings.data_dir)

        bomb = await attack.attempt("intrude_spawn", count=40)
        after = await attack.attempt("intrude_spawn", count=2)  # the children are gone again

        assert not bomb["allowed"] and bomb["detail"] < 12
        assert "Resource temporarily unavailable" in bomb["refused"]
        assert after["allowed"] and after["detail"] == 2


async def test_in_a_pid_namespace_a_plugin_sees_and_signals_only_its_own_processes(
    watched: Attack,
) -> None:
    host, attack = watched.host, watched
    require(host, "pid_namespace")
    neighbour = host.runner_for("tests.echo")
    assert neighbour is not None and neighbour.pid is not None

    listed = await attack.attempt("intrude_processes")
    kill_host = await attack.attempt("intrude_signal", pid=os.getpid())
    kill_neighbour = await attack.attempt("intrude_signal", pid=neighbour.pid)

    assert listed["own"] == 2  # under its namespace's init
    assert set(listed["detail"]) == {1, 2}  # the init and itself: nobody else's
    assert not kill_host["allowed"] and "ProcessLookupError" in kill_host["detail"]
    assert not kill_neighbour["allowed"] and "ProcessLookupError" in kill_neighbour["detail"]
    assert (await host.invoke("echo", {"text": "still here"})).content == "still here"
    assert all("pid_namespace" in status.sandbox for status in host.status())


async def test_in_a_pid_namespace_a_plugin_that_kills_itself_crashes_and_restarts(
    tmp_path: Path,
) -> None:
    plugins = plant_plugins(tmp_path)
    settings = fast_settings(tmp_path)
    async with PluginHost([plugins / "hostile_intruder"], settings=settings) as host:
        require(host, "pid_namespace")
        restarted = _next_event(host, EventKind.RUNNER_RESTARTED)

        result = await host.invoke("intrude_kill_self", {})
        await restarted
        after = await host.invoke("intrude_processes", {})

        assert result.error_code == "plugin_crashed"
        assert "killed by signal SIGKILL" in result.error_message
        assert after.success and after.structured_content is not None
        assert after.structured_content["own"] == 2


async def test_in_a_pid_namespace_sigterm_to_the_pid_the_host_shows_ends_the_runner(
    tmp_path: Path,
) -> None:
    plugins = plant_plugins(tmp_path)
    settings = fast_settings(tmp_path)
    async with PluginHost([plugins / "hostile_intruder"], settings=settings) as host:
        require(host, "pid_namespace")
        runner = host.runner_for("tests.hostile-intruder")
        assert runner is not None and runner.pid is not None
        crashed = _next_event(host, EventKind.RUNNER_CRASHED)

        os.kill(runner.pid, signal.SIGTERM)  # the namespace's init alone: it passes it on

        assert "killed by signal SIGTERM" in (await crashed).message
        after = await host.invoke("intrude_processes", {})
        assert after.success


async def test_in_a_pid_namespace_cpu_seconds_still_ends_a_busy_loop(tmp_path: Path) -> None:
    settings = fast_settings(tmp_path, stuck_grace=30.0)
    settings.plugin_limits["tests.limits"] = ResourceLimits(cpu_seconds=1)
    async with PluginHost([TEST_PLUGINS / "limits"], settings=settings) as host:
        require(host, "pid_namespace")

        result = await host.invoke("burn", {})

        assert result.error_code == "plugin_crashed"
        assert "CPU time limit of 1 s exceeded (limits.cpu_seconds)" in result.error_message
        assert (await host.invoke("fine", {})).content == "fine"


async def test_in_a_pid_namespace_memory_mb_counts_the_runner_not_its_helpers(
    tmp_path: Path,
) -> None:
    settings = fast_settings(tmp_path)
    settings.plugin_limits["tests.limits"] = ResourceLimits(memory_mb=200)
    async with PluginHost([TEST_PLUGINS / "limits"], settings=settings) as host:
        require(host, "pid_namespace")
        runner = host.runner_for("tests.limits")
        assert runner is not None and runner.pid is not None
        inner = _runner_inside(runner.pid)

        counted = ProcMeter(runner.pid, pid_namespace=True).used()
        alone = _memory_of(inner)
        everything = ProcMeter(runner.pid).used()
        result = await host.invoke("grow", {"mb": 400})

        assert counted is not None and everything is not None
        assert abs(counted - alone) < 2**20  # the runner alone, to 1 MiB
        assert everything > counted  # the namespace's init holds pages too
        assert result.error_code == "plugin_crashed"
        assert "memory limit exceeded" in result.error_message
        assert "limits.memory_mb" in result.error_message


async def test_a_forked_runner_in_a_pid_namespace_is_its_init_and_itself_and_nothing_outside(
    watched: Attack,
) -> None:
    host = watched.host
    require(host, "pid_namespace")
    runner = host.runner_for("tests.echo")
    server = host._fork_server
    assert runner is not None and runner.pid is not None
    assert server is not None and server.pid is not None
    inner = _runner_inside(runner.pid)

    assert _nspid(runner.pid)[-1] == 1  # the pid the host shows is the namespace's init
    assert _fields(runner.pid)["PPid"] == str(server.pid)  # adopted: no waiter between
    assert _nspid(inner)[-1] == 2 and _fields(inner)["PPid"] == str(runner.pid)
    assert os.getpgid(inner) == runner.pid  # one process group, for the group kill
    assert (await host.invoke("echo", {"text": "two processes"})).content == "two processes"


async def test_in_a_pid_namespace_a_runner_killed_from_outside_fails_its_call_by_its_exit(
    tmp_path: Path,
) -> None:
    # Heartbeats would take a minute to notice: the exit status is what fails the call.
    settings = fast_settings(tmp_path, heartbeat_misses=600, max_restarts=0)
    async with PluginHost([TEST_PLUGINS / "faulty"], settings=settings) as host:
        require(host, "pid_namespace")
        runner = host.runner_for("tests.faulty")
        assert runner is not None and runner.pid is not None
        inner = _runner_inside(runner.pid)
        call = asyncio.ensure_future(host.invoke("hang_async", {}))
        await wait_until(lambda: runner.inflight >= 1, timeout=10, what="the call in flight")

        os.kill(inner, signal.SIGKILL)
        async with asyncio.timeout(30):  # a guard against a hang, not the bound tested
            result = await call

        assert result.error_code == "plugin_crashed"
        assert "killed by signal SIGKILL" in result.error_message


async def test_in_a_pid_namespace_a_runner_that_exits_reports_its_own_exit_code(
    tmp_path: Path,
) -> None:
    settings = fast_settings(tmp_path, max_restarts=0)
    async with PluginHost([TEST_PLUGINS / "faulty"], settings=settings) as host:
        require(host, "pid_namespace")

        result = await host.invoke("exit_mid_call", {})  # os._exit(13) in the runner

        assert result.error_code == "plugin_crashed"
        assert "exited with code 13" in result.error_message


async def test_in_a_pid_namespace_a_runner_spinning_with_the_gil_is_killed_as_unresponsive(
    tmp_path: Path,
) -> None:
    # An async handler spinning with the GIL runs to its deadline before the runner is
    # declared unresponsive: a short deadline keeps the test short.
    settings = fast_settings(tmp_path).model_copy(update={"call_timeout": 1.0})
    async with PluginHost([TEST_PLUGINS / "faulty"], settings=settings) as host:
        require(host, "pid_namespace")
        runner = host.runner_for("tests.faulty")
        assert runner is not None and runner.pid is not None
        old = runner.pid
        crashed = _next_event(host, EventKind.RUNNER_CRASHED)
        restarted = _next_event(host, EventKind.RUNNER_RESTARTED)

        spinning = asyncio.ensure_future(host.invoke("busy_loop", {}))
        message = (await crashed).message
        await restarted
        result = await spinning

        assert "unresponsive" in message
        assert result.error_code in {"timeout", "plugin_crashed"}
        assert (await host.invoke("slow_sync", {})).content == "done"
        assert runner.pid != old


def _next_event(host: PluginHost, kind: EventKind) -> asyncio.Future[LifecycleEvent]:
    return asyncio.ensure_future(host.events.wait_for(lambda e: e.kind is kind, timeout=20))


def _runner_inside(shown: int) -> int:
    """The host's pid of the process that is pid 2 inside, in the session of ``shown``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if (
            fields.get("NSpid", "").split()[-1:] == ["2"]
            and int(fields["NSsid"].split()[0]) == shown
        ):
            return int(entry.name)
    raise AssertionError(f"no runner under pid {shown}")


def _memory_of(pid: int) -> int:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    keys = ("RssAnon:", "RssShmem:")
    return sum(int(line.split()[1]) * 1024 for line in lines if line.startswith(keys))


def _fields(pid: int) -> dict[str, str]:
    status = Path(f"/proc/{pid}/status").read_text()
    return {k: v.strip() for k, v in (line.split(":", 1) for line in status.splitlines())}


def _nspid(pid: int) -> list[int]:
    return [int(p) for p in _fields(pid)["NSpid"].split()]
