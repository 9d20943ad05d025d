"""Fixtures shared by the remote-runner tests: a host listening on loopback, runner processes."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from plughost.host import PluginHost
from tests.integration.remote_helpers import remote_settings, stop


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[PluginHost]:
    """A started host accepting remote runners on a free loopback port."""
    async with PluginHost(settings=remote_settings(tmp_path)) as plugin_host:
        yield plugin_host


@pytest.fixture
def runners() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Runner processes a test starts; killed at its end."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        stop(process)
