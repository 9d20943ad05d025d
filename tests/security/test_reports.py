"""A runner reports once, and only about the plugins the host gave it (real runners)."""

from __future__ import annotations

import pytest

from plughost.events import EventKind
from plughost.host import PluginHost
from tests.conftest import TEST_PLUGINS, HostFactory
from tests.fault_injection import EventLog

ECHO = TEST_PLUGINS / "echo"
HOSTILE = TEST_PLUGINS / "hostile_report"


async def _forge(host: PluginHost, events: EventLog, mode: str) -> str:
    """Have the hostile plugin forge a report; return why its runner was recycled."""
    echo_runner = host.runner_for("tests.echo")
    result = await host.invoke("forge", {"mode": mode})
    assert result.content != "accepted", "the host took a forged report"
    crashed = await events.next(EventKind.RUNNER_CRASHED, "tests.hostile_report")
    await events.next(EventKind.RUNNER_RESTARTED, "tests.hostile_report")
    assert host.runner_for("tests.echo") is echo_runner
    return str(crashed.details["reason"])


@pytest.mark.parametrize("mode", ["takeover", "remove"])
async def test_a_forged_report_about_a_neighbour_recycles_the_forger_and_spares_the_neighbour(
    make_host: HostFactory, mode: str
) -> None:
    async with make_host([ECHO, HOSTILE]) as host:
        events = EventLog()
        host.events.add_callback(events)
        reason = await _forge(host, events, mode)
        echoed = await host.invoke("echo", {"text": "still mine"})

    assert reason.startswith("protocol violation: runner.ready")
    assert "tests.echo" in reason
    assert echoed.success and echoed.content == "still mine"


async def test_a_report_about_a_plugin_that_is_not_installed_adds_no_tool(
    make_host: HostFactory,
) -> None:
    async with make_host([ECHO, HOSTILE]) as host:
        events = EventLog()
        host.events.add_callback(events)
        reason = await _forge(host, events, "ghost")
        ghost = await host.invoke("ghost_tool", {})

    assert "'ghost.plugin', which this runner was not given" in reason
    assert not host.components.by_plugin("ghost.plugin")
    assert ghost.error_code == "tool_not_found"


async def test_a_second_report_from_the_same_runner_is_a_violation(make_host: HostFactory) -> None:
    async with make_host([HOSTILE]) as host:
        events = EventLog()
        host.events.add_callback(events)
        reason = await _forge(host, events, "again")
        forged_after_restart = await host.invoke("forge", {"mode": "again"})

    assert reason == "protocol violation: runner.ready sent a second time"
    assert forged_after_restart.content != "accepted"
