"""What a plugin folder holds cannot make the host read elsewhere, block, or stop (real runners).

The host reads ``_manifest.json`` and ``config.toml`` outside any sandbox. A link
to a neighbour's configuration (or the host's own), a hard link, a FIFO, a
socket or a device in their place, a file of 20 MB or nested 100,000 deep:
each fails only the plugin that ships it, with the folder, the file and the
reason, while its neighbours load and serve, and no byte of another file
reaches the plugin.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import stat
import threading
import time
import tomllib
from collections.abc import AsyncIterator, Awaitable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TypeVar

import pytest

from plughost.events import EventKind
from plughost.host import PluginHost
from tests.conftest import TEST_PLUGINS, HostFactory, fast_settings
from tests.fault_injection import EventLog
from tests.integration.test_hot_reload import watch_is_live

SECRET = "neighbour-secret-5c2e"
HOST_SECRET = "Bearer host-upstream-token-91ab"
MIRROR_ID = "tests.config_mirror"
DEEP = 100_000
T = TypeVar("T")


def _plant(root: Path) -> Path:
    """A victim with a secret in its config, a bystander, and the attacker (config_mirror)."""
    plugins = root / "plugins"
    shutil.copytree(TEST_PLUGINS / "echo", plugins / "victim")
    (plugins / "victim" / "config.toml").write_text(f'api_key = "{SECRET}"\n')
    shutil.copytree(TEST_PLUGINS / "alpha", plugins / "bystander")
    shutil.copytree(TEST_PLUGINS / "config_mirror", plugins / "attacker")
    return plugins


def _attacker_error(host: PluginHost, plugins: Path) -> str:
    """The attacker's row: failed, no tools, and the error the operator reads."""
    folder = str((plugins / "attacker").resolve())
    (row,) = [r for r in host.status() if r.path == folder or r.plugin_id == MIRROR_ID]
    assert row.state == "failed" and not row.tools, row
    assert folder in row.error  # the plugin folder is named
    return row.error


async def _attacker_learns_nothing(host: PluginHost) -> None:
    """The attacker's tool is not served, and no answer carries the neighbour's secret."""
    stolen = await host.invoke("mirror_config", {})
    assert not stolen.success and stolen.error_code == "tool_not_found"
    assert SECRET not in f"{stolen.content} {stolen.error_message}"


async def _neighbours_serve(host: PluginHost) -> None:
    assert (await host.invoke("lookup", {})).success
    own = await host.invoke("config_value", {})
    assert own.success and own.structured_content["config"]["api_key"] == SECRET  # its own


async def test_a_config_linked_to_a_neighbours_config_is_refused_and_its_secret_stays_there(
    tmp_path: Path, make_host: HostFactory
) -> None:
    plugins = _plant(tmp_path)
    (plugins / "attacker" / "config.toml").unlink()
    (plugins / "attacker" / "config.toml").symlink_to("../victim/config.toml")

    async with make_host([plugins]) as host:
        error = _attacker_error(host, plugins)
        await _attacker_learns_nothing(host)
        await _neighbours_serve(host)

    assert "config.toml is a symbolic link (to ../victim/config.toml)" in error
    assert "replace the link with the file itself" in error


async def test_a_config_linked_to_the_hosts_own_file_is_refused(
    tmp_path: Path, make_host: HostFactory
) -> None:
    plughost_toml = tmp_path / "plughost.toml"
    plughost_toml.write_text(f'[mcp.servers.up.headers]\nAuthorization = "{HOST_SECRET}"\n')
    plugins = _plant(tmp_path)
    (plugins / "attacker" / "config.toml").unlink()
    (plugins / "attacker" / "config.toml").symlink_to(plughost_toml)

    async with make_host([plugins]) as host:
        error = _attacker_error(host, plugins)
        stolen = await host.invoke("mirror_config", {})
        await _neighbours_serve(host)

    assert f"config.toml is a symbolic link (to {plughost_toml})" in error
    assert not stolen.success and HOST_SECRET not in f"{stolen.content} {stolen.error_message}"


