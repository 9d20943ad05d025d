"""A frozen fork server delays a restart by fork_timeout at most (real runners and fork server)."""

from __future__ import annotations

import time

import psutil

from plughost.host import PluginHost
from plughost.settings import SandboxSettings
from tests.conftest import TEST_PLUGINS, HostFactory

ECHO = TEST_PLUGINS / "echo"
HOSTILE = TEST_PLUGINS / "hostile_forkserver"


def _fork_server_pid(host: PluginHost) -> int:
    server = host._fork_server
    assert server is not None and server.pid is not None, "the fork server did not start"
    return server.pid


async def test_a_plugin_that_freezes_the_fork_server_and_crashes_is_back_within_seconds(
    make_host: HostFactory,
) -> None:
    # With the sandbox's signal scope the plugin cannot stop the fork server at all; what
    # is tested here is the host's recovery where the kernel offers no such scope.
    no_sandbox = SandboxSettings(enabled=False)
    fork_timeout = 1.0
    async with make_host([ECHO, HOSTILE], fork_timeout=fork_timeout, sandbox=no_sandbox) as host:
        frozen = _fork_server_pid(host)
        started = time.monotonic()  # a new runner from a fork server that answers
        reloaded = await host.reload_plugin("tests.hostile_forkserver")
        before = await host.invoke("alive", {})
        normal = time.monotonic() - started
        crashed = await host.invoke("freeze_and_die", {})
        started = time.monotonic()
        back = await host.invoke("alive", {})
        took = time.monotonic() - started
        echoed = await host.invoke("echo", {"text": "neighbour"})
        states = {row.plugin_id: row.state for row in host.status()}
        frozen_alive = psutil.pid_exists(frozen)

    assert reloaded and before.success, before.error_message
    assert crashed.error_code == "plugin_crashed"
    assert back.success, back.error_message
    # The frozen fork server costs its fork_timeout once, then the runner starts as usual.
    bound = 3 * fork_timeout + 2 * normal
    assert took < bound, f"the restart took {took:.2f} s, a reload and a call {normal:.2f} s"
    assert echoed.content == "neighbour"
    assert states == {"tests.echo": "loaded", "tests.hostile_forkserver": "loaded"}
    assert not frozen_alive, "the frozen fork server was left behind"
