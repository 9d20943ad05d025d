"""The fork server on its own: forks, exit codes, output, death and restart (real processes)."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import psutil
import pytest

from plughost.runners.fork_server import ForkedProcess, ForkServer, ForkServerError
from plughost.runners.spawn import credentials_pipe, runner_env
from tests.fault_injection import alive
from tests.processes import command_line

ENV = runner_env()


async def _spawn(server: ForkServer, argv: list[str]) -> ForkedProcess:
    credentials = credentials_pipe("token")
    try:
        return await server.spawn(argv, ENV, credentials)
    finally:
        os.close(credentials)


def runner_argv(tmp_path: Path) -> list[str]:
    """A runner that will wait for a host that never answers (the tests end it)."""
    return ["--endpoint", f"ipc://{tmp_path}/nobody.sock", "--runner-id", "runner-test"]


async def test_a_forked_runner_reports_its_exit_code_through_the_server(tmp_path: Path) -> None:
    server = ForkServer(ENV, restart_interval=0)
    await server.start()
    try:
        child = await _spawn(server, runner_argv(tmp_path))
        assert alive(child.pid) and child.returncode is None
        os.killpg(child.pid, signal.SIGKILL)
        async with asyncio.timeout(20):
            assert await child.wait() == -signal.SIGKILL
        assert child.returncode == -signal.SIGKILL
        child.close()
    finally:
        await server.aclose()


async def test_a_runner_that_cannot_start_writes_why_on_its_own_stderr(tmp_path: Path) -> None:
    server = ForkServer(ENV)
    await server.start()
    try:
        child = await _spawn(server, ["--no-such-option"])
        async with asyncio.timeout(20):
            assert await child.wait() == 2  # argparse's usage error
            output = await child.stderr.read()
        assert b"the following arguments are required: --endpoint" in output
        child.close()
    finally:
        await server.aclose()


async def test_a_dead_server_is_started_again_by_the_next_spawn(tmp_path: Path) -> None:
    server = ForkServer(ENV, restart_interval=0)
    await server.start()
    try:
        first = server.pid
        child = await _spawn(server, runner_argv(tmp_path))
        assert first is not None
        os.kill(first, signal.SIGKILL)
        async with asyncio.timeout(20):
            assert await child.wait() == -signal.SIGKILL  # its runners go with it
        child.close()
        again = await _spawn(server, runner_argv(tmp_path))
        assert server.pid not in (None, first)
        os.killpg(again.pid, signal.SIGKILL)
        async with asyncio.timeout(20):
            await again.wait()
        again.close()
    finally:
        await server.aclose()


async def test_a_closed_server_refuses_to_fork(tmp_path: Path) -> None:
    server = ForkServer(ENV)
    await server.start()
    pid = server.pid
    await server.aclose()
    assert pid is not None and not alive(pid)
    with pytest.raises(ForkServerError, match="closed"):
        await _spawn(server, runner_argv(tmp_path))


@pytest.mark.parametrize("after", [0.0, 0.005, 0.02, 0.05, 0.1, 0.2])
async def test_a_start_cancelled_before_the_server_is_ready_leaves_no_process(
    after: float,
) -> None:
    """Cancelled at several points of its start (spawning, importing): nothing is left running."""

    def servers() -> set[int]:
        return {
            child.pid
            for child in psutil.Process().children()
            if "plughost_runner.forkserver" in " ".join(command_line(child))
            or child.name() == "plughost-forks"
        }

    before = servers()
    server = ForkServer(ENV)
    start = asyncio.ensure_future(server.start())
    await asyncio.wait([start], timeout=after)  # a point of the start, not a wait for anything
    if start.done():
        await server.aclose()
        pytest.skip(f"the fork server was ready within {after} s: nothing left to cancel")
    start.cancel()

    with pytest.raises(asyncio.CancelledError):
        await start
    # Killed and reaped before the cancelled start returned: not a child any more.
    assert servers() - before == set()
