"""limits.memory_mb counts what the kernel sees, not what the runner says (real runners)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from plughost.host import PluginHost
from plughost.runners.memory import _own_memory_cgroup
from plughost.settings import HostSettings, ResourceLimits, SandboxSettings
from tests.conftest import TEST_PLUGINS, HostFactory, fast_settings

HOSTILE = TEST_PLUGINS / "hostile_memory"
LIMIT_MB = 120


def _settings(tmp_path: Path) -> HostSettings:
    # Unconfined: the sandbox would refuse the /dev/shm write; counting it is what is tested.
    settings = fast_settings(tmp_path, sandbox=SandboxSettings(enabled=False))
    settings.runner.limits = ResourceLimits(memory_mb=LIMIT_MB)
    return settings


async def _over_limit(host: PluginHost, tool: str, arguments: dict[str, object]) -> str:
    result = await host.invoke(tool, arguments)
    assert result.error_code == "plugin_crashed", result
    return result.error_message


async def test_a_plugin_that_lies_about_its_pid_is_measured_by_the_pid_the_host_started(
    make_host: HostFactory, tmp_path: Path
) -> None:
    async with make_host([HOSTILE], _settings(tmp_path)) as host:
        runner = host.runner_for("tests.hostile_memory")
        assert runner is not None
        started = runner.pid
        claimed = await host.invoke("pid", {})
        message = await _over_limit(host, "grow", {"mb": LIMIT_MB * 2})

    assert claimed.content != str(started)  # the lie the report carries
    assert "memory limit exceeded" in message and "limits.memory_mb" in message


async def test_memory_written_to_dev_shm_counts_towards_the_limit(
    make_host: HostFactory, tmp_path: Path
) -> None:
    if _own_memory_cgroup() is None:
        pytest.skip(
            "closed /dev/shm files are visible only to the cgroup v1 memory meter, which needs "
            "root and a writable memory cgroup; without them the host reads /proc"
        )
    shm = Path("/dev/shm") / f"plughost-test-{uuid.uuid4().hex}"
    try:
        async with make_host([HOSTILE], _settings(tmp_path)) as host:
            message = await _over_limit(host, "fill_shm", {"path": str(shm), "mb": LIMIT_MB * 2})
    finally:
        shm.unlink(missing_ok=True)

    assert "memory limit exceeded" in message and "(cgroup)" in message
    assert "limits.memory_mb" in message
