"""Faults in plugin code cost only their own runner: real processes, real sockets."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import psutil
import pytest

from plughost.host import PluginHost
from tests.conftest import HOST_PIDS, TEST_PLUGINS, HostFactory
from tests.waiting import wait_until

FAULTY = TEST_PLUGINS / "faulty"
ECHO = TEST_PLUGINS / "echo"
MARGIN = 3.0  # seconds beyond a call's deadline within which its result must arrive


@pytest.fixture
async def host(make_host: HostFactory) -> AsyncIterator[PluginHost]:
    async with make_host([ECHO, FAULTY], sandbox=HOST_PIDS) as started:  # neighbour_pid
        yield started


async def call_within(host: PluginHost, tool: str, deadline: float, **arguments: object):
    """Call a tool with a deadline and check the answer came within deadline + MARGIN."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    async with asyncio.timeout(deadline + MARGIN):
        result = await _invoke_with_timeout(host, tool, deadline)
    assert loop.time() - started < deadline + MARGIN
    return result


async def neighbour_pid(host: PluginHost) -> int:
    result = await host.invoke("echo", {"text": "still here"})
    assert result.success, result.error_message
    return int(result.structured_content["pid"])


async def wait_restarted(host: PluginHost, plugin_id: str, old_pid: int) -> int:
    async with asyncio.timeout(15):
        while True:
            runner = host.runner_for(plugin_id)
            if runner is not None and runner.pid != old_pid and runner.state.value == "ready":
                return runner.pid or 0
            await host.events.wait_for(lambda e: e.plugin_id == plugin_id, timeout=15)


@pytest.mark.parametrize(
    ("tool", "reason"),
    [
        ("exit_mid_call", "exited with code 13"),
        ("sigkill_mid_call", "SIGKILL"),
        ("segfault", "SIGSEGV"),
    ],
)
async def test_a_runner_dying_mid_call_fails_only_that_call_and_is_restarted(
    host: PluginHost, tool: str, reason: str
) -> None:
    runner = host.runner_for("tests.faulty")
    assert runner is not None
    old_pid = runner.pid or 0
    echo_pid = await neighbour_pid(host)

    result = await call_within(host, tool, deadline=5.0)

    assert not result.success
    assert result.error_code == "plugin_crashed"
    assert reason in result.error_message
    assert await neighbour_pid(host) == echo_pid
    new_pid = await wait_restarted(host, "tests.faulty", old_pid)
    assert new_pid != old_pid
    after = await host.invoke("slow_sync", {})
    assert after.success and after.content == "done"
    # The restarted runner is on probation: lower CPU priority, the neighbour's unchanged.
    first_nice = psutil.Process(echo_pid).nice()
    assert psutil.Process(new_pid).nice() == min(
        19, first_nice + host.settings.runner.probation_nice
    )


async def test_a_crash_fails_every_call_in_flight_on_that_runner_exactly_once(
    host: PluginHost,
) -> None:
    slow = [asyncio.create_task(host.invoke("hang_async", {})) for _ in range(5)]
    runner = host.runner_for("tests.faulty")
    assert runner is not None
    await wait_until(lambda: runner.inflight >= 5, timeout=10, what="five calls in flight")
    crash = await host.invoke("exit_mid_call", {})
    results = await asyncio.gather(*slow)
    assert crash.error_code == "plugin_crashed"
    assert [r.error_code for r in results] == ["plugin_crashed"] * 5


async def test_an_async_hang_times_out_at_its_deadline(host: PluginHost) -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    await neighbour_pid(host)
    quick = loop.time() - started
    started = loop.time()
    result = await _invoke_with_timeout(host, "hang_async", 0.5)
    took = loop.time() - started
    assert result.error_code == "timeout"
    assert "did not finish within 0.5 s" in result.error_message
    # Given up at its deadline (it awaits forever), within three deadlines and a quick call.
    assert took < 3 * 0.5 + quick, f"{took:.2f} s, a quick call {quick:.3f} s"
    assert (await host.invoke("slow_sync", {})).success


