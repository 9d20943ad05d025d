"""One host accepting remote runners, shared by the tests of a file, and given back clean.

A test file takes it by naming the two fixtures at its top level
(``shared_host = shared_remote.shared_remote_host`` and ``host =
shared_remote.host_for_the_test``): its tests then ask for ``host`` as they
would for the function-scoped one of ``conftest.py``, and run on the module's
event loop (``pytestmark = pytest.mark.asyncio(loop_scope="module")``).

Starting a host (its sandbox probe, its fork server) costs more than most remote
tests spend on what they check. A file that only needs "a host on loopback"
shares one: each test starts its own runners under a credential of its own, and
when it ends its runners leave as a rolled-out pod does (SIGTERM, exit 0,
out of the pool at once). A host that still serves a plugin after that (a test
that failed mid-call, a runner killed without leaving) is closed, and the next
test gets a new one: no test sees another's runners, pools or versions.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from plughost.host import PluginHost
from tests.integration.remote_helpers import exited, remote_settings
from tests.waiting import wait_until

LEAVE_TIMEOUT = 10.0  # a runner with nothing in flight leaves well within this


class SharedRemoteHost:
    """A started host with ``[host.remote] listen`` on loopback, replaced when left unclean."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._host: PluginHost | None = None
        self._started = 0

    async def clean(self) -> PluginHost:
        """The shared host, serving no remote plugin; started anew if there is none."""
        if self._host is None:
            self._started += 1
            host = PluginHost(settings=remote_settings(self._root / f"host-{self._started}"))
            await host.start()
            self._host = host
        assert self._host.remote is not None
        assert not self._host.remote.pools, "a shared host was handed on unclean"
        return self._host

    async def release(self, runners: list[subprocess.Popen[bytes]]) -> None:
        """Let a test's runners leave; keep the host only if it serves nothing afterwards."""
        for process in runners:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGTERM)
        stayed = [p for p in runners if await exited(p, timeout=LEAVE_TIMEOUT) is None]
        host = self._host
        if host is None or host.remote is None:
            return
        if stayed:  # a runner that did not leave may still hold a member somewhere
            await self._close()
            return
        remote = host.remote
        with contextlib.suppress(AssertionError):  # not clean in time: replaced below
            await wait_until(lambda: not remote.pools, timeout=LEAVE_TIMEOUT, what="pools gone")
        if remote.pools:
            await self._close()

    async def aclose(self) -> None:
        """Stop the shared host, if one is running."""
        await self._close()

    async def _close(self) -> None:
        host, self._host = self._host, None
        if host is not None:
            await host.aclose()


def held_tool(tool: str, version: str) -> str:
    """Source of a tool ``tool`` for the class body of ``test_replicas.write_plugin``'s plugin.

    A call waits until the file its ``release`` argument names exists (60 s at
    most), then answers ``version`` and its pid: a call kept in flight for as long
    as the test needs, not for a guessed number of seconds.
    """
    return f"""
    @Tool(
        "{tool}",
        brief_description="Wait for the test's release (a file), then answer",
        parameters=[ToolParameterInfo(name="release", param_type=ToolParamType.STRING)],
    )
    async def {tool}(self, release: str, **kwargs: Any) -> dict[str, Any]:
        end = asyncio.get_running_loop().time() + 60
        while not os.path.exists(release) and asyncio.get_running_loop().time() < end:
            await asyncio.sleep(0.02)  # the release lives in the test's process: a file
        return {{"content": "{version}", "pid": os.getpid()}}
"""


def keys_of(host: PluginHost) -> Path:
    """Where ``host`` keeps its credentials: issue a test's own there."""
    return host.settings.remote.keys_dir


def own_name(tmp_path: Path, name: str) -> str:
    """``name`` made the test's own: a host refuses a second credential of one name."""
    return f"{name}-{tmp_path.name}"


@pytest_asyncio.fixture(scope="module", loop_scope="module", name="shared_host")
async def shared_remote_host(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[SharedRemoteHost]:
    """The test file's host, started when a test first asks for it."""
    shared = SharedRemoteHost(tmp_path_factory.mktemp("remote-host"))
    try:
        yield shared
    finally:
        await shared.aclose()


@pytest_asyncio.fixture(loop_scope="module", name="host")
async def host_for_the_test(
    shared_host: SharedRemoteHost, runners: list[subprocess.Popen[bytes]]
) -> AsyncIterator[PluginHost]:
    """The file's host, serving nothing; this test's runners leave it when the test ends."""
    yield await shared_host.clean()
    await shared_host.release(runners)
