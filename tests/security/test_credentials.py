"""A runner's credentials: not in its environment, not in readable memory, good for one hello."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from plughost.events import EventKind
from plughost.host import PluginHost
from plughost.settings import SandboxSettings
from tests.conftest import TEST_PLUGINS, HostFactory, fast_settings
from tests.fault_injection import EventLog, Intruder, runner_token

ECHO = TEST_PLUGINS / "echo"
HOSTILE = TEST_PLUGINS / "hostile_token"


def _echo_pid(host: PluginHost) -> int:
    runner = host.runner_for("tests.echo")
    assert runner is not None and runner.pid is not None
    return runner.pid


@pytest.mark.parametrize("fork_server", [False, True], ids=["interpreter", "forked"])
async def test_a_neighbours_environment_holds_no_runner_credential(
    make_host: HostFactory, tmp_path: Path, fork_server: bool
) -> None:
    # Unconfined: Landlock would hide the neighbour's environ anyway; what is tested here is
    # that there is nothing to find in it.
    settings = fast_settings(
        tmp_path, fork_server=fork_server, sandbox=SandboxSettings(enabled=False)
    )
    async with make_host([ECHO, HOSTILE], settings) as host:
        seen = await host.invoke("peek_environ", {"pid": _echo_pid(host)})

    assert seen.success, seen.error_message
    assert seen.structured_content["names"] == []


async def test_runners_are_not_dumpable(make_host: HostFactory) -> None:
    async with make_host([HOSTILE]) as host:
        flag = await host.invoke("dumpable", {})

    assert flag.content == "0"


async def test_a_neighbour_of_the_same_user_cannot_open_a_runners_memory(
    make_host: HostFactory,
) -> None:
    if os.geteuid() == 0:
        pytest.skip("runs as root, whose CAP_SYS_PTRACE opens any memory: the sandbox's part")
    async with make_host([ECHO, HOSTILE]) as host:
        opened = await host.invoke("peek_memory", {"pid": _echo_pid(host)})

    assert opened.content == "PermissionError"


async def test_a_second_hello_with_a_runners_token_recycles_the_runner(
    make_host: HostFactory,
) -> None:
    intruder = Intruder()
    try:
        async with make_host([ECHO]) as host:
            events = EventLog()
            host.events.add_callback(events)
            runner = host.runner_for("tests.echo")
            assert runner is not None and runner._channel is not None
            stolen = runner_token(runner._channel)
            answer = await intruder.hello(runner._channel.endpoint, stolen)
            crashed = await events.next(EventKind.RUNNER_CRASHED, "tests.echo", timeout=10)
            await events.next(EventKind.RUNNER_RESTARTED, "tests.echo")
            after = await intruder.hello(runner._channel.endpoint, stolen)
            echoed = await host.invoke("echo", {"text": "new token"})
    finally:
        intruder.close()

    assert answer == "unauthorized"
    assert crashed.details["reason"] == (
        "protocol violation: a second hello with the runner's token"
    )
    assert after == "unauthorized"  # the old token is worth nothing to the new runner
    assert echoed.content == "new token"
