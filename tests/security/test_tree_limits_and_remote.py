"""A plugin is counted as what it really is: all its processes, all its files, all it declares.

Real runners and a real host with the default configuration:

- ``limits.cpu_seconds`` over the runner's whole process tree (children,
  orphans, children that come and go), by the cgroup meter and by the
  ``/proc`` meter, with neighbours untouched;
- a runner with network (granted destinations, or a manifest's ports) sees
  neither its neighbours' sockets nor the host's connections in
  ``/proc/net``, and a manifest's ports still work;
- a remote runner's pin covers the whole plugin folder, and the names the
  pinned copy declares; a remote runner's declarations get a local one's bounds.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import marshal
import os
import re
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from plughost.cli.credentials import new_credential
from plughost.events import EventKind
from plughost.host import PluginHost
from plughost.runners.cgroups import own_cgroup
from plughost.runners.cpu import CpuCgroup
from plughost.settings import ResourceLimits
from plughost_sdk.plugin_digest import plugin_sha256
from tests.conftest import TEST_PLUGINS, fast_settings
from tests.fault_injection import EventLog
from tests.integration.remote_helpers import (
    PLUGIN_ID,
    exited,
    healthy_members,
    issue,
    logged,
    plugin_dir,
    remote_settings,
    start_runner,
    stop,
)
from tests.integration.test_remote_runners import HandMadeRunner
from tests.security.sandboxed import require
from tests.waiting import wait_until

TREE = TEST_PLUGINS / "hostile_tree"
TREE_ID = "tests.hostile-tree"
ECHO = TEST_PLUGINS / "echo"
CPU_LIMIT = 1
OTHER_ID = "tests.other"


# --- limits.cpu_seconds over the whole tree ------------------------------------------


@pytest.mark.parametrize(
    ("meter", "mode"),
    [("cgroup", "children"), ("/proc", "children"), ("/proc", "detach"), ("/proc", "relay")],
)
async def test_busy_children_stop_their_runner_at_the_plugins_cpu_seconds_summed_over_its_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, meter: str, mode: str
) -> None:
    """Three busy children, each under ``RLIMIT_CPU``; together over the plugin's limit."""
    if meter == "/proc":  # as on a host without root or without a cpuacct cgroup
        monkeypatch.setattr(CpuCgroup, "create", classmethod(lambda cls, name: None))
    elif own_cgroup("cpuacct") is None:
        pytest.skip("the cgroup meter needs root and a writable cgroup v1 cpuacct controller")
    settings = fast_settings(tmp_path)
    settings.plugin_limits[TREE_ID] = ResourceLimits(cpu_seconds=CPU_LIMIT)
    async with PluginHost([TREE, ECHO], settings=settings) as host:
        events = EventLog()
        host.events.add_callback(events)
        neighbour = host.runner_for("tests.echo")

        started = await host.invoke("burn", {"count": 3, "mode": mode})
        crashed = await events.next(EventKind.RUNNER_CRASHED, TREE_ID, timeout=120)
        await events.next(EventKind.RUNNER_RESTARTED, TREE_ID, timeout=60)
        fine = await host.invoke("fine", {})
        echoed = await host.invoke("echo", {"text": "next door"})

        assert host.runner_for("tests.echo") is neighbour
    assert started.success, started.error_message
    reason = str(crashed.details["reason"])
    assert f"CPU time limit of {CPU_LIMIT} s exceeded (limits.cpu_seconds)" in reason
    assert f"({meter})" in reason and crashed.plugin_id == TREE_ID
    found = re.search(r"used ([0-9.]+) s of CPU", reason)
    assert found is not None, reason
    assert CPU_LIMIT <= float(found.group(1)) < 2 * CPU_LIMIT  # stopped near the limit
    assert fine.content == "fine" and echoed.content == "next door"
    assert not events.of("tests.echo", {EventKind.RUNNER_CRASHED})


