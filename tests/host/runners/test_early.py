"""Children started ahead of the host are adopted when they fit, closed when they do not."""

from __future__ import annotations

import sys

import pytest

from plughost.host import PluginHost
from plughost.runners.early import DEFAULT_FORK_TIMEOUT, DEFAULT_READY_TIMEOUT, EarlyChildren
from plughost.settings import HostSettings, RunnerSettings

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the fork server forks runners on Linux"
)


def test_early_defaults_are_the_runner_settings_defaults() -> None:
    defaults = RunnerSettings()
    assert defaults.ready_timeout == DEFAULT_READY_TIMEOUT
    assert defaults.fork_timeout == DEFAULT_FORK_TIMEOUT
    assert defaults.env_allowlist == []


async def test_host_adopts_an_early_fork_server_started_for_its_settings() -> None:
    early = EarlyChildren.start()
    host = PluginHost(settings=HostSettings(), early=early)
    async with host:
        server = await early.fork_server
        assert server is not None
        assert host._fork_server is server
        assert server.running
    assert not server.running


async def test_host_closes_an_early_fork_server_started_for_other_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PLUGHOST_TEST_OTHER_ENV", "1")  # passed to the early one's runners only
    early = EarlyChildren.start(["PLUGHOST_TEST_OTHER_ENV"])
    settings = HostSettings()
    async with PluginHost(settings=settings, early=early) as host:
        server = await early.fork_server
        assert server is not None
        assert host._fork_server is not None
        assert host._fork_server is not server
        assert not server.running


async def test_a_host_that_never_starts_closes_its_early_fork_server() -> None:
    early = EarlyChildren.start()
    host = PluginHost(settings=HostSettings(), early=early)
    await host.aclose()
    server = await early.fork_server
    assert server is not None
    assert not server.running


async def test_host_takes_the_early_probe_answer_for_its_sandbox_plan() -> None:
    early = EarlyChildren.start()
    async with PluginHost(settings=HostSettings(), early=early) as host:
        assert early.probe.done()
        support = early.probe.result()
        assert host.sandbox is not None
        assert set(host.sandbox.active) <= support.offered
