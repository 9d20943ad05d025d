"""A runner at rest wakes for nothing, and gives nothing up for it.

An idle runner beats every ``IDLE_BEATS`` heartbeat intervals, sends logs when
it has some, and leaves its parent's death to the kernel. These tests pin what
must still hold: a log line logged while no call runs reaches the host, a
resting runner that hangs is caught (at once when it is sent a call), and no
runner process outlives a SIGKILLed host, however it was started.
"""

from __future__ import annotations

import asyncio
import logging
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from plughost.host import PluginHost
from plughost.runners.supervisor import RunnerSupervisor
from plughost.runners.watchdog import IDLE_BEATS
from tests.conftest import TEST_PLUGINS, HostFactory, fast_settings
from tests.fault_injection import kill_host_and_wait_for_its_children
from tests.waiting import wait_until

QUIET = TEST_PLUGINS / "quiet_logger"
ECHO = TEST_PLUGINS / "echo"


def _runner(host: PluginHost, plugin_id: str) -> RunnerSupervisor:
    runner = host.runner_for(plugin_id)
    assert runner is not None
    return runner


async def _until_resting(runner: RunnerSupervisor) -> None:
    await wait_until(lambda: runner.resting, timeout=10, what="the runner resting")


def _tell(host: PluginHost, plugin_id: str, what: str) -> None:
    (host.settings.data_dir / plugin_id / what).write_text("go", encoding="utf-8")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def resting_host(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[PluginHost]:
    """One host whose runners only rest, log and answer, for the tests that break nothing.

    Each of those tests has a line or a plugin of its own; the tests that kill a
    runner start a host of their own.
    """
    settings = fast_settings(tmp_path_factory.mktemp("resting"))
    async with PluginHost([QUIET, ECHO], settings=settings) as host:
        yield host


on_the_resting_host = pytest.mark.asyncio(loop_scope="module")


@pytest.mark.parametrize(
    ("trigger", "line"),
    [
        ("log-from-loop", "logged from the loop while no call ran"),
        ("log-from-thread", "logged from a thread while no call ran"),
    ],
)
@on_the_resting_host
async def test_a_resting_runner_forwards_a_line_logged_while_no_call_runs(
    resting_host: PluginHost,
    caplog: pytest.LogCaptureFixture,
    trigger: str,
    line: str,
) -> None:
    caplog.set_level(logging.INFO)
    host = resting_host
    await _until_resting(_runner(host, "tests.quiet-logger"))
    _tell(host, "tests.quiet-logger", trigger)
    await wait_until(
        lambda: any(r.getMessage() == line for r in caplog.records),
        timeout=10,
        what="the plugin's log line at the host",
    )
    assert _runner(host, "tests.quiet-logger").state.value == "ready"


async def test_a_resting_runner_whose_loop_blocks_is_killed_as_unresponsive(
    make_host: HostFactory,
) -> None:
    # A shorter interval, the same busy bound (0.5 s): the rest it is allowed is
    # IDLE_BEATS intervals, which this test waits out.
    async with make_host([QUIET, ECHO], heartbeat_interval=0.05, heartbeat_misses=10) as host:
        runner = _runner(host, "tests.quiet-logger")
        old_pid = runner.pid
        await _until_resting(runner)
        _tell(host, "tests.quiet-logger", "block-loop")
        crashed = await host.events.wait_for(
            lambda e: e.kind.value == "runner.crashed" and e.plugin_id == "tests.quiet-logger",
            timeout=20,
        )
        assert "unresponsive" in crashed.message
        # Allowed its rest, then one tick: the bound the operators' guide states.
        settings = host.settings.runner
        silent = float(crashed.message.split("no heartbeat for ")[1].split(" s")[0])
        rest = settings.heartbeat_interval * (settings.heartbeat_misses + IDLE_BEATS)
        assert rest <= silent <= rest + 2 * settings.heartbeat_interval + 0.05  # printed to 0.1 s
        assert runner.pid != old_pid or runner.state.value != "ready"
        assert (await host.invoke("echo", {"text": "x"})).success


async def test_a_call_to_a_resting_runner_that_hangs_is_caught_by_the_busy_bound(
    make_host: HostFactory,
) -> None:
    async with make_host([QUIET, ECHO]) as host:
        runner = _runner(host, "tests.quiet-logger")
        settings = host.settings.runner
        await _until_resting(runner)
        result = await runner.invoke("tests.quiet-logger", "hold_gil", {}, 30.0)
        assert result.error_code == "plugin_crashed"
        crashed = await host.events.wait_for(
            lambda e: e.kind.value == "runner.crashed" and e.plugin_id == "tests.quiet-logger",
            timeout=20,
        )
        assert "unresponsive" in crashed.message, crashed.message
        # Judged from the call, not from the last idle beat: the silence it reports is
        # shorter than what a resting runner is allowed.
        silent = float(crashed.message.split("no heartbeat for ")[1].split(" s")[0])
        rest = settings.heartbeat_interval * (settings.heartbeat_misses + IDLE_BEATS)
        assert silent < rest


@on_the_resting_host
async def test_a_resting_runner_answers_its_next_call(resting_host: PluginHost) -> None:
    host = resting_host
    runner = _runner(host, "tests.echo")
    pid = runner.pid
    for _ in range(2):
        await _until_resting(runner)
        assert (await host.invoke("echo", {"text": "awake"})).content == "awake"
    assert runner.pid == pid


async def test_a_resting_runner_measured_for_memory_is_not_taken_for_hung(
    make_host: HostFactory,
) -> None:
    # Its limits keep the watchdog ticking every interval; its silence is still judged
    # by the allowance of a resting runner.
    async with make_host([ECHO], limits={"memory_mb": 512, "cpu_seconds": 600}) as host:
        runner = _runner(host, "tests.echo")
        pid = runner.pid
        settings = host.settings.runner
        await _until_resting(runner)
        loop = asyncio.get_running_loop()
        rested = loop.time()
        busy_bound = settings.heartbeat_interval * settings.heartbeat_misses
        await wait_until(  # the observation window: longer than a busy runner may be silent
            lambda: loop.time() - rested > 2 * busy_bound, timeout=10, what="the window"
        )
        assert not [e for e in host.events.history() if e.kind.value == "runner.crashed"]
        assert runner.pid == pid and runner.state.value == "ready"
        assert (await host.invoke("echo", {"text": "x"})).success


@pytest.mark.parametrize(
    "runner_settings",
    [
        "{}",
        "{'sandbox': {'pid_namespace': False}}",
        "{'fork_server': False}",
        "{'sandbox': {'enabled': False}, 'fork_server': False}",
    ],
    ids=["default", "no-pid-namespace", "new-interpreters", "unsandboxed-interpreters"],
)
async def test_no_runner_process_outlives_a_sigkilled_host(
    tmp_path: Path, runner_settings: str
) -> None:
    script = tmp_path / "host.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import asyncio, psutil
            from plughost.host import PluginHost
            from plughost.settings import HostSettings, RunnerSettings
            async def main():
                settings = HostSettings(
                    data_dir={str(tmp_path / "data")!r},
                    temp_dir={str(tmp_path / "temp")!r},
                    runner=RunnerSettings(**{runner_settings}),
                )
                async with PluginHost([{str(ECHO)!r}], settings=settings) as host:
                    assert (await host.invoke("echo", {{"text": "x"}})).success
                    tree = psutil.Process().children(recursive=True)
                    print(" ".join(str(p.pid) for p in tree), flush=True)
                    await asyncio.Event().wait()
            asyncio.run(main())
            """
        )
    )
    await kill_host_and_wait_for_its_children(script, tmp_path, ready=60)