# --- what /proc/net shows inside a runner with network ----------------------------------


@pytest.fixture
def host_connection() -> Iterator[int]:
    """A connection of the host's own (a listener and a client on loopback): its port."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = int(server.getsockname()[1])
        with socket.create_connection(("127.0.0.1", port)):
            accepted, _ = server.accept()
            with accepted:
                yield port


def tree_plugin(root: Path, network: dict[str, Any] | None = None) -> Path:
    """A copy of the hostile tree plugin, with a manifest ``network`` field if given."""
    folder = root / "plugins" / "hostile_tree"
    shutil.copytree(TREE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    if network is not None:
        manifest = json.loads((folder / "_manifest.json").read_text())
        (folder / "_manifest.json").write_text(json.dumps({**manifest, "network": network}))
    return folder


async def read(host: PluginHost, path: str, *, child: bool = False) -> str:
    """What the plugin reads at ``path`` from inside its runner (failing if it cannot)."""
    result = await host.invoke("read", {"path": path, "child": child})
    assert result.success, result.error_message
    content = result.structured_content or {}
    assert content["readable"], content["text"]
    return str(content["text"])


@pytest.mark.parametrize("kind", ["granted", "manifest ports"])
async def test_a_runner_with_network_sees_no_neighbour_socket_and_no_connection_of_the_host(
    tmp_path: Path, host_connection: int, kind: str
) -> None:
    settings = fast_settings(tmp_path)
    if kind == "granted":
        folder = tree_plugin(tmp_path)
        settings.network_grants[TREE_ID] = ["example.com"]
    else:
        folder = tree_plugin(tmp_path, {"connect": [443, host_connection]})
    async with PluginHost([folder, ECHO], settings=settings) as host:
        require(host, "network_namespace")
        runtime = host.runtime_dir
        assert runtime is not None
        [neighbour] = list(runtime.glob("runner-tests-echo*.sock"))
        own = {s.plugin_id: s for s in host.status()}[TREE_ID]

        seen = {
            path: await read(host, path)
            for path in ("/proc/net/unix", "/proc/self/net/unix", "/proc/1/net/unix")
        }
        seen["a child's /proc/self/net/unix"] = await read(host, "/proc/self/net/unix", child=True)
        tcp = await read(host, "/proc/net/tcp") + await read(host, "/proc/net/tcp6")

    assert "network_namespace" in own.sandbox
    assert all(text.startswith("Num ") for text in seen.values())  # the table, read in full
    leaked = [where for where, text in seen.items() if neighbour.name in text]
    assert not leaked, f"{neighbour.name} is listed in {leaked}"
    assert f":{host_connection:04X} " not in tcp, "the host's own connection is listed"


async def test_a_plugin_asking_for_ports_still_connects_and_listens_on_the_hosts_network(
    tmp_path: Path,
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server, socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        bind_port = int(probe.getsockname()[1])
        probe.close()  # a port free a moment ago, for the plugin to listen on
        connect_port = int(server.getsockname()[1])
        folder = tree_plugin(tmp_path, {"connect": [connect_port], "bind": [bind_port]})
        async with PluginHost([folder], settings=fast_settings(tmp_path)) as host:
            require(host, "network_namespace")

            dialled = asyncio.create_task(host.invoke("dial", {"port": connect_port}))
            accepted, _ = await asyncio.to_thread(server.accept)
            with accepted:
                accepted.sendall(b"hello from the host\n")
                dial = await dialled
            listening = await host.invoke("serve_once", {"port": bind_port})
            greeting = await asyncio.to_thread(_read_line, bind_port)
            elsewhere = await host.invoke("serve_once", {"port": connect_port + 1})

    assert dial.success and dial.content == "hello from the host", dial.error_message
    assert listening.success and listening.content == str(bind_port), listening.error_message
    assert greeting == "hello from the plugin"
    assert not elsewhere.success and '"bind": [' in elsewhere.error_message


def _read_line(port: int) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        return connection.makefile("rb").readline().decode().strip()


# --- a remote runner's pin covers the whole plugin --------------------------------------


@pytest.fixture
async def remote_host(tmp_path: Path) -> AsyncIterator[PluginHost]:
    """A host accepting remote runners on loopback (default settings otherwise)."""
    async with PluginHost(settings=remote_settings(tmp_path)) as host:
        yield host


@pytest.fixture
def runners() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        stop(process)


def endpoint(host: PluginHost) -> str:
    assert host.remote is not None
    return host.remote.listener.endpoint


async def pin(tmp_path: Path, name: str, folder: Path) -> tuple[Path, str]:
    """Issue credential ``name`` pinned to ``folder`` with the CLI; its file and the digest."""
    config = tmp_path / "plughost.toml"
    config.write_text(f'[host.remote]\nkeys_dir = "{tmp_path / "keys"}"\n')
    out = tmp_path / f"{name}.json"
    args = [name, "--pin", str(folder), "--out", str(out), "--config", str(config)]
    await asyncio.to_thread(new_credential.main, args, standalone_mode=False)
    entry = json.loads(out.read_text())["plugins"][0]
    return out, entry.partition("@sha256:")[2]


def add_tool(folder: Path, name: str = "extra") -> None:
    """Give the plugin in ``folder`` one more tool (its plugin.py differs from the pinned)."""
    source = (folder / "plugin.py").read_text()
    tool = (
        f'    @Tool("{name}", brief_description="Added after the pin")\n'
        f"    async def {name}(self, **kwargs: Any) -> str:\n"
        f'        return "{name}"\n\n'
    )
    (folder / "plugin.py").write_text(
        source.replace("\ndef create_plugin", f"\n{tool}def create_plugin")
    )


def tool_names(host: PluginHost, plugin_id: str = PLUGIN_ID) -> list[str]:
    return sorted(c.name for c in host.components.by_plugin(plugin_id))


async def test_a_pinned_remote_plugin_whose_plugin_py_differs_is_refused_with_the_reason(
    remote_host: PluginHost,
    runners: list[subprocess.Popen[bytes]],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    pinned_copy = plugin_dir(tmp_path / "operator") / PLUGIN_ID
    credential, digest = await pin(tmp_path, "pinned", pinned_copy)
    changed = plugin_dir(tmp_path / "changed")
    add_tool(changed / PLUGIN_ID)

    runners.append(start_runner(endpoint(remote_host), credential, changed, tmp_path))

    assert await exited(runners[-1], timeout=30) == 3
    offered = plugin_sha256(changed / PLUGIN_ID)
    assert logged(
        caplog.records,
        f"refused plugin {PLUGIN_ID} offered by credential pinned: plugin {PLUGIN_ID} 1.0.0 "
        f"does not match the pin of credential pinned: files sha256:{digest} expected, "
        f"sha256:{offered} offered",
    )
    assert tool_names(remote_host) == []
    # The pinned copy itself joins and serves exactly what it declared.
    same = plugin_dir(tmp_path / "same")
    runners.append(start_runner(endpoint(remote_host), credential, same, tmp_path))
    await wait_until(lambda: healthy_members(remote_host) == 1, timeout=30, what="it joined")
    assert tool_names(remote_host) == ["pause"]


async def test_a_planted_bytecode_cache_does_not_stand_in_for_a_pinned_source(
    remote_host: PluginHost, runners: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    """A ``__pycache__`` is not in the digest, so the runner must never import from it."""
    pinned_copy = plugin_dir(tmp_path / "operator") / PLUGIN_ID
    credential, digest = await pin(tmp_path, "cached", pinned_copy)
    served = plugin_dir(tmp_path / "served")
    plant_bytecode(served / PLUGIN_ID)
    assert plugin_sha256(served / PLUGIN_ID) == digest  # the cache is outside the digest

    runners.append(start_runner(endpoint(remote_host), credential, served, tmp_path))

    await wait_until(lambda: healthy_members(remote_host) == 1, timeout=30, what="it joined")
    assert tool_names(remote_host) == ["pause"]


def plant_bytecode(folder: Path) -> None:
    """A valid-looking ``.pyc`` for plugin.py that declares one more tool than the source."""
    source = folder / "plugin.py"
    stat = source.stat()
    changed = folder / "changed.py"
    shutil.copy(source, changed)
    add_tool(folder, "planted")
    code = compile(source.read_text(), str(source), "exec")
    shutil.move(changed, source)  # the source is back, with its size; its time set below
    cache = Path(importlib.util.cache_from_source(str(source)))
    cache.parent.mkdir(exist_ok=True)
    header = importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little")
    header += (int(stat.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
    header += (stat.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    cache.write_bytes(header + marshal.dumps(code))
    os.utime(source, (stat.st_atime, stat.st_mtime))


async def test_a_pinned_folder_the_runner_cannot_digest_is_refused_with_its_reason(
    remote_host: PluginHost,
    runners: list[subprocess.Popen[bytes]],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    pinned_copy = plugin_dir(tmp_path / "operator") / PLUGIN_ID
    credential, _ = await pin(tmp_path, "linked", pinned_copy)
    served = plugin_dir(tmp_path / "served")
    (served / PLUGIN_ID / "helper.py").symlink_to(pinned_copy / "plugin.py")

    runners.append(start_runner(endpoint(remote_host), credential, served, tmp_path))

    assert await exited(runners[-1], timeout=30) == 3
    assert logged(caplog.records, "the runner has no digest of the folder:")
    assert logged(caplog.records, "helper.py is a symbolic link")


async def test_a_runner_naming_the_pinned_digest_gets_no_tool_the_pinned_copy_lacks(
    remote_host: PluginHost, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pinned_copy = plugin_dir(tmp_path / "operator") / PLUGIN_ID
    credential, digest = await pin(tmp_path, "liar", pinned_copy)
    offer = {"plugin_id": PLUGIN_ID, "version": "1.0.0", "plugin_sha256": digest}
    pause = {"name": "pause", "description": "", "parameters_schema": {}}
    extra = {**pause, "name": "extra"}
    liar = HandMadeRunner(remote_host, credential)
    try:
        assert (await liar.join("liar", [offer]))["body"]["accepted"] == [PLUGIN_ID]
        ready = {"loaded": [{"plugin_id": PLUGIN_ID, "tools": [pause, extra]}], "failed": []}
        assert (await liar.ask(2, "runner.ready", ready))["error"] is None

        await wait_until(
            lambda: logged(caplog.records, "which the copy of"), timeout=5, what="the refusal"
        )
        assert tool_names(remote_host) == []
        assert logged(
            caplog.records,
            f"remote runner liar could not load {PLUGIN_ID} (?): declares tool:extra, which "
            f"the copy of {PLUGIN_ID} pinned by credential liar does not declare",
        )
    finally:
        liar.close()
    honest = HandMadeRunner(remote_host, credential)
    try:
        await honest.join("honest", [offer])
        ready = {"loaded": [{"plugin_id": PLUGIN_ID, "tools": [pause]}], "failed": []}
        assert (await honest.ask(2, "runner.ready", ready))["error"] is None
        await wait_until(lambda: tool_names(remote_host) == ["pause"], timeout=5, what="join")
        # A reload of the same digest that declares more: refused, the old tools stay.
        assert (await honest.ask(3, "plugin.offer", {"offer": offer}))["error"] is None
        more = {"loaded": [{"plugin_id": PLUGIN_ID, "tools": [pause, extra]}], "failed": []}
        assert (await honest.ask(4, "plugin.reloaded", more))["error"] is None
        assert tool_names(remote_host) == ["pause"]
        assert remote_host.remote is not None
        assert "declares tool:extra" in remote_host.remote.problems[PLUGIN_ID]
    finally:
        honest.close()


# --- a remote runner's declarations get a local runner's bounds ---------------------------


def oversized(kind: str) -> dict[str, Any]:
    """A load report entry over one of the host's declaration bounds."""
    tool = {"name": "pause", "description": "", "parameters_schema": {}}
    if kind == "3,001 tools":
        return {"tools": [{**tool, "name": f"t{i}"} for i in range(3001)]}
    if kind == "a 4 MB description":
        return {"tools": [{**tool, "description": "x" * (4 << 20)}]}
    commands = [{"name": f"c{i}", "type": "COMMAND", "metadata": {}} for i in range(600)]
    return {"tools": [tool], "components": commands}