async def test_a_busy_loop_holding_the_gil_times_out_and_the_runner_is_replaced(
    host: PluginHost,
) -> None:
    runner = host.runner_for("tests.faulty")
    assert runner is not None
    old_pid = runner.pid or 0
    echo_pid = await neighbour_pid(host)

    result = await _invoke_with_timeout(host, "busy_loop", 0.5)

    assert result.error_code in {"timeout", "plugin_crashed"}
    crashed = await host.events.wait_for(
        lambda e: e.kind.value == "runner.crashed" and e.plugin_id == "tests.faulty", timeout=10
    )
    assert "unresponsive" in crashed.message
    await wait_restarted(host, "tests.faulty", old_pid)
    assert await neighbour_pid(host) == echo_pid


async def test_a_sync_busy_loop_past_its_deadline_gets_the_runner_recycled(
    host: PluginHost,
) -> None:
    runner = host.runner_for("tests.faulty")
    assert runner is not None
    old_pid = runner.pid or 0
    result = await _invoke_with_timeout(host, "busy_loop_sync", 0.3)
    assert result.error_code == "timeout"
    crashed = await host.events.wait_for(
        lambda e: e.kind.value == "runner.crashed" and e.plugin_id == "tests.faulty", timeout=10
    )
    assert "synchronous tool call ran past its deadline" in crashed.message
    await wait_restarted(host, "tests.faulty", old_pid)


async def test_a_stdout_flood_neither_breaks_the_channel_nor_the_call(host: PluginHost) -> None:
    result = await host.invoke("flood_stdout", {})
    assert result.success and result.content == "flooded"
    assert (await host.invoke("echo", {"text": "after"})).content == "after"


async def test_unserializable_and_oversize_results_become_clear_errors(host: PluginHost) -> None:
    runner = host.runner_for("tests.faulty")
    assert runner is not None
    pid = runner.pid
    bad = await host.invoke("unserializable", {})
    assert bad.error_code == "invalid_result"
    assert "Unserializable" in bad.error_message
    big = await host.invoke("oversize", {})
    assert big.error_code == "message_too_large"
    assert "MiB" in big.error_message
    assert runner.pid == pid  # neither took the runner down


async def test_a_handler_exception_is_a_failed_result_not_a_crash(host: PluginHost) -> None:
    oops = await host.invoke("oops", {})
    assert oops.error_code == "plugin_exception"
    assert oops.error_message == "KeyError: 'missing'"
    fail = await host.invoke("fail", {"message": "city unknown, try a capital"})
    assert fail.error_code == "tool_error"
    assert fail.error_message == "city unknown, try a capital"


async def test_a_plugin_that_keeps_crashing_is_marked_failed_and_its_tools_disappear(
    make_host: HostFactory,
) -> None:
    async with make_host([ECHO, FAULTY], max_restarts=2, restart_window=60) as host:
        for _ in range(3):
            await host.invoke("exit_mid_call", {})
            if host.runner_for("tests.faulty").state.value == "failed":  # type: ignore[union-attr]
                break
            await host.events.wait_for(
                lambda e: e.kind.value in {"runner.restarted", "runner.gave_up"}, timeout=15
            )
        gave_up = [e for e in host.events.history() if e.kind.value == "runner.gave_up"]
        assert gave_up and "exited with code 13" in gave_up[0].message
        assert not await host.tools.has_tool("exit_mid_call")
        assert host.problems["tests.faulty"].stage == "crashed"
        assert (await host.invoke("echo", {"text": "x"})).success


async def test_no_runner_process_outlives_the_host(make_host: HostFactory) -> None:
    async with make_host([ECHO, FAULTY]) as host:
        pids = [r.pid for r in host.runners() if r.pid]
        assert len(pids) == 2
    for pid in pids:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


async def _invoke_with_timeout(host: PluginHost, tool: str, seconds: float):
    component = next(c for c in host.components.all() if c.name == tool)
    runner = host.runner_for(component.plugin_id)
    assert runner is not None
    return await runner.invoke(component.plugin_id, tool, {}, seconds)
