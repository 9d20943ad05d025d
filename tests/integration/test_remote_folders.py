"""Plugin folders added to and removed from a running remote runner, and how it watches them.

Real runner processes over CurveZMQ on loopback; every wait is on a condition.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import subprocess
from pathlib import Path

import pytest

from plughost.host import PluginHost
from plughost_sdk.models import ToolExecutionResult
from tests.integration import shared_remote
from tests.integration.remote_helpers import (
    PLUGIN_ID,
    healthy_members,
    issue,
    logged,
    pause,
    plugin_dir,
    remote_pool,
    runner_log,
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

ADDED = "tests.added"
ON_UNLOAD = """    config_model = Config

    async def on_unload(self) -> None:
        self.ctx.paths.data("unloaded.txt").write_text("gone")
"""


def other_plugin(parent: Path, plugin_id: str, tool: str) -> Path:
    """A complete plugin folder ``parent/plugin_id`` whose tools are ``tool`` and ``tool_held``."""
    folder = plugin_dir(parent, plugin_id=plugin_id) / plugin_id
    source = folder / "plugin.py"
    text = source.read_text().replace('"pause",', f'"{tool}",', 1)
    held = held_tool(f"{tool}_held", "1.0.0")
    source.write_text(text.replace("    config_model = Config\n", ON_UNLOAD + held))
    return folder


def move_in(staging: Path, root: Path) -> Path:
    """Move a finished folder into the runner's plugins folder, as an operator should."""
    return staging.rename(root / staging.name)


async def call(host: PluginHost, tool: str, seconds: float = 0) -> ToolExecutionResult:
    return await host.invoke(tool, {"seconds": seconds}, trusted=True)


async def serving(
    host: PluginHost, tmp_path: Path, runners: list[subprocess.Popen[bytes]], *extra: str
) -> Path:
    """One runner serving the test plugin (and ``extra`` plugin ids) with a credential
    allowing it, ``tests.added``; return its plugins folder.

    The credential is ``growing-`` and the test's own folder name (see :func:`own_name`).
    """
    assert host.remote is not None
    name = own_name(tmp_path, "growing")
    credential = issue(keys_of(host), name, [PLUGIN_ID, ADDED], tmp_path / "growing.json")
    plugins = plugin_dir(tmp_path / "remote-plugins")
    for plugin_id in extra:
        other_plugin(plugins, plugin_id, "wave")
    runners.append(start_runner(host.remote.listener.endpoint, credential, plugins, tmp_path))
    await wait_until(lambda: healthy_members(host) == 1, timeout=30, what="the runner joined")
    return plugins


