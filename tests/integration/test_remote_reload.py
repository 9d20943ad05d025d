"""Hot reload on a remote runner's machine, reported to the host, over loopback TCP."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import subprocess
from pathlib import Path

import pytest

from plughost.host import PluginHost
from plughost.remote.member import RemoteRunner
from plughost_sdk import wire
from tests.integration import shared_remote
from tests.integration.remote_helpers import (
    PLUGIN_ID,
    healthy_members,
    issue,
    logged,
    pause,
    plugin_dir,
    remote_pool,
    remote_settings,
    start_runner,
    status_of,
)
from tests.integration.shared_remote import held_tool, keys_of, own_name
from tests.integration.test_replicas import write_plugin
from tests.waiting import wait_until

pytestmark = pytest.mark.asyncio(loop_scope="module")  # the loop the shared host runs on
# Every test takes ``host`` from one shared host, given back clean (see shared_remote).
shared_host = shared_remote.shared_remote_host
host = shared_remote.host_for_the_test

ON_UNLOAD = """    config_model = Config

    async def on_unload(self) -> None:
        self.ctx.paths.data("unloaded.txt").write_text("1.0.0")
""" + held_tool("hold", "1.0.0")


async def joined(
    host: PluginHost, tmp_path: Path, allow: str, runners: list[subprocess.Popen[bytes]]
) -> Path:
    """Start one runner serving version 1.0.0 under ``allow``; return its plugin folder.

    Its credential is ``editable-`` and the test's own folder name (see :func:`own_name`).
    """
    assert host.remote is not None
    name = own_name(tmp_path, "editable")
    credential = issue(keys_of(host), name, [allow], tmp_path / "editable.json")
    plugins = plugin_dir(tmp_path / "remote-plugins")
    source = plugins / PLUGIN_ID / "plugin.py"
    source.write_text(source.read_text().replace("    config_model = Config\n", ON_UNLOAD))
    runners.append(start_runner(host.remote.listener.endpoint, credential, plugins, tmp_path))
    await wait_until(lambda: healthy_members(host) == 1, timeout=30, what="the runner joined")
    return plugins / PLUGIN_ID


async def test_an_edit_on_the_runner_replaces_the_plugin_and_calls_in_flight_finish(
    host: PluginHost, runners: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    folder = await joined(host, tmp_path, PLUGIN_ID, runners)
    before = await pause(host, 0)
    assert before.success and before.content == "1.0.0"
    release = tmp_path / "release"
    hold = {"release": str(release)}
    slow = [asyncio.create_task(host.invoke("hold", hold, trusted=True)) for _ in range(3)]
    pool = remote_pool(host)
    assert pool is not None
    await wait_until(lambda: pool.inflight == 3, timeout=5, what="slow calls in flight")
    write_plugin(folder, "1.1.0")  # the operator edits the plugin on the runner's machine
    assert host.remote is not None
    await wait_until(
        lambda: host.remote is not None and host.remote.versions.get(PLUGIN_ID) == "1.1.0",
        timeout=30,
        what="the new version reported",
    )
    assert not any(call.done() for call in slow)  # switched while they run
    unloaded = tmp_path / "runner-data" / "data" / PLUGIN_ID / "unloaded.txt"
    assert not unloaded.exists()  # the old version waits for its calls
    after = await pause(host, 0)
    assert after.success and after.content == "1.1.0"
    assert after.structured_content["pid"] == before.structured_content["pid"]  # no restart
    assert not any(call.done() for call in slow)  # held until released
    assert not unloaded.exists()
    release.touch()
    finished = await asyncio.gather(*slow)
    assert [r.content for r in finished] == ["1.0.0"] * 3, [r.error_message for r in finished]
    await wait_until(unloaded.exists, timeout=10, what="the old version's on_unload ran")
    status = status_of(host)
    assert status.version == "1.1.0" and status.error == "" and status.state == "loaded"


async def test_a_broken_edit_keeps_the_old_version_serving_and_is_reported_with_the_reason(
    host: PluginHost,
    runners: list[subprocess.Popen[bytes]],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    folder = await joined(host, tmp_path, f"{PLUGIN_ID}==1.0.0", runners)
    source = (folder / "plugin.py").read_text()

    async def reported(text: str) -> None:
        await wait_until(lambda: text in status_of(host).error, timeout=30, what=repr(text))
        result = await pause(host, 0)
        assert result.success and result.content == "1.0.0", result.error_message
        assert status_of(host).version == "1.0.0"

    (folder / "plugin.py").write_text(source + "\ndef broken(:\n")
    await reported("syntax error")
    assert str(folder / "plugin.py") in status_of(host).error
    assert logged(caplog.records, f"could not reload {PLUGIN_ID}")

    raising = source.replace(
        "class Replicated(Plugin):",
        "class Replicated(Plugin):\n    async def on_load(self) -> None:\n"
        "        raise RuntimeError('no GPU here')\n",
    )
    (folder / "plugin.py").write_text(raising)
    await reported("on_load raised RuntimeError: no GPU here")

    (folder / "plugin.py").write_text(source)
    manifest = json.loads((folder / "_manifest.json").read_text())
    (folder / "_manifest.json").write_text(json.dumps({**manifest, "version": "2.0.0"}))
    name = own_name(tmp_path, "editable")
    await reported(f"plugin {PLUGIN_ID} 2.0.0 is not allowed for credential {name}")
    assert logged(caplog.records, f"refused the new version of plugin {PLUGIN_ID}")

    (folder / "_manifest.json").write_text("{ not json")
    await reported("_manifest.json")


async def test_a_restarted_host_gets_its_remote_runners_back_without_restarting_them(
    tmp_path: Path, runners: list[subprocess.Popen[bytes]], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    credential = issue(tmp_path / "keys", "steady", [PLUGIN_ID], tmp_path / "steady.json")
    plugins = plugin_dir(tmp_path / "remote-plugins")
    async with PluginHost(settings=remote_settings(tmp_path)) as first:
        assert first.remote is not None
        address = first.remote.listener.endpoint
        runners.append(start_runner(address, credential, plugins, tmp_path))
        await wait_until(lambda: healthy_members(first) == 1, timeout=30, what="the runner joined")
        before = await pause(first, 0)
        assert before.success
    # A new host on the same address and keys_dir: the runner's credential is still valid.
    async with PluginHost(settings=remote_settings(tmp_path, listen=address)) as second:
        await wait_until(lambda: healthy_members(second) == 1, timeout=30, what="it rejoined")
        after = await pause(second, 0)
        assert after.success, after.error_message
        assert after.structured_content["pid"] == before.structured_content["pid"]
        assert runners[0].poll() is None  # the same process, never restarted
        assert logged(caplog.records, "credential steady that sent runner.heartbeat")


async def test_a_config_edit_on_the_runners_machine_reloads_the_plugin_there(
    host: PluginHost, runners: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    folder = await joined(host, tmp_path, PLUGIN_ID, runners)
    assert (await pause(host, 0)).structured_content["greeting"] is None  # no config.toml yet
    (folder / "config.toml").write_text('greeting = "hello from the GPU box"\n')

    async def greeting() -> bool:
        result = await pause(host, 0)
        return result.structured_content["greeting"] == "hello from the GPU box"

    await wait_until(greeting, timeout=30, what="the runner's config.toml is used")


async def test_a_rejoined_runner_takes_the_new_hosts_heartbeat_interval_and_limits(
    tmp_path: Path, runners: list[subprocess.Popen[bytes]]
) -> None:
    credential = issue(tmp_path / "keys", "tuned", [PLUGIN_ID], tmp_path / "tuned.json")
    plugins = plugin_dir(tmp_path / "remote-plugins")
    slow = remote_settings(tmp_path, heartbeat_interval=1.0, limits={"open_files": 400})
    async with PluginHost(settings=slow) as first:
        assert first.remote is not None
        address = first.remote.listener.endpoint
        runners.append(start_runner(address, credential, plugins, tmp_path))
        await wait_until(lambda: healthy_members(first) == 1, timeout=30, what="the runner joined")
        assert open_files_limit(runners[0].pid) == 400
    fast = remote_settings(
        tmp_path, listen=address, heartbeat_interval=0.1, limits={"open_files": 300}
    )
    async with PluginHost(settings=fast) as second:
        assert second.remote is not None
        listener = second.remote.listener
        beats: list[float] = []
        dispatch = listener._dispatch

        def counting(runner: RemoteRunner, envelope: wire.Envelope) -> None:
            if envelope["method"] == "runner.heartbeat":
                beats.append(asyncio.get_running_loop().time())
            dispatch(runner, envelope)

        listener._dispatch = counting  # type: ignore[method-assign]
        await wait_until(lambda: healthy_members(second) == 1, timeout=30, what="it rejoined")
        start = len(beats)
        # At the first host's 1 s these 20 beats would take 20 s.
        await wait_until(lambda: len(beats) >= start + 20, timeout=10, what="20 beats")
        gaps = [b - a for a, b in itertools.pairwise(beats[start:])]
        assert sum(gaps) / len(gaps) < 0.5, gaps
        assert open_files_limit(runners[0].pid) == 300
        assert runners[0].poll() is None  # the same process
    # A limit, once lowered, is not raised again by an unprivileged runner.
    loose = remote_settings(tmp_path, listen=address, limits={"open_files": 400})
    async with PluginHost(settings=loose) as third:
        await wait_until(lambda: healthy_members(third) == 1, timeout=30, what="it rejoined")
        assert open_files_limit(runners[0].pid) == 300


def open_files_limit(pid: int) -> int:
    """The soft open-files limit of process ``pid``, from /proc."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError(f"no open-files limit for {pid}")
