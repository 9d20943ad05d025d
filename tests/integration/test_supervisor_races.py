"""Stopping a runner at the awkward moments: real processes, real sockets."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import pytest

import plughost.runners.spawn
from plughost.runners.child_process import ChildProcess, start_child
from plughost.runners.fork_server import ForkedProcess, ForkServer
from tests.conftest import TEST_PLUGINS, HostFactory
from tests.fault_injection import alive

ECHO = TEST_PLUGINS / "echo"


@pytest.mark.parametrize("fork_server", [False, True], ids=["interpreter", "fork_server"])
async def test_a_stop_that_comes_while_the_restart_is_spawning_still_stops_it(
    make_host: HostFactory, monkeypatch: pytest.MonkeyPatch, fork_server: bool
) -> None:
    spawning, release = asyncio.Event(), asyncio.Event()
    started: list[ChildProcess | ForkedProcess] = []
    seen: list[str] = []
    runner = None

    async def gate(child: ChildProcess | ForkedProcess) -> None:
        started.append(child)
        spawning.set()
        await release.wait()  # the process exists; the supervisor has not heard of it yet
        seen.append(runner.state.value if runner else "")

    async def gated_start(
        argv: Sequence[str], env: Mapping[str, str], *, pass_fds: Sequence[int] = ()
    ) -> ChildProcess:
        child = await start_child(argv, env, pass_fds=pass_fds)
        await gate(child)
        return child

    real_fork = ForkServer.spawn

    async def gated_fork(
        server: ForkServer, argv: Sequence[str], env: Mapping[str, str], credentials: int
    ) -> ForkedProcess:
        child = await real_fork(server, argv, env, credentials)
        await gate(child)
        return child

    async with make_host([ECHO], fork_server=fork_server) as host:
        runner = host.runner_for("tests.echo")
        assert runner is not None
        monkeypatch.setattr(plughost.runners.spawn, "start_child", gated_start)
        monkeypatch.setattr(ForkServer, "spawn", gated_fork)
        runner.kill()
        async with asyncio.timeout(15):
            await spawning.wait()
        stopping = asyncio.create_task(runner.stop(drain=0))
        asyncio.get_running_loop().call_soon(release.set)  # after stop()'s first step (FIFO)
        async with asyncio.timeout(15):
            await stopping
        [child] = started
        async with asyncio.timeout(15):
            await child.wait()
        assert seen == ["stopping"]  # the spawn really finished after stop() had begun
        assert not alive(child.pid)
        assert runner.state.value == "stopped"
