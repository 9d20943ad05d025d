"""Runner resource limits: a plugin that hits one fails its call with an error naming it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from plughost.host import PluginHost
from plughost.settings import ResourceLimits
from tests.conftest import TEST_PLUGINS, HostFactory, fast_settings


@pytest.fixture
async def host(make_host: HostFactory, tmp_path: Path) -> AsyncIterator[PluginHost]:
    settings = fast_settings(tmp_path, stuck_grace=30.0)
    settings.plugin_limits["tests.limits"] = ResourceLimits(
        memory_mb=200, cpu_seconds=1, open_files=64
    )
    async with make_host([TEST_PLUGINS / "limits", TEST_PLUGINS / "echo"], settings) as started:
        yield started


async def test_a_plugin_over_its_memory_limit_loses_its_runner_with_the_limit_named(
    host: PluginHost,
) -> None:
    result = await host.invoke("grow", {"mb": 400})
    assert result.error_code == "plugin_crashed"
    assert "memory limit exceeded" in result.error_message
    assert "limits.memory_mb" in result.error_message
    await host.events.wait_for(lambda e: e.kind.value == "runner.restarted", timeout=20)
    assert (await host.invoke("fine", {})).content == "fine"
    assert (await host.invoke("echo", {"text": "neighbour"})).content == "neighbour"


async def test_a_plugin_over_its_open_file_limit_fails_the_call_naming_it(
    host: PluginHost,
) -> None:
    assert (await host.invoke("open_many", {"count": 10})).success
    result = await host.invoke("open_many", {"count": 500})
    assert result.error_code == "resource_limit"
    assert "limits.open_files" in result.error_message
    assert (await host.invoke("fine", {})).content == "fine"


async def test_a_plugin_over_its_cpu_limit_loses_its_runner_with_the_limit_named(
    host: PluginHost,
) -> None:
    result = await host.invoke("burn", {})
    assert result.error_code == "plugin_crashed"
    assert "CPU time limit of 1 s exceeded (limits.cpu_seconds)" in result.error_message
    assert (await host.invoke("echo", {"text": "neighbour"})).content == "neighbour"


async def test_plugins_without_overrides_get_the_global_limits(
    make_host: HostFactory, tmp_path: Path
) -> None:
    settings = fast_settings(tmp_path)
    settings.runner.limits = ResourceLimits(open_files=64)
    async with make_host([TEST_PLUGINS / "limits"], settings) as host:
        runner = host.runner_for("tests.limits")
        assert runner is not None
        assert runner.limits.open_files == 64
        assert (await host.invoke("open_many", {"count": 500})).error_code == "resource_limit"


async def test_a_call_past_its_plugins_wall_clock_limit_times_out_naming_it(
    make_host: HostFactory, tmp_path: Path
) -> None:
    settings = fast_settings(tmp_path)  # call_timeout 10 s for everyone else
    settings.plugin_limits["tests.echo"] = ResourceLimits(call_seconds=0.5)
    async with make_host([TEST_PLUGINS / "limits", TEST_PLUGINS / "echo"], settings) as host:
        result = await host.invoke("sleep", {"seconds": 5})
        assert result.error_code == "timeout"
        assert "within 0.5 s" in result.error_message
        assert "limits.call_seconds" in result.error_message
        assert (await host.invoke("echo", {"text": "after"})).content == "after"
        assert (await host.invoke("fine", {})).content == "fine"  # its neighbour: no cap
