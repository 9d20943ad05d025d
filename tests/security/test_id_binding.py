"""A plugin id is bound to its folder: no new folder or edited manifest takes it, or its data.

Real hosts with the default configuration start real runners over folders written
here. Each plugin's one tool answers with a mark baked into its folder's code and
what its data directory holds, so a takeover would show as the wrong mark or a
leaked secret; each refusal is checked as an operator sees it: the event, both
folders named, the fix, and the owner and its neighbours serving on.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from plughost import reloader
from plughost.events import EventKind, LifecycleEvent
from plughost.host import PluginHost
from plughost.plugins.bindings import BINDINGS_FILE
from plughost.plugins.source import PluginSource, read_plugin
from plughost.plugins.watcher import ChangeKind, PluginChange
from plughost.remote.keys import RemoteKeyStore
from plughost.settings import HostSettings
from tests.conftest import fast_settings
from tests.integration.remote_helpers import (
    PLUGIN_ID,
    exited,
    healthy_members,
    issue,
    listening_at,
    logged,
    plugin_dir,
    remote_settings,
    runner_log,
    start_runner,
    stop,
)
from tests.security.sandboxed import require
from tests.waiting import wait_until

WEATHER = "author.weather"
CLIMATE = "author.climate"
SECRET = "weather-secret-41c9"

_PLUGIN = """
from typing import Any

from plughost_sdk import Plugin, Tool
from plughost_sdk.types import ToolParameterInfo, ToolParamType

MARK = {mark!r}


