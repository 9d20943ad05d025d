"""What a runner forked from the fork server copies of the server's memory: real processes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import TEST_PLUGINS, HostFactory, fast_settings

SHARED_PAGES = TEST_PLUGINS / "shared_pages"

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/smaps_rollup").exists(),
    reason="needs /proc/<pid>/smaps_rollup (Linux 4.14 or later)",
)


def anonymous_kib(pid: int) -> int:
    """The anonymous memory (the Python heap among it) of process ``pid``, in KiB."""
    rollup = Path(f"/proc/{pid}/smaps_rollup").read_text(encoding="ascii")
    for line in rollup.splitlines():
        if line.startswith("Anonymous:"):
            return int(line.split()[1])
    raise AssertionError(f"no Anonymous line in /proc/{pid}/smaps_rollup")


async def test_a_full_collection_in_a_forked_runner_copies_little_of_the_fork_servers_heap(
    make_host: HostFactory,
) -> None:
    async with make_host([SHARED_PAGES]) as host:
        server = host._fork_server
        if server is None or server.pid is None:
            pytest.skip(f"no fork server on {sys.platform}: runners are new interpreters")
        heap = anonymous_kib(server.pid)
        result = await host.invoke("collect", {})
        assert result.success, result.error_message
        copied = result.structured_content["after_kib"] - result.structured_content["before_kib"]
        # The server freezes what it imported: the collector never visits those objects,
        # so a collection in a runner writes to none of their pages. Without the freeze
        # it copies about a third of the server's heap (its every tracked object's header).
        assert copied < heap * 0.15, f"a collection copied {copied} KiB of a {heap} KiB heap"


async def test_a_runner_granted_network_imports_nothing_but_its_plugin_after_the_fork(
    make_host: HostFactory, tmp_path: Path
) -> None:
    # A module a runner imports is that runner's own memory, every runner over: what
    # the sandbox's egress needs (its proxy, urllib) is imported by the fork server.
    settings = fast_settings(tmp_path)
    settings.network_grants = {"tests.shared-pages": ["api.example.com"]}
    async with make_host([SHARED_PAGES], settings=settings) as host:
        if host._fork_server is None:
            pytest.skip(f"no fork server on {sys.platform}: runners are new interpreters")
        result = await host.invoke("imported_here", {})
        assert result.success, result.error_message
        if not result.structured_content["egress"]:
            pytest.skip("no egress gate in this runner: it needs a network namespace")
        modules = result.structured_content["modules"]
        assert modules and all(name.startswith("plughost_plugin_") for name in modules), modules