async def test_a_folder_added_on_the_runner_is_offered_then_served_or_refused_with_a_log_line(
    host: PluginHost,
    runners: list[subprocess.Popen[bytes]],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    plugins = await serving(host, tmp_path, runners)
    staging = tmp_path / "staging"
    staging.mkdir()
    move_in(other_plugin(staging, "tests.unlisted", "unlisted"), plugins)
    growing = own_name(tmp_path, "growing")
    refusal = f"refused plugin tests.unlisted offered by credential {growing}: "
    await wait_until(lambda: logged(caplog.records, refusal), timeout=30, what="the refusal")
    assert host.components.owner("tests.unlisted") is None

    broken = other_plugin(staging, ADDED, "wave")
    source = (broken / "plugin.py").read_text()
    (broken / "plugin.py").write_text(source + "\ndef broken(:\n")
    added = move_in(broken, plugins)
    failure = f"could not load the new plugin {ADDED} ({added / 'plugin.py'}): "
    await wait_until(lambda: logged(caplog.records, failure), timeout=30, what="the failure")
    assert host.components.owner(ADDED) is None
    (added / "plugin.py").write_text(source)  # fixed: offered again
    await wait_until(
        lambda: host.components.owner(ADDED) is not None, timeout=30, what="the new plugin served"
    )
    waved, paused = await call(host, "wave"), await pause(host, 0)
    assert waved.success and waved.content == "1.0.0", waved.error_message
    assert waved.structured_content["pid"] == paused.structured_content["pid"] == runners[0].pid
    pool = remote_pool(host, ADDED)
    assert pool is not None and len(pool.healthy()) == 1
    assert host.remote is not None and host.remote.versions[ADDED] == "1.0.0"
    row = status_of(host, ADDED)
    assert row.version == "1.0.0" and row.state == "loaded" and row.error == "", row
    assert host.components.owner("tests.unlisted") is None


async def test_a_folder_removed_on_the_runner_unloads_after_its_calls_and_its_tools_go(
    host: PluginHost, runners: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    plugins = await serving(host, tmp_path, runners, ADDED)
    assert "by filesystem events" in runner_log(tmp_path, runners[0])  # logged before ready
    await wait_until(
        lambda: host.components.owner(ADDED) is not None, timeout=10, what="both plugins served"
    )
    pool = remote_pool(host, ADDED)
    assert pool is not None
    release = tmp_path / "release"
    hold = {"release": str(release)}
    slow = [asyncio.create_task(host.invoke("wave_held", hold, trusted=True)) for _ in range(2)]
    await wait_until(lambda: pool.inflight == 2, timeout=5, what="slow calls in flight")
    parked = shutil.move(plugins / ADDED, tmp_path / "parked")  # the operator removes it
    await wait_until(
        lambda: host.components.owner(ADDED) is None, timeout=30, what="its tools gone"
    )
    assert not any(task.done() for task in slow)  # removed while they run
    unloaded = tmp_path / "runner-data" / "data" / ADDED / "unloaded.txt"
    assert not unloaded.exists()  # it waits for its calls
    release.touch()
    finished = await asyncio.gather(*slow)
    assert [r.content for r in finished] == ["1.0.0"] * 2, [r.error_message for r in finished]
    await wait_until(unloaded.exists, timeout=10, what="its on_unload ran after its calls")
    still = await pause(host, 0)
    assert still.success and still.content == "1.0.0"  # the other plugin serves on
    assert host.remote is not None and ADDED not in host.remote.pools
    assert ADDED not in {row.plugin_id for row in host.status()}

    shutil.move(parked, plugins / ADDED)  # put back: offered and served again
    await wait_until(
        lambda: host.components.owner(ADDED) is not None, timeout=30, what="served again"
    )
    again = await call(host, "wave")
    assert again.success and again.structured_content["pid"] == runners[0].pid

    (plugins / ADDED).rename(plugins / "renamed")  # renamed in place: it leaves, then returns
    added_again = f"plugin {ADDED} 1.0.0 added from {plugins.resolve() / 'renamed'}"
    await wait_until(
        lambda: added_again in runner_log(tmp_path, runners[0]), timeout=30, what="re-added"
    )
    # Logged once the host had taken the removal, before the runner reports the new load.
    await wait_until(
        lambda: host.components.owner(ADDED) is not None, timeout=10, what="served renamed"
    )
    renamed = await call(host, "wave")
    assert renamed.success, renamed.error_message


async def watched(
    host: PluginHost,
    tmp_path: Path,
    runners: list[subprocess.Popen[bytes]],
    options: tuple[str, ...],
    env: dict[str, str] | None,
) -> tuple[subprocess.Popen[bytes], Path]:
    """A joined runner started with ``options`` and ``env``; it and its plugins folder."""
    assert host.remote is not None
    name = own_name(tmp_path, "watched")
    credential = issue(keys_of(host), name, [PLUGIN_ID], tmp_path / "watched.json")
    plugins = plugin_dir(tmp_path / "remote-plugins")
    endpoint = host.remote.listener.endpoint
    runner = start_runner(endpoint, credential, plugins, tmp_path, extra=options, env=env)
    runners.append(runner)
    await wait_until(lambda: healthy_members(host) == 1, timeout=30, what="the runner joined")
    return runner, plugins


@pytest.mark.parametrize(
    ("options", "env"),
    [(("--watch-poll",), None), ((), {"PLUGHOST_RUNNER_WATCH": "poll"})],
    ids=["flag", "env"],
)
async def test_with_polling_on_an_edit_is_seen(
    host: PluginHost,
    runners: list[subprocess.Popen[bytes]],
    tmp_path: Path,
    options: tuple[str, ...],
    env: dict[str, str] | None,
) -> None:
    runner, plugins = await watched(host, tmp_path, runners, options, env)
    # Logged before its ready report, so before it joined.
    assert "by polling every 500 ms" in runner_log(tmp_path, runner)
    write_plugin(plugins / PLUGIN_ID, "1.1.0")
    await wait_until(
        lambda: host.remote is not None and host.remote.versions.get(PLUGIN_ID) == "1.1.0",
        timeout=30,
        what="the edit seen by polling",
    )
    result = await pause(host, 0)
    assert result.success and result.content == "1.1.0"


@pytest.mark.parametrize(
    ("options", "env"),
    [(("--no-watch",), None), ((), {"PLUGHOST_RUNNER_WATCH": "off"})],
    ids=["flag", "env"],
)
async def test_watching_can_be_turned_off_and_the_runner_says_so(
    host: PluginHost,
    runners: list[subprocess.Popen[bytes]],
    tmp_path: Path,
    options: tuple[str, ...],
    env: dict[str, str] | None,
) -> None:
    runner, plugins = await watched(host, tmp_path, runners, options, env)
    # Its ready report went after its watch would have started: the log is complete here.
    text = runner_log(tmp_path, runner)
    assert "not watching --plugins" in text
    assert "watching " + str(plugins) not in text
