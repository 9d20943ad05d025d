"""What a runner forked from the fork server keeps of its own memory: real processes."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from plughost.host import PluginHost
from tests.conftest import TEST_PLUGINS, fast_settings

SHARED_PAGES = TEST_PLUGINS / "shared_pages"

pytestmark = [
    pytest.mark.skipif(
        not Path("/proc/self/smaps_rollup").exists(),
        reason="needs /proc/<pid>/smaps_rollup (Linux 4.14 or later)",
    ),
    pytest.mark.asyncio(loop_scope="module"),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def host(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[PluginHost]:
    """One host for the file; its plugin is granted network, so its runner has the egress gate."""
    settings = fast_settings(tmp_path_factory.mktemp("memory"))
    settings.network_grants = {"tests.shared-pages": ["api.example.com"]}
    async with PluginHost([SHARED_PAGES], settings=settings) as started:
        if started._fork_server is None:
            pytest.skip(f"no fork server on {sys.platform}: runners are new interpreters")
        yield started


async def call(host: PluginHost, tool: str) -> dict[str, Any]:
    result = await host.invoke(tool, {})
    assert result.success, result.error_message
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def anonymous_kib(pid: int) -> int:
    """The anonymous memory (the Python heap among it) of process ``pid``, in KiB."""
    rollup = Path(f"/proc/{pid}/smaps_rollup").read_text(encoding="ascii")
    for line in rollup.splitlines():
        if line.startswith("Anonymous:"):
            return int(line.split()[1])
    raise AssertionError(f"no Anonymous line in /proc/{pid}/smaps_rollup")


async def test_a_full_collection_in_a_forked_runner_copies_little_of_the_fork_servers_heap(
    host: PluginHost,
) -> None:
    assert host._fork_server is not None and host._fork_server.pid is not None
    heap = anonymous_kib(host._fork_server.pid)
    pages = await call(host, "collect")
    copied = pages["after_kib"] - pages["before_kib"]
    # The server freezes what it imported: the collector never visits those objects,
    # so a collection in a runner writes to none of their pages. Without the freeze
    # it copies about a third of the server's heap (its every tracked object's header).
    assert copied < heap * 0.15, f"a collection copied {copied} KiB of a {heap} KiB heap"


async def test_a_runner_granted_network_imports_nothing_but_its_plugin_after_the_fork(
    host: PluginHost,
) -> None:
    # A module a runner imports is that runner's own memory, every runner over: what
    # the sandbox's egress needs (its proxy, urllib) is imported by the fork server.
    found = await call(host, "imported_here")
    if not found["egress"]:
        pytest.skip("no egress gate in this runner: it needs a network namespace")
    modules = found["modules"]
    assert modules and all(name.startswith("plughost_plugin_") for name in modules), modules