class Probe(Plugin):
    @Tool({tool!r}, brief_description="Which folder serves this id, and what its data holds")
    async def whoami(self, **kwargs: Any) -> dict[str, Any]:
        secret = self.ctx.paths.data("secret.txt")
        held = secret.read_text() if secret.exists() else ""
        return {{"content": MARK, "mark": MARK, "secret": held}}

    @Tool(
        {scribble!r},
        brief_description="Try to write a file anywhere",
        parameters=[ToolParameterInfo(name="path", param_type=ToolParamType.STRING)],
    )
    async def scribble(self, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            with open(path, "w") as handle:
                handle.write("{{}}")
        except OSError as exc:
            return {{"content": "refused", "written": False, "error": str(exc)}}
        return {{"content": "written", "written": True, "error": ""}}


def create_plugin() -> Probe:
    return Probe()
"""


def _tool(plugin_id: str) -> str:
    return "whoami_" + re.sub(r"\W", "_", plugin_id.lower())


def _write(folder: Path, plugin_id: str, mark: str) -> Path:
    """A plugin folder claiming ``plugin_id``, whose tool answers ``mark``."""
    folder.mkdir(parents=True, exist_ok=True)
    tool = _tool(plugin_id)
    code = _PLUGIN.format(mark=mark, tool=tool, scribble=tool.replace("whoami", "scribble"))
    (folder / "plugin.py").write_text(code)
    _set_id(folder, plugin_id)
    return folder.resolve()


def _set_id(folder: Path, plugin_id: str) -> None:
    manifest = {
        "manifest_version": 2,
        "id": plugin_id,
        "version": "1.0.0",
        "name": folder.name,
        "author": {"name": "plughost tests"},
    }
    (folder / "_manifest.json").write_text(json.dumps(manifest))


def _settings(tmp_path: Path) -> HostSettings:
    return fast_settings(tmp_path)


def _plant_secret(settings: HostSettings, plugin_id: str) -> None:
    data = settings.data_dir / plugin_id
    data.mkdir(parents=True, exist_ok=True)
    (data / "secret.txt").write_text(SECRET)


async def _whoami(host: PluginHost, plugin_id: str) -> dict[str, Any]:
    result = await host.invoke(_tool(plugin_id), {})
    assert result.success, result.error_message
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def _events(host: PluginHost, kind: EventKind) -> list[LifecycleEvent]:
    return [e for e in host.events.history() if e.kind is kind]


def _refusal_of(host: PluginHost, folder: Path) -> LifecycleEvent:
    """The one ``plugin.failed`` event of ``folder``, at stage ``duplicate``."""
    (event,) = [
        e
        for e in _events(host, EventKind.PLUGIN_FAILED)
        if e.details.get("path") == str(folder) and e.details.get("stage") == "duplicate"
    ]
    return event


def _pids(host: PluginHost, *plugin_ids: str) -> list[int | None]:
    return [r.pid if (r := host.runner_for(p)) else None for p in plugin_ids]


async def test_a_newcomer_sorting_first_cannot_take_an_installed_plugins_id_or_data(
    tmp_path: Path,
) -> None:
    settings = _settings(tmp_path)
    installed = _write(tmp_path / "plugins" / "weather", WEATHER, "installed")
    _write(tmp_path / "plugins" / "climate", CLIMATE, "neighbour")
    _plant_secret(settings, WEATHER)
    async with PluginHost([tmp_path / "plugins"], settings=settings) as host:
        assert (await _whoami(host, WEATHER))["mark"] == "installed"

    newcomer = _write(tmp_path / "plugins" / "aaa-weather", WEATHER, "newcomer")
    async with PluginHost([tmp_path / "plugins"], settings=settings) as host:
        served = await _whoami(host, WEATHER)
        neighbour = await _whoami(host, CLIMATE)
        refusal = _refusal_of(host, newcomer)
        row = next(s for s in host.status() if s.path == str(newcomer))

    assert served == {"content": "installed", "mark": "installed", "secret": SECRET}
    assert neighbour["mark"] == "neighbour"
    assert refusal.plugin_id == WEATHER
    reason = refusal.details["reason"]
    assert f"belongs to {installed}" in reason and f"{newcomer} claims it too" in reason
    assert f"give {newcomer} another id in its _manifest.json" in reason
    assert row.state == "failed" and "duplicate" in row.error  # a row of its own stays


async def test_two_claimants_at_a_first_start_are_both_refused_and_neighbours_load(
    tmp_path: Path,
) -> None:
    settings = _settings(tmp_path)
    first = _write(tmp_path / "plugins" / "a-weather", WEATHER, "first")
    second = _write(tmp_path / "plugins" / "b-weather", WEATHER, "second")
    _write(tmp_path / "plugins" / "climate", CLIMATE, "neighbour")

    async with PluginHost([tmp_path / "plugins"], settings=settings) as host:
        neighbour = await _whoami(host, CLIMATE)
        refusals = [_refusal_of(host, folder) for folder in (first, second)]
        result = await host.invoke(_tool(WEATHER), {})
        serving = host.runner_for(WEATHER)

    assert neighbour["mark"] == "neighbour"
    for refusal in refusals:
        assert f"none owns it yet: {first}, {second}" in refusal.details["reason"]
    assert not result.success and serving is None
    bound = json.loads((settings.data_dir / BINDINGS_FILE).read_text())["ids"]
    assert WEATHER not in bound and CLIMATE in bound


@pytest.mark.parametrize("taken", [CLIMATE, "Author.Climate"])
async def test_a_manifest_edited_to_a_neighbours_id_is_refused_and_both_keep_serving(
    tmp_path: Path, taken: str
) -> None:
    settings = _settings(tmp_path)
    weather = _write(tmp_path / "plugins" / "weather", WEATHER, "weather")
    climate = _write(tmp_path / "plugins" / "climate", CLIMATE, "climate")
    _plant_secret(settings, CLIMATE)
    async with PluginHost([tmp_path / "plugins"], settings=settings) as host:
        before = _pids(host, WEATHER, CLIMATE)
        _set_id(weather, taken)
        await host.reloader.apply(PluginChange(weather, ChangeKind.SOURCE))
        (failed,) = _events(host, EventKind.RELOAD_FAILED)
        rolled_back = _events(host, EventKind.RELOAD_ROLLED_BACK)
        answers = [await _whoami(host, p) for p in (WEATHER, CLIMATE)]
        after = _pids(host, WEATHER, CLIMATE)

    assert failed.plugin_id == WEATHER and failed.details["stage"] == "duplicate"
    assert f"belongs to {climate}" in failed.details["reason"]
    assert f"give {weather} another id" in failed.details["reason"]
    assert [e.plugin_id for e in rolled_back] == [WEATHER]
    assert [a["mark"] for a in answers] == ["weather", "climate"]
    assert [a["secret"] for a in answers] == ["", SECRET]
    assert after == before and None not in after


async def test_a_manifest_rewritten_after_the_host_read_it_changes_nothing_it_decided(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reload reads the manifest once; a second read would see the neighbour's id."""
    settings = _settings(tmp_path)
    weather = _write(tmp_path / "plugins" / "weather", WEATHER, "weather")
    _write(tmp_path / "plugins" / "climate", CLIMATE, "climate")
    _plant_secret(settings, CLIMATE)

    def read_then_swap(path: Path) -> PluginSource:
        source = read_plugin(path)
        _set_id(weather, CLIMATE)  # between the host's read and whatever comes after it
        return source

    async with PluginHost([tmp_path / "plugins"], settings=settings) as host:
        climate_pid = _pids(host, CLIMATE)
        monkeypatch.setattr(reloader, "read_plugin", read_then_swap)
        reloaded = await host.reload_plugin(WEATHER)
        answers = [await _whoami(host, p) for p in (WEATHER, CLIMATE)]
        after = _pids(host, CLIMATE)

    assert json.loads((weather / "_manifest.json").read_text())["id"] == CLIMATE
    assert reloaded
    assert [a["mark"] for a in answers] == ["weather", "climate"]
    assert [a["secret"] for a in answers] == ["", SECRET]
    assert after == climate_pid


async def test_a_folder_added_while_serving_with_a_taken_id_is_refused(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    installed = _write(tmp_path / "plugins" / "weather", WEATHER, "installed")
    _plant_secret(settings, WEATHER)
    async with PluginHost([tmp_path / "plugins"], settings=settings) as host:
        before = _pids(host, WEATHER)
        newcomer = _write(tmp_path / "plugins" / "aaa", WEATHER.upper(), "newcomer")
        await host.reloader.apply(PluginChange(newcomer, ChangeKind.ADDED))
        refusal = _refusal_of(host, newcomer)
        served = await _whoami(host, WEATHER)
        after = _pids(host, WEATHER)

    assert f"belongs to {installed}" in refusal.details["reason"]
    assert served["mark"] == "installed" and served["secret"] == SECRET
    assert after == before


async def test_a_moved_folder_keeps_its_id_and_data_with_a_warning(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    old = _write(tmp_path / "plugins" / "weather", WEATHER, "installed")
    _plant_secret(settings, WEATHER)
    async with PluginHost([tmp_path / "plugins"], settings=settings) as host:
        assert (await _whoami(host, WEATHER))["secret"] == SECRET
    moved = (tmp_path / "plugins" / "weather-v2").resolve()
    old.rename(moved)

    async with PluginHost([tmp_path / "plugins"], settings=settings) as host:
        served = await _whoami(host, WEATHER)
        (warning,) = _events(host, EventKind.PLUGIN_REBOUND)

    assert served["mark"] == "installed" and served["secret"] == SECRET
    assert warning.plugin_id == WEATHER and warning.details["path"] == str(moved)
    assert f"its folder {old} is gone" in warning.message
    assert f"{moved}, the only folder claiming the id, now owns it" in warning.message


async def test_a_folder_moved_while_serving_keeps_its_id_with_a_warning(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    old = _write(tmp_path / "plugins" / "weather", WEATHER, "installed")
    _plant_secret(settings, WEATHER)
    async with PluginHost([tmp_path / "plugins"], settings=settings) as host:
        moved = (tmp_path / "plugins" / "weather-v2").resolve()
        old.rename(moved)
        await host.reloader.apply(PluginChange(old, ChangeKind.REMOVED))
        await host.reloader.apply(PluginChange(moved, ChangeKind.ADDED))
        served = await _whoami(host, WEATHER)
        (warning,) = _events(host, EventKind.PLUGIN_REBOUND)
        source = host.sources[WEATHER]

    assert served["secret"] == SECRET and source.path == moved
    assert f"its folder {old} is gone" in warning.message


async def test_a_case_variant_of_an_installed_id_is_the_same_claim(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    installed = _write(tmp_path / "plugins" / "weather", WEATHER, "installed")
    _plant_secret(settings, WEATHER)
    async with PluginHost([tmp_path / "plugins"], settings=settings):
        pass
    variant = _write(tmp_path / "plugins" / "Weather", "Author.Weather", "variant")

    async with PluginHost([tmp_path / "plugins"], settings=settings) as host:
        served = await _whoami(host, WEATHER)
        refusal = _refusal_of(host, variant)
        variant_served = "Author.Weather" in host.sources

    assert served["mark"] == "installed" and served["secret"] == SECRET
    assert refusal.plugin_id == "Author.Weather"
    assert f"belongs to {installed}" in refusal.details["reason"]
    assert not variant_served


BAD_IDS = ["../author.weather", ".author.weather", "author/weather.x", "author.weather\n"]


@dataclass(frozen=True, slots=True)
class BadIdStart:
    """What one host start over a folder per bad id, and a neighbour, left behind."""

    root: Path
    data_dir: Path
    folders: dict[str, Path]
    neighbour: dict[str, Any]
    failed: list[LifecycleEvent]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def bad_id_start(tmp_path_factory: pytest.TempPathFactory) -> BadIdStart:
    """One first start over every bad id's folder at once: each is refused on its own."""
    root = tmp_path_factory.mktemp("bad-ids")
    settings = _settings(root)
    folders = {
        bad_id: _write(root / "plugins" / f"bad-{n}", bad_id, "bad")
        for n, bad_id in enumerate(BAD_IDS)
    }
    _write(root / "plugins" / "climate", CLIMATE, "neighbour")

    async with PluginHost([root / "plugins"], settings=settings) as host:
        neighbour = await _whoami(host, CLIMATE)
        failed = _events(host, EventKind.PLUGIN_FAILED)
    return BadIdStart(root, settings.data_dir, folders, neighbour, failed)


@pytest.mark.asyncio(loop_scope="module")  # the loop of the shared start
@pytest.mark.parametrize("bad_id", BAD_IDS)
async def test_an_id_that_is_not_one_path_component_is_refused_at_the_manifest(
    bad_id_start: BadIdStart, bad_id: str
) -> None:
    start = bad_id_start
    bad = start.folders[bad_id]
    (failed,) = [e for e in start.failed if e.details.get("path") == str(bad)]

    assert start.neighbour["mark"] == "neighbour"
    assert failed.details["stage"] == "manifest"
    assert f"{bad_id!r} is not a plugin id" in failed.details["reason"]
    assert len(start.failed) == len(BAD_IDS)  # the bad folders' refusals, nothing else
    assert {p.name for p in start.data_dir.iterdir()} <= {BINDINGS_FILE, CLIMATE, ".folders"}
    assert not (start.root / WEATHER).exists() and not (start.data_dir / WEATHER).exists()


async def test_no_runner_can_rewrite_the_bindings(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    _write(tmp_path / "plugins" / "weather", WEATHER, "installed")
    async with PluginHost([tmp_path / "plugins"], settings=settings) as host:
        require(host, "landlock")
        bindings = settings.data_dir / BINDINGS_FILE
        before = bindings.read_bytes()
        tool = _tool(WEATHER).replace("whoami", "scribble")
        attempt = await host.invoke(tool, {"path": str(bindings.resolve())})
        own = await host.invoke(tool, {"path": str((settings.data_dir / WEATHER / "x").resolve())})

    assert attempt.success and attempt.structured_content is not None
    assert attempt.structured_content["written"] is False
    assert own.structured_content is not None and own.structured_content["written"] is True
    assert bindings.read_bytes() == before


async def test_removing_one_of_two_claimants_lets_the_other_load(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    first = _write(tmp_path / "plugins" / "a-weather", WEATHER, "first")
    second = _write(tmp_path / "plugins" / "b-weather", WEATHER, "second")
    async with PluginHost([tmp_path / "plugins"], settings=settings) as host:
        shutil.rmtree(first)
        await host.reloader.apply(PluginChange(first, ChangeKind.REMOVED))
        served = await _whoami(host, WEATHER)
        rows = {s.path for s in host.status() if s.state == "failed"}

    assert served["mark"] == "second"
    assert str(first) not in rows and str(second) not in rows


async def test_a_remote_runner_cannot_take_a_local_plugins_id_in_another_case(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = remote_settings(tmp_path)
    installed = _write(tmp_path / "plugins" / "weather", WEATHER, "installed")
    variant = "Author.Weather"
    credential = issue(tmp_path / "keys", "usurper", [variant], tmp_path / "usurper.json")
    remote = plugin_dir(tmp_path / "remote", plugin_id=variant)
    async with PluginHost([tmp_path / "plugins"], settings=settings) as host:
        runner = start_runner(listening_at(host), credential, remote, tmp_path)
        try:
            code = await exited(runner, timeout=30)
        finally:
            stop(runner)
        served = await _whoami(host, WEATHER)
        pools = dict(host.remote.pools) if host.remote else {}
        log = runner_log(tmp_path, runner)

    assert code == 3, log  # nothing it offered was accepted
    assert served["mark"] == "installed" and not pools
    assert logged(
        caplog.records,
        f"refused plugin {variant} offered by credential usurper: plugin {variant} belongs "
        f"to this host's own plugin folder {installed}",
    )


async def test_an_id_remote_runners_serve_first_stays_theirs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = remote_settings(tmp_path)
    (tmp_path / "plugins").mkdir()
    credential = issue(tmp_path / "keys", "gpu-box", [PLUGIN_ID], tmp_path / "gpu.json")
    async with PluginHost([tmp_path / "plugins"], settings=settings) as host:
        runner = start_runner(listening_at(host), credential, plugin_dir(tmp_path / "r"), tmp_path)
        try:
            await wait_until(lambda: healthy_members(host) == 1, timeout=30, what="it joined")
            local = _write(tmp_path / "plugins" / "aaa", PLUGIN_ID, "local")
            await host.reloader.apply(PluginChange(local, ChangeKind.ADDED))
            while_serving = _refusal_of(host, local).details["reason"]
            remote_answer = await host.invoke("pause", {"seconds": 0}, trusted=True)
        finally:
            stop(runner)
    async with PluginHost([tmp_path / "plugins"], settings=settings) as host:
        at_restart = _refusal_of(host, local).details["reason"]
        local_served = PLUGIN_ID in host.sources

    RemoteKeyStore(tmp_path / "keys").revoke("gpu-box")
    async with PluginHost([tmp_path / "plugins"], settings=settings) as host:
        served = await _whoami(host, PLUGIN_ID)
        (warning,) = _events(host, EventKind.PLUGIN_REBOUND)

    assert remote_answer.success, remote_answer.error_message
    for reason in (while_serving, at_restart):
        assert "served by remote runners (first by credential gpu-box" in reason
        assert f"give {local} another id" in reason
    assert not local_served
    assert served["mark"] == "local"
    assert "no remote runner credential allows it any more" in warning.message


async def test_a_folder_reached_twice_is_one_claim_not_a_duplicate(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    weather = _write(tmp_path / "plugins" / "weather", WEATHER, "weather")
    (tmp_path / "also").mkdir()
    (tmp_path / "also" / "weather-link").symlink_to(weather, target_is_directory=True)
    dirs = [tmp_path / "plugins", weather, tmp_path / "also"]

    async with PluginHost(dirs, settings=settings) as host:
        served = await _whoami(host, WEATHER)
        failed = _events(host, EventKind.PLUGIN_FAILED)

    assert served["mark"] == "weather"
    assert [e.details for e in failed if e.details.get("stage") == "duplicate"] == []
