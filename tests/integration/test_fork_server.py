"""Runners forked from the fork server: real processes, and what happens when it dies."""

from __future__ import annotations

import os
import signal

import psutil

from plughost.host import PluginHost
from tests.conftest import TEST_PLUGINS, HostFactory
from tests.fault_injection import alive
from tests.waiting import wait_until

ECHO = TEST_PLUGINS / "echo"


def parent_of(host: PluginHost, plugin_id: str) -> int:
    runner = host.runner_for(plugin_id)
    assert runner is not None and runner.pid is not None
    return psutil.Process(runner.pid).ppid()


async def test_runners_are_forked_from_the_fork_server(make_host: HostFactory) -> None:
    async with make_host([ECHO]) as host:
        server = host._fork_server
        assert server is not None and server.pid is not None
        assert parent_of(host, "tests.echo") == server.pid
        runner = host.runner_for("tests.echo")
        assert runner is not None and runner.pid is not None
        shown = psutil.Process(runner.pid)  # the runner, or its pid namespace's init
        assert "plughost-runner" in {shown.name(), *(c.name() for c in shown.children())}
        assert psutil.Process(server.pid).name() == "plughost-forks"
        assert os.getpgid(runner.pid) == runner.pid  # its own group, for the group kill
        assert (await host.invoke("echo", {"text": "forked"})).content == "forked"
    assert not alive(server.pid)


async def test_without_the_fork_server_runners_are_new_interpreters(
    make_host: HostFactory,
) -> None:
    async with make_host([ECHO], fork_server=False) as host:
        assert host._fork_server is None
        assert parent_of(host, "tests.echo") == os.getpid()
        assert (await host.invoke("echo", {"text": "direct"})).content == "direct"


async def test_a_dead_fork_server_takes_its_runners_which_restart_as_interpreters(
    make_host: HostFactory,
) -> None:
    async with make_host([ECHO]) as host:
        server = host._fork_server
        assert server is not None and server.pid is not None
        runner = host.runner_for("tests.echo")
        assert runner is not None
        old_pid = runner.pid
        os.kill(server.pid, signal.SIGKILL)
        await host.events.wait_for(
            lambda e: e.kind.value == "runner.restarted" and e.details.get("pid") != old_pid,
            timeout=20,
        )
        await wait_until(lambda: old_pid is not None and not alive(old_pid), timeout=10)
        assert parent_of(host, "tests.echo") == os.getpid()  # started directly meanwhile
        assert (await host.invoke("echo", {"text": "still here"})).content == "still here"
