"""Remote runners across network namespaces this test creates: a host in one, runners in another.

Two namespaces joined by a veth pair, with addresses in 10.213.0.0/16 that
exist only inside them: the host's listening socket is bound in namespace A
(this thread enters A while the host starts, then returns), and the runners run
in namespace B (``ip netns exec``). Load is a fixed number of calls, only ever to
the host's address in A. Everything is deleted in ``finally``.

Needs root (or CAP_SYS_ADMIN and CAP_NET_ADMIN) and ``ip``; skipped with the
reason otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from plughost.host import PluginHost
from plughost.settings import RemoteSettings
from tests.conftest import fast_settings
from tests.integration.remote_helpers import (
    PLUGIN_ID,
    exited,
    healthy_members,
    issue,
    logged,
    pause,
    plugin_dir,
    remote_pool,
    start_runner,
    stop,
)
from tests.waiting import wait_until

CLONE_NEWNET = 0x40000000
PORT = 7701


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


class Namespaces:
    """Namespace A (host) and B (runners), a veth pair between them, private addresses."""

    def __init__(self) -> None:
        tag = f"{os.getpid() % 100000}"
        self.a, self.b = f"phr{tag}a", f"phr{tag}b"
        self.veth_a, self.veth_b = f"phv{tag}a", f"phv{tag}b"
        octet = os.getpid() % 250 + 1
        self.host_address = f"10.213.{octet}.1"
        self.runner_address = f"10.213.{octet}.2"

    def create(self) -> None:
        _ip("netns", "add", self.a)
        _ip("netns", "add", self.b)
        _ip("link", "add", self.veth_a, "type", "veth", "peer", "name", self.veth_b)
        _ip("link", "set", self.veth_a, "netns", self.a)
        _ip("link", "set", self.veth_b, "netns", self.b)
        _ip("-n", self.a, "addr", "add", f"{self.host_address}/24", "dev", self.veth_a)
        _ip("-n", self.b, "addr", "add", f"{self.runner_address}/24", "dev", self.veth_b)
        for namespace, device in ((self.a, self.veth_a), (self.b, self.veth_b)):
            _ip("-n", namespace, "link", "set", "lo", "up")
            _ip("-n", namespace, "link", "set", device, "up")

    def link(self, state: str) -> None:
        """Cut (``down``) or restore (``up``) the runners' side of the link."""
        _ip("-n", self.b, "link", "set", self.veth_b, state)

    def delete(self) -> None:
        for namespace in (self.a, self.b):
            with contextlib.suppress(subprocess.SubprocessError):
                _ip("netns", "del", namespace)

    @contextlib.contextmanager
    def entered(self, namespace: str) -> Iterator[None]:
        """Run this thread in ``namespace`` (sockets made meanwhile stay there), then return."""
        libc = ctypes.CDLL(None, use_errno=True)
        original = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        target = os.open(f"/run/netns/{namespace}", os.O_RDONLY)
        try:
            if libc.setns(target, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns")
            try:
                yield
            finally:
                if libc.setns(original, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns back")
        finally:
            os.close(target)
            os.close(original)


@pytest.fixture
def namespaces() -> Iterator[Namespaces]:
    if shutil.which("ip") is None:
        pytest.skip("the ip command (iproute2) is not installed")
    spaces = Namespaces()
    try:
        spaces.create()
    except (subprocess.CalledProcessError, OSError) as exc:
        spaces.delete()
        detail = (
            exc.stderr.decode().strip() if isinstance(exc, subprocess.CalledProcessError) else exc
        )
        pytest.skip(f"cannot create network namespaces here (needs root/CAP_NET_ADMIN): {detail}")
    try:
        yield spaces
    finally:
        spaces.delete()


async def test_runners_in_another_namespace_balance_survive_a_kill_a_cut_link_and_a_host_restart(
    namespaces: Namespaces, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    keys = tmp_path / "keys"
    listen = f"tcp://{namespaces.host_address}:{PORT}"
    settings = fast_settings(tmp_path, fork_server=False).model_copy(
        update={"remote": RemoteSettings(listen=listen, keys_dir=keys, grace=1.0)}
    )
    credential = issue(keys, "box-b", [PLUGIN_ID], tmp_path / "box-b.json")
    plugins = plugin_dir(tmp_path / "plugins-b")
    in_b = ("ip", "netns", "exec", namespaces.b)
    runners: list[subprocess.Popen[bytes]] = []
    host = PluginHost(settings=settings)
    try:
        with namespaces.entered(namespaces.a):
            await host.start()
        assert host.remote is not None and host.remote.listener.endpoint == listen
        for _ in range(2):
            runners.append(start_runner(listen, credential, plugins, tmp_path, in_b))
        await wait_until(lambda: healthy_members(host) == 2, timeout=30, what="two runners")
        status = next(s for s in host.status() if s.plugin_id == PLUGIN_ID)
        assert all(namespaces.runner_address in where for where in status.where)

        # Balanced: eight slow calls at once, four on each runner.
        results = await asyncio.gather(*(pause(host, 0.3) for _ in range(8)))
        assert sorted(Counter(r.structured_content["pid"] for r in results).values()) == [4, 4]

        # One runner killed with calls in flight: only its own calls fail.
        pool = remote_pool(host)
        assert pool is not None
        victim = pool.members[0]
        calls = [asyncio.create_task(pause(host, 1.0)) for _ in range(8)]
        await wait_until(lambda: victim.inflight == 4, timeout=5, what="calls in flight")
        process = next(p for p in runners if _pid_in_namespace(p) == victim.remote_pid)
        stop(process)
        outcome = await asyncio.gather(*calls)
        failed = [r for r in outcome if not r.success]
        assert len(failed) == 4 and {r.error_code for r in failed} == {"plugin_crashed"}
        runners.append(start_runner(listen, credential, plugins, tmp_path, in_b))
        await wait_until(lambda: healthy_members(host) == 2, timeout=30, what="a new runner")

        # The link cut: calls fail fast, the tools go after the grace, and come back with it.
        namespaces.link("down")
        await wait_until(lambda: healthy_members(host) == 0, timeout=10, what="both silent")
        assert (await pause(host, 0)).error_code == "plugin_crashed"
        await wait_until(lambda: remote_pool(host) is None, timeout=10, what="tools removed")
        assert (await pause(host, 0)).error_code == "tool_not_found"
        namespaces.link("up")
        await wait_until(lambda: healthy_members(host) == 2, timeout=60, what="both rejoined")
        back = await asyncio.gather(*(pause(host, 0.2) for _ in range(4)))
        assert all(r.success for r in back), [r.error_message for r in back]

        # A revoked credential is refused; so is a plugin off a credential's allow-list.
        revoked = issue(keys, "revoked", [PLUGIN_ID], tmp_path / "revoked.json")
        assert host.remote is not None
        from plughost.remote.keys import RemoteKeyStore

        assert RemoteKeyStore(keys).revoke("revoked")
        runners.append(start_runner(listen, revoked, plugins, tmp_path, in_b))
        await wait_until(
            lambda: logged(caplog.records, "belongs to no credential (unknown or revoked)"),
            timeout=30,
            what="the revoked key is refused",
        )
        narrow = issue(keys, "narrow", ["tests.other"], tmp_path / "narrow.json")
        runners.append(start_runner(listen, narrow, plugins, tmp_path, in_b))
        assert await exited(runners[-1], timeout=30) == 3
        assert logged(caplog.records, "not on the allow-list of credential narrow")
        assert healthy_members(host) == 2

        # The host restarts (same address, same keys_dir): its runners rejoin by themselves.
        serving = {m.remote_pid for m in pool.healthy()} if (pool := remote_pool(host)) else set()
        assert len(serving) == 2
        await host.aclose()
        host = PluginHost(settings=settings)
        with namespaces.entered(namespaces.a):
            await host.start()
        await wait_until(lambda: healthy_members(host) == 2, timeout=30, what="both rejoined")
        again = await asyncio.gather(*(pause(host, 0.2) for _ in range(4)))
        assert all(r.success for r in again), [r.error_message for r in again]
        assert {r.structured_content["pid"] for r in again} <= serving  # the same processes
    finally:
        for process in runners:
            stop(process)
        await host.aclose()


def _pid_in_namespace(process: subprocess.Popen[bytes]) -> int:
    """The runner's own pid: ``ip netns exec`` execs it, so it is the Popen's pid."""
    return process.pid