async def test_a_manifest_linked_from_another_folder_is_refused(
    tmp_path: Path, make_host: HostFactory
) -> None:
    plugins = _plant(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    (plugins / "attacker").rename(elsewhere)
    (plugins / "attacker").mkdir()
    shutil.copy(elsewhere / "plugin.py", plugins / "attacker" / "plugin.py")
    (plugins / "attacker" / "_manifest.json").symlink_to(elsewhere / "_manifest.json")

    async with make_host([plugins]) as host:
        error = _attacker_error(host, plugins)
        await _neighbours_serve(host)

    assert "_manifest.json is a symbolic link" in error


async def test_a_hard_link_to_a_neighbours_config_is_refused_under_both_names(
    tmp_path: Path, make_host: HostFactory
) -> None:
    plugins = _plant(tmp_path)
    (plugins / "attacker" / "config.toml").unlink()
    os.link(plugins / "victim" / "config.toml", plugins / "attacker" / "config.toml")

    async with make_host([plugins]) as host:
        error = _attacker_error(host, plugins)
        await _attacker_learns_nothing(host)
        victim = str((plugins / "victim").resolve())
        (victim_row,) = [r for r in host.status() if r.path == victim]
        bystander = await host.invoke("lookup", {})

    assert "config.toml has 2 hard links" in error and "give the plugin a copy" in error
    # Which name is the original cannot be told, so the victim is refused too, and says why.
    assert victim_row.state == "failed" and "config.toml has 2 hard links" in victim_row.error
    assert bystander.success


async def test_an_operators_link_to_a_plugin_folder_still_loads(
    tmp_path: Path, make_host: HostFactory
) -> None:
    plugins = _plant(tmp_path)
    (plugins / "attacker").rename(tmp_path / "installed")
    (plugins / "attacker").symlink_to(tmp_path / "installed", target_is_directory=True)

    async with make_host([plugins]) as host:
        mirrored = await host.invoke("mirror_config", {})

    assert mirrored.success and mirrored.structured_content["config"] == {
        "mirror": {"word": "mine"}
    }


@contextmanager
def _fifo_watch(fifo: Path) -> Iterator[list[bool]]:
    """Record whether anyone opened ``fifo`` to read it, and let such a reader go at once.

    Opening a FIFO for writing without blocking succeeds only while a reader has
    it open; that open also releases a reader blocked in its own ``open``.
    """
    opened: list[bool] = []
    stop = threading.Event()

    def writer() -> None:
        while not stop.wait(0.001):
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                opened.append(True)
            except OSError:
                pass

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        yield opened
    finally:
        stop.set()
        thread.join()


@asynccontextmanager
async def _started(plugins: Path, tmp_path: Path) -> AsyncIterator[PluginHost]:
    host = PluginHost([plugins], settings=fast_settings(tmp_path))
    try:
        async with asyncio.timeout(60):  # the deadline: a blocked start fails here
            await host.start()
        yield host
    finally:
        await host.aclose()


@pytest.mark.parametrize("name", ["config.toml", "_manifest.json"])
async def test_a_fifo_in_place_of_a_plugin_file_is_refused_without_opening_it(
    tmp_path: Path, name: str
) -> None:
    plugins = _plant(tmp_path)
    (plugins / "attacker" / name).unlink()
    os.mkfifo(plugins / "attacker" / name)

    with _fifo_watch(plugins / "attacker" / name) as opened:
        async with _started(plugins, tmp_path) as host:
            error = _attacker_error(host, plugins)
            await _neighbours_serve(host)

    assert f"{name} is a named pipe (FIFO), not a regular file" in error
    assert opened == [], "the host opened the FIFO"


def _make_special(path: Path, kind: str) -> None:
    if kind == "socket":
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(str(path))
        return
    try:  # /dev/null's numbers: harmless to read, so a host that opened it fails the test
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD")


@pytest.mark.parametrize(("kind", "said"), [("socket", "a socket"), ("device", "a character")])
async def test_a_socket_or_device_named_config_toml_is_refused(
    tmp_path: Path, kind: str, said: str
) -> None:
    plugins = _plant(tmp_path)
    (plugins / "attacker" / "config.toml").unlink()
    _make_special(plugins / "attacker" / "config.toml", kind)

    async with _started(plugins, tmp_path) as host:
        error = _attacker_error(host, plugins)
        await _neighbours_serve(host)

    assert f"config.toml is {said}" in error and "not a regular file" in error


def _deep_manifest(folder: Path) -> None:
    manifest = json.loads((folder / "_manifest.json").read_text())
    text = json.dumps(manifest)[:-1] + ', "i18n": {"x": ' + "[" * DEEP + "]" * DEEP + "}}"
    (folder / "_manifest.json").write_text(text)


@pytest.mark.parametrize("name", ["config.toml", "_manifest.json"])
async def test_a_file_nested_100000_deep_fails_only_its_plugin(
    tmp_path: Path, make_host: HostFactory, name: str
) -> None:
    plugins = _plant(tmp_path)
    if name == "config.toml":
        (plugins / "attacker" / name).write_text("deep = " + "[" * DEEP + "]" * DEEP + "\n")
    else:
        _deep_manifest(plugins / "attacker")

    async with make_host([plugins]) as host:
        error = _attacker_error(host, plugins)
        await _neighbours_serve(host)

    assert f"{name}: nested deeper than 64 levels" in error


async def test_a_config_nested_deep_by_dotted_keys_fails_only_its_plugin(
    tmp_path: Path, make_host: HostFactory
) -> None:
    plugins = _plant(tmp_path)
    (plugins / "attacker" / "config.toml").write_text("[" + ".".join(["a"] * DEEP) + "]\n")

    async with make_host([plugins]) as host:
        error = _attacker_error(host, plugins)
        await _neighbours_serve(host)

    assert "nested deeper than 64 levels" in error


async def test_a_20_mb_config_is_refused_with_its_size_unread(
    tmp_path: Path, make_host: HostFactory
) -> None:
    plugins = _plant(tmp_path)
    with (plugins / "attacker" / "config.toml").open("r+b") as handle:
        handle.truncate(20 * 1024 * 1024)

    async with make_host([plugins]) as host:
        error = _attacker_error(host, plugins)
        await _neighbours_serve(host)

    assert "config.toml is 20,971,520 bytes, over the limit of 1 MiB (1,048,576 bytes)" in error


async def test_a_deep_manifest_saved_while_serving_keeps_the_old_version_and_the_watch(
    tmp_path: Path, make_host: HostFactory
) -> None:
    plugins = _plant(tmp_path)
    attacker = plugins / "attacker"
    events = EventLog()
    async with make_host([plugins]) as host:
        host.events.add_callback(events)
        watch = asyncio.create_task(host.watch())
        await watch_is_live(host, plugins)

        _deep_manifest(attacker)
        failed = await events.next(EventKind.RELOAD_FAILED, MIRROR_ID)
        still = await host.invoke("mirror_config", {})

        manifest = json.loads((TEST_PLUGINS / "config_mirror" / "_manifest.json").read_text())
        (attacker / "_manifest.json").write_text(json.dumps({**manifest, "version": "1.0.1"}))
        await events.next(EventKind.RELOAD_SUCCEEDED, MIRROR_ID)
        (row,) = [r for r in host.status() if r.plugin_id == MIRROR_ID]
        watching = not watch.done()
        watch.cancel()
        with pytest.raises(asyncio.CancelledError):
            await watch

    assert "nested deeper than 64 levels" in failed.message
    assert still.success  # the old version kept serving
    assert row.version == "1.0.1" and row.state == "loaded"
    assert watching


async def _worst_gap(done: asyncio.Event, since: float) -> float:
    """The longest the loop went without running this task, from ``since`` until ``done``."""
    worst, last = 0.0, since
    while not done.is_set():
        await asyncio.sleep(0.001)
        now = time.perf_counter()
        worst, last = max(worst, now - last), now
    return worst


async def _stall_of(work: Awaitable[T]) -> tuple[T, float]:
    """What ``work`` returns, and the longest the loop went unresponsive meanwhile."""
    done = asyncio.Event()
    ticker = asyncio.create_task(_worst_gap(done, time.perf_counter()))  # counts from now
    try:
        return await work, await _stop(ticker, done)
    except BaseException:
        await _stop(ticker, done)
        raise


async def _stop(ticker: asyncio.Task[float], done: asyncio.Event) -> float:
    done.set()
    return await ticker


async def _stalls_serving(root: Path, text: str, edited: str) -> tuple[dict[str, float], object]:
    """The loop's longest stalls at start, reload and a config edit, and the mirrored config."""
    plugins = _plant(root)
    (plugins / "attacker" / "config.toml").write_text(text)
    host = PluginHost([plugins], settings=fast_settings(root))
    try:
        _, at_start = await _stall_of(host.start())
        reloaded, at_reload = await _stall_of(host.reload_plugin(MIRROR_ID))
        (plugins / "attacker" / "config.toml").write_text(edited)
        updated, at_edit = await _stall_of(host.reloader.update_config(MIRROR_ID))
        mirrored = await host.invoke("mirror_config", {})
    finally:
        await host.aclose()
    assert reloaded and updated and mirrored.success, mirrored.error_message
    assert mirrored.structured_content is not None
    stalls = {"start": at_start, "reload": at_reload, "edit": at_edit}
    return stalls, mirrored.structured_content["config"]["text"]


async def test_a_large_allowed_config_is_parsed_without_stalling_the_loop(
    tmp_path: Path,
) -> None:
    # Just under 1 MiB of escapes in one string: slow for tomllib, one value for the rest.
    text = 'text = "' + "\\n" * 500_000 + '"\n'
    started = time.perf_counter()
    tomllib.loads(text)
    parse = time.perf_counter() - started  # what the loop would stall for, parsing it itself

    # The same steps with a one-line config: what the host's own work stalls the loop for
    # on this machine now, so a loaded machine's stalls are not taken for the parse's.
    baseline, _ = await _stalls_serving(tmp_path / "small", 'text = "\\n"\n', 'text = "\\t"\n')
    stalls, mirrored = await _stalls_serving(
        tmp_path / "large", text, text.replace("\\n", "\\t", 1)
    )

    assert mirrored == "\t" + "\n" * 499_999
    # Parsed on the loop, each step would stall it about as long as the parse takes.
    over = {step: stalls[step] - baseline[step] for step in stalls}
    assert max(over.values()) < parse / 2, (
        f"the loop stalled {', '.join(f'{k} {v * 1000:.0f} ms' for k, v in stalls.items())} "
        f"(with a one-line config: "
        f"{', '.join(f'{k} {v * 1000:.0f} ms' for k, v in baseline.items())}), "
        f"against {parse * 1000:.0f} ms to parse the config"
    )


async def test_a_linked_folder_in_a_plugin_is_never_watched_and_real_ones_are(
    tmp_path: Path, make_host: HostFactory
) -> None:
    plugins = _plant(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "deeper").mkdir(parents=True)
    (plugins / "attacker" / "docs").symlink_to(elsewhere, target_is_directory=True)
    events = EventLog()
    async with make_host([plugins]) as host:
        host.events.add_callback(events)
        watch = asyncio.create_task(host.watch())
        await watch_is_live(host, plugins)

        # Written before the bystander's edit: had it been watched, its event came first.
        (elsewhere / "deeper" / "changed.txt").write_text("not the plugin's")
        (plugins / "bystander" / "notes.txt").write_text("an edit")
        await events.next(EventKind.RELOAD_SUCCEEDED, "tests.alpha")
        through_link = events.of(MIRROR_ID, {EventKind.RELOAD_STARTED})

        (plugins / "attacker" / "real").mkdir()  # a folder made while watching is watched
        await events.next(EventKind.RELOAD_SUCCEEDED, MIRROR_ID)
        (plugins / "attacker" / "real" / "data.txt").write_text("the plugin's own")
        await events.next(EventKind.RELOAD_SUCCEEDED, MIRROR_ID)
        watch.cancel()
        with pytest.raises(asyncio.CancelledError):
            await watch

    assert through_link == []
