"""Child processes started off the loop: output, exit codes, and exits seen at once."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from plughost.runners.child_process import start_child
from tests.fault_injection import alive
from tests.waiting import wait_until

ENV = {"PATH": os.environ.get("PATH", "")}


@pytest.fixture(params=["pidfd", "thread"])
def exit_watch(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run each test with the pidfd watch and with the thread that replaces it."""
    if request.param == "thread":

        def no_pidfd(pid: int) -> int:
            raise OSError("pidfd_open is not available")

        monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    return str(request.param)


async def test_output_and_exit_code_arrive(exit_watch: str) -> None:
    script = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(7)"
    child = await start_child([sys.executable, "-c", script], ENV)
    async with asyncio.timeout(20):
        assert await child.wait() == 7
        assert await child.stdout.readline() == b"out\n"
        assert await child.stderr.readline() == b"err\n"
    assert child.returncode == 7
    child.close()


async def test_a_kill_is_a_negative_exit_code(exit_watch: str) -> None:
    child = await start_child([sys.executable, "-c", "import time; time.sleep(60)"], ENV)
    assert child.returncode is None
    os.kill(child.pid, signal.SIGKILL)
    async with asyncio.timeout(20):
        assert await child.wait() == -signal.SIGKILL
    child.close()


async def test_the_exit_is_seen_while_a_grandchild_still_holds_the_pipes(
    exit_watch: str, tmp_path: Path
) -> None:
    pid_file = tmp_path / "grandchild"
    script = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "sys.exit(3)\n"
    )
    child = await start_child([sys.executable, "-c", script], ENV)
    try:
        async with asyncio.timeout(20):
            assert await child.wait() == 3
        grandchild = int(pid_file.read_text())
        assert alive(grandchild)  # it holds stdout and stderr open, yet the exit arrived
    finally:
        os.killpg(child.pid, signal.SIGKILL)  # the child's own session: the grandchild too
        child.close()
    await wait_until(lambda: not alive(grandchild), timeout=10, what="grandchild gone")


async def test_a_missing_program_raises() -> None:
    with pytest.raises(FileNotFoundError):
        await start_child(["/nonexistent/plughost-program"], ENV)
