"""Stopping a runner at the awkward moments: real processes, real sockets."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import pytest

import plughost.supervisor
from plughost.child_process import ChildProcess, start_child
from tests.conftest import TEST_PLUGINS, HostFactory
from tests.fault_injection import alive

ECHO = TEST_PLUGINS / "echo"


async def test_a_stop_that_comes_while_the_restart_is_spawning_still_stops_it(
    make_host: HostFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    spawning, release = asyncio.Event(), asyncio.Event()
    started: list[ChildProcess] = []
    seen: list[str] = []
    runner = None

    async def gated_start(argv: Sequence[str], env: Mapping[str, str]) -> ChildProcess:
        child = await start_child(argv, env)
        started.append(child)
        spawning.set()
        await release.wait()  # the process exists; the supervisor has not heard of it yet
        seen.append(runner.state.value if runner else "")
        return child

    async with make_host([ECHO]) as host:
        runner = host.runner_for("tests.echo")
        assert runner is not None
        monkeypatch.setattr(plughost.supervisor, "start_child", gated_start)
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
