"""Child processes started off the loop: output, exit codes, and exits seen at once."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

import pytest

from plughost.runners.child_process import read_pipes, start_child
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


async def test_a_pipe_feed_pauses_a_full_reader_and_resumes_once_it_is_read() -> None:
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    [reader], [feed] = await read_pipes([os.fdopen(read_end, "rb", buffering=0)])
    chunk, written = b"x" * 2**16, 0

    def fill() -> None:
        nonlocal written
        with contextlib.suppress(BlockingIOError):
            while True:
                written += os.write(write_end, chunk)

    try:
        async with asyncio.timeout(20):
            while feed.is_reading():  # nobody reads the reader: it fills, then pauses the feed
                fill()
                await asyncio.sleep(0)  # one loop iteration: the feed takes what waits
            fill()
            await asyncio.sleep(0)
            with pytest.raises(BlockingIOError):  # paused: the pipe stays full
                os.write(write_end, chunk)
            got = b""
            while len(got) < written:  # reading resumes the feed, which drains the pipe
                got += await reader.read(2**16)
            assert feed.is_reading()
        assert got == b"x" * written
    finally:
        os.close(write_end)
        feed.close()


async def test_closing_a_pipe_feed_ends_its_reader() -> None:
    read_end, write_end = os.pipe()
    [reader], [feed] = await read_pipes([os.fdopen(read_end, "rb", buffering=0)])
    try:
        os.write(write_end, b"last words\n")
        async with asyncio.timeout(20):
            assert await reader.readline() == b"last words\n"
            feed.close()
            assert await reader.read() == b""
        assert feed.is_closing()
    finally:
        os.close(write_end)