BOUNDS = {
    "3,001 tools": "declares 3001 tools, over the limit of 512 per plugin",
    "a 4 MB description": "its description is 4,194,304 characters, over the limit of 16,384",
    "600 commands": "declares 600 components, over the limit of 512 per plugin",
}


@pytest.mark.parametrize("kind", list(BOUNDS))
async def test_a_remote_ready_over_a_declaration_bound_registers_nothing_of_that_plugin(
    remote_host: PluginHost, tmp_path: Path, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    credential = issue(tmp_path / "keys", "wide", [PLUGIN_ID, OTHER_ID], tmp_path / "w.json")
    offers = [{"plugin_id": p, "version": "1.0.0"} for p in (PLUGIN_ID, OTHER_ID)]
    calm = {"name": "calm", "description": "", "parameters_schema": {}}
    runner = HandMadeRunner(remote_host, credential)
    try:
        assert sorted((await runner.join("wide", offers))["body"]["accepted"]) == sorted(
            [PLUGIN_ID, OTHER_ID]
        )
        loaded = [
            {"plugin_id": PLUGIN_ID, **oversized(kind)},
            {"plugin_id": OTHER_ID, "tools": [calm]},
        ]
        ready = {"loaded": loaded, "failed": []}
        assert (await runner.ask(2, "runner.ready", ready))["error"] is None
        await wait_until(
            lambda: tool_names(remote_host, OTHER_ID) == ["calm"], timeout=5, what="join"
        )

        assert tool_names(remote_host) == []
        assert logged(caplog.records, f"remote runner wide could not load {PLUGIN_ID}")
        assert logged(caplog.records, BOUNDS[kind])
    finally:
        runner.close()


async def test_a_remote_reload_over_a_declaration_bound_keeps_the_old_version(
    remote_host: PluginHost, tmp_path: Path
) -> None:
    credential = issue(tmp_path / "keys", "growing", [PLUGIN_ID], tmp_path / "g.json")
    offer = {"plugin_id": PLUGIN_ID, "version": "1.0.0"}
    pause = {"name": "pause", "description": "", "parameters_schema": {}}
    runner = HandMadeRunner(remote_host, credential)
    try:
        await runner.join("growing", [offer])
        ready = {"loaded": [{"plugin_id": PLUGIN_ID, "tools": [pause]}], "failed": []}
        assert (await runner.ask(2, "runner.ready", ready))["error"] is None
        await wait_until(lambda: tool_names(remote_host) == ["pause"], timeout=5, what="join")

        assert (await runner.ask(3, "plugin.offer", {"offer": offer}))["error"] is None
        grown = {"loaded": [{"plugin_id": PLUGIN_ID, **oversized("3,001 tools")}], "failed": []}
        assert (await runner.ask(4, "plugin.reloaded", grown))["error"] is None

        assert tool_names(remote_host) == ["pause"]
        assert remote_host.remote is not None
        assert BOUNDS["3,001 tools"] in remote_host.remote.problems[PLUGIN_ID]
    finally:
        runner.close()
