"""Shared fixtures: paths to the test plugins and fast supervisor settings."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from plughost.host import PluginHost
from plughost.settings import HostSettings, RunnerSettings

TESTS = Path(__file__).resolve().parent
TEST_PLUGINS = TESTS / "plugins"
EXAMPLES = TESTS.parent / "plugins_example"


HOST_PIDS: dict[str, Any] = {"pid_namespace": False}
"""``sandbox`` settings for tests that compare pids a plugin reports with the host's.

In its pid namespace (on by default) every runner is pid 2 and sees its
children by pids the host does not know them by.
"""


def fast_settings(tmp_path: Path, **runner: Any) -> HostSettings:
    """Settings that notice hangs and restart quickly, for tests."""
    options: dict[str, Any] = {
        "heartbeat_interval": 0.1,
        "heartbeat_misses": 5,
        "backoff_initial": 0.05,
        "backoff_max": 0.5,
        "term_timeout": 1.0,
        "shutdown_drain": 1.0,
        "stuck_grace": 0.5,
        "ready_timeout": 15.0,
    }
    options.update(runner)
    return HostSettings(
        data_dir=tmp_path / "data",
        temp_dir=tmp_path / "temp",
        call_timeout=10.0,
        runner=RunnerSettings(**options),
    )


HostFactory = Callable[..., AbstractAsyncContextManager[PluginHost]]


@pytest.fixture
def make_host(tmp_path: Path) -> HostFactory:
    """Build a started PluginHost over the given plugin folders, stopped afterwards."""

    @asynccontextmanager
    async def factory(
        dirs: Iterable[Path], settings: HostSettings | None = None, **runner: Any
    ) -> AsyncIterator[PluginHost]:
        host = PluginHost(list(dirs), settings=settings or fast_settings(tmp_path, **runner))
        try:
            await host.start()
            yield host
        finally:
            await host.aclose()

    return factory


@pytest.fixture(scope="session", autouse=True)
def _own_working_directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Run each test process in a directory of its own, not in the checkout.

    What the host keeps relative to its working directory by default (``data/``
    and ``temp/``: plugin data, the tool catalogue, MCP servers' overlays) is
    then never shared by test files that run at the same time in other workers.
    """
    work = tmp_path_factory.mktemp("work")
    before = Path.cwd()
    os.chdir(work)
    try:
        yield work
    finally:
        os.chdir(before)


@pytest.fixture(autouse=True)
def _quiet_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
