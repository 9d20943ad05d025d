"""The init of a forked runner's pid namespace: the native program, doing the whole job.

Once it has forked the runner, the Python init execs ``plughost-init``
(``plughost_runner/sandbox/init.c``, built by ``scripts/bootstrap.sh``). These
tests run real hosts with the default sandbox and check what that program must
still do: reap orphans, end with the fork server, and say on start when it is
missing. The exit codes, signals and SIGTERM forwarding that pass through it
are pinned in ``test_processes.py``.
"""

from __future__ import annotations

import logging
import os
import signal
import stat
import sys
from pathlib import Path

import psutil
import pytest

from plughost.host import PluginHost
from plughost.runners.fork_server import ForkServer
from plughost.runners.spawn import runner_env
from plughost_runner.sandbox import pidns
from tests.conftest import TEST_PLUGINS, fast_settings
from tests.security.sandboxed import require
from tests.waiting import wait_until


def _require_native_init() -> str:
    path = pidns.native_init()
    if path is None:
        pytest.skip(f"the native init is not built at {pidns.NATIVE_INIT} (no C compiler?)")
    return os.path.realpath(path)


def _init_of(host: PluginHost, plugin_id: str) -> psutil.Process:
    runner = host.runner_for(plugin_id)
    assert runner is not None and runner.pid is not None
    return psutil.Process(runner.pid)


async def test_a_forked_runners_init_is_the_native_program(tmp_path: Path) -> None:
    native = _require_native_init()
    async with PluginHost([TEST_PLUGINS / "echo"], settings=fast_settings(tmp_path)) as host:
        require(host, "pid_namespace")
        init = _init_of(host, "tests.echo")

        assert os.path.realpath(init.exe()) == native
        assert init.name() == "plughost-init"
        assert [c.name() for c in init.children()] == ["plughost-runner"]
        assert (await host.invoke("echo", {"text": "native"})).content == "native"


async def test_the_native_init_reaps_an_orphan_the_runner_left(tmp_path: Path) -> None:
    _require_native_init()
    plugins = [TEST_PLUGINS / "orphans"]
    async with PluginHost(plugins, settings=fast_settings(tmp_path)) as host:
        require(host, "pid_namespace")
        init = _init_of(host, "tests.orphans")

        result = await host.invoke("orphan_sleep", {})
        assert result.success
        orphans = [c for c in init.children() if c.name() == "sleep"]
        assert len(orphans) == 1  # adopted by init: the shell that started it is gone
        orphan = orphans[0]
        orphan.send_signal(signal.SIGKILL)

        await wait_until(lambda: not psutil.pid_exists(orphan.pid), timeout=10, what="reaped")
        zombies = [c for c in init.children() if c.status() == psutil.STATUS_ZOMBIE]
        assert zombies == []
        assert (await host.invoke("orphan_sleep", {})).success  # the runner lives on


async def test_killing_the_fork_server_ends_the_native_inits_namespace(tmp_path: Path) -> None:
    native = _require_native_init()
    settings = fast_settings(tmp_path, max_restarts=0)
    async with PluginHost([TEST_PLUGINS / "echo"], settings=settings) as host:
        require(host, "pid_namespace")
        init = _init_of(host, "tests.echo")
        (runner,) = init.children()
        server = host._fork_server
        assert server is not None and server.pid is not None
        assert os.path.realpath(init.exe()) == native

        os.kill(server.pid, signal.SIGKILL)

        gone = (init.pid, runner.pid)
        await wait_until(
            lambda: not any(psutil.pid_exists(p) for p in gone), timeout=10, what="namespace gone"
        )


async def test_a_fork_server_without_the_native_init_says_so_once_at_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A fork server whose native init is missing, as after a bootstrap without a compiler.
    missing = tmp_path / "libexec" / "plughost-init"
    python = tmp_path / "python"
    python.write_text(
        "#!/bin/sh\nshift 2\n"  # drop "-m plughost_runner.forkserver"
        f'exec "{sys.executable}" -c '
        '"import sys, runpy, plughost_runner.sandbox.pidns as p; '
        f"p.NATIVE_INIT = '{missing}'; sys.argv[0] = 'forkserver'; "
        "runpy.run_module('plughost_runner.forkserver', run_name='__main__')\" \"$@\"\n"
    )
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    server = ForkServer(runner_env(), python=str(python))
    caplog.set_level(logging.WARNING, logger="plughost.runners.fork_server")
    try:
        await server.start()
        await server._stop_process()
        await server.start()  # a replaced fork server: no second warning
    finally:
        await server.aclose()

    told = [r.getMessage() for r in caplog.records if "native pid-namespace init" in r.getMessage()]
    assert server.init_missing == str(missing)
    assert len(told) == 1
    assert str(missing) in told[0] and "C compiler (cc)" in told[0] and "3 MiB" in told[0]
