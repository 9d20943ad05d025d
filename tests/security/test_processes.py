"""A runner's processes: hidden and taken along with a pid namespace, counted by limits.processes.

Every attempt succeeds without those: the intruder reads any process's command
line in ``/proc``, a grandchild that starts its own session outlives the runner
(the fault-storm test pins that default), and a fork bomb starts all it asks for.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from plughost.host import PluginHost
from plughost.runners.cgroups import own_cgroup
from plughost.settings import ResourceLimits
from tests.conftest import TEST_PLUGINS, fast_settings
from tests.fault_injection import processes_mentioning
from tests.security.sandboxed import Attack, plant_plugins, require
from tests.waiting import wait_until


async def test_in_a_pid_namespace_a_plugin_cannot_see_the_host_process(tmp_path: Path) -> None:
    plugins = plant_plugins(tmp_path)
    settings = fast_settings(tmp_path, sandbox={"pid_namespace": True})
    async with PluginHost([plugins / "hostile_intruder"], settings=settings) as host:
        require(host, "pid_namespace")
        attack = Attack(host, plugins, settings.data_dir)

        host_cmdline = await attack.attempt("intrude_read", path=f"/proc/{os.getpid()}/cmdline")
        own_status = await attack.attempt("intrude_read", path="/proc/self/status")

        assert not host_cmdline["allowed"]
        assert own_status["allowed"] and "NSpid" in own_status["detail"]


async def test_in_a_pid_namespace_a_detached_grandchild_dies_with_its_runner(
    tmp_path: Path,
) -> None:
    pids, marker = tmp_path / "pids", f"plughost-test-{uuid.uuid4().hex}"
    pids.mkdir()
    settings = fast_settings(
        tmp_path, sandbox={"pid_namespace": True, "write_paths": [pids]}, max_restarts=0
    )
    async with PluginHost([TEST_PLUGINS / "spawn_children"], settings=settings) as host:
        require(host, "pid_namespace")
        arguments = {"pid_dir": str(pids), "marker": marker, "escape": True}

        result = await host.invoke("spawn_and_exit", arguments)

        assert result.error_code == "plugin_crashed"
        assert {p.name.split(".")[0] for p in pids.iterdir()} >= {"escaped", "grandchild"}
        await wait_until(
            lambda: not processes_mentioning(marker), timeout=10, what="every child gone"
        )


async def test_a_fork_bomb_stops_at_the_runners_process_limit(tmp_path: Path) -> None:
    plugins = plant_plugins(tmp_path)
    settings = fast_settings(tmp_path)
    settings.plugin_limits = {"tests.hostile-intruder": ResourceLimits(processes=12)}
    async with PluginHost([plugins / "hostile_intruder"], settings=settings) as host:
        require(host, "user_namespace")
        if os.geteuid() == 0 and own_cgroup("pids") is None:
            pytest.skip("root ignores RLIMIT_NPROC, and this host has no cgroup v1 pids to use")
        attack = Attack(host, plugins, settings.data_dir)

        bomb = await attack.attempt("intrude_spawn", count=40)
        after = await attack.attempt("intrude_spawn", count=2)  # the children are gone again

        assert not bomb["allowed"] and bomb["detail"] < 12
        assert "Resource temporarily unavailable" in bomb["refused"]
        assert after["allowed"] and after["detail"] == 2
