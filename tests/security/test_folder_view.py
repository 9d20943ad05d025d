"""A plugin writes its own folder as MaiBot lets it, in real sandboxed runners, and nothing leaks.

The fixture ``folder_keeper`` is written the way published MaiBot plugins
are: ``create_plugin()`` copies a config template into the folder, ``on_load``
makes ``data/`` beside ``plugin.py``, and its tools keep state there. Under
the default sandbox it works, while the folder the host reads and watches
stays exactly as published, and the disk it fills is counted.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
from pathlib import Path

import pytest

from plughost.events import EventKind
from plughost.host import PluginHost
from plughost.runners.sandbox import FOLDER_VIEWS
from plughost.settings import HostSettings, ResourceLimits
from tests.conftest import TEST_PLUGINS, fast_settings
from tests.integration.test_hot_reload import watch_is_live
from tests.security.sandboxed import plant_plugins, require

KEEPER = "community.folder-keeper"


def _plant(root: Path) -> Path:
    folder = root / "plugins" / "folder_keeper"
    shutil.copytree(TEST_PLUGINS / "folder_keeper", folder)
    return folder


def _fingerprint(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _settings(root: Path, **limits: int | None) -> HostSettings:
    settings = fast_settings(root)
    settings.runner.limits = ResourceLimits.model_validate(limits)
    return settings


async def _text(host: PluginHost, tool: str, **arguments: object) -> str:
    result = await host.invoke(tool, arguments)
    assert result.success, result.error_message
    return str(result.content)


async def test_a_maibot_plugin_writes_its_folder_and_the_hosts_copy_never_changes(
    tmp_path: Path,
) -> None:
    folder = _plant(tmp_path)
    published = _fingerprint(folder)
    settings = _settings(tmp_path)
    async with PluginHost([folder], settings=settings) as host:
        require(host, "landlock", "folder_overlay")

        added = await _text(host, "favourite_add", item="月饼")
        listed = await _text(host, "favourite_list")
        config = await _text(host, "favourite_config")

        assert "共 1 条" in added and listed == "月饼"
        assert "limit = 50" in config  # create_plugin() copied its template in
        assert _fingerprint(folder) == published, "the plugin changed the folder the host reads"
        upper = settings.data_dir / FOLDER_VIEWS / KEEPER / "upper"
        assert (upper / "data" / "favourites.json").read_text(encoding="utf-8") == '["月饼"]'
        assert (upper / "config.toml").is_file()


async def test_what_a_plugin_wrote_into_its_folder_survives_a_crash_and_a_reload(
    tmp_path: Path,
) -> None:
    folder = _plant(tmp_path)
    async with PluginHost([folder], settings=_settings(tmp_path)) as host:
        require(host, "landlock", "folder_overlay")
        await _text(host, "favourite_add", item="first")
        runner = host.runner_for(KEEPER)
        assert runner is not None and runner.pid is not None
        before = runner.generation

        os.kill(runner.pid, 9)
        await host.events.wait_for(
            lambda e: e.kind is EventKind.RUNNER_RESTARTED and e.runner_id == runner.runner_id,
            timeout=20,
        )
        after_crash = await _text(host, "favourite_list")
        assert runner.generation > before
        assert await host.reload_plugin(KEEPER)
        after_reload = await _text(host, "favourite_add", item="second")

        assert after_crash == "first"
        assert "共 2 条" in after_reload


async def test_a_plugins_writes_to_its_folder_never_reload_it(tmp_path: Path) -> None:
    """The host watches the published folder; the plugin's writes land elsewhere.

    A neighbour is edited after the plugin's writes: its reload arrives, and
    none for the writer, whose runner keeps its pid.
    """
    folder = _plant(tmp_path)
    neighbour = plant_plugins(tmp_path / "n") / "echo"
    folders = [folder.parent, neighbour.parent]  # watched as plugin roots
    async with PluginHost(folders, settings=_settings(tmp_path)) as host:
        require(host, "landlock", "folder_overlay")
        reloads: list[str] = []
        host.events.add_callback(
            lambda e: reloads.append(e.plugin_id or "") if e.kind.startswith("reload.") else None
        )
        watcher = asyncio.create_task(host.watch(force_polling=True))
        try:
            await watch_is_live(host, neighbour.parent)
            runner = host.runner_for(KEEPER)
            assert runner is not None
            pid = runner.pid
            for index in range(5):
                await _text(host, "favourite_add", item=f"item-{index}")
            (neighbour / "plugin.py").write_text((neighbour / "plugin.py").read_text() + "\n")
            await host.events.wait_for(
                lambda e: e.kind is EventKind.RELOAD_SUCCEEDED and e.plugin_id == "tests.echo",
                timeout=30,
            )
        finally:
            watcher.cancel()
            with pytest.raises(asyncio.CancelledError):
                await watcher

        assert KEEPER not in reloads
        assert runner.pid == pid


async def test_a_neighbour_sees_nothing_a_plugin_wrote_into_its_folder(tmp_path: Path) -> None:
    folder = _plant(tmp_path)
    plugins = plant_plugins(tmp_path / "n")
    settings = _settings(tmp_path)
    async with PluginHost([folder, plugins / "hostile_intruder"], settings=settings) as host:
        require(host, "landlock", "folder_overlay")
        await _text(host, "favourite_add", item="private")

        through_folder = await host.invoke(
            "intrude_read", {"path": str(folder / "data" / "favourites.json")}
        )
        upper = settings.data_dir / FOLDER_VIEWS / KEEPER / "upper" / "data" / "favourites.json"
        through_upper = await host.invoke("intrude_read", {"path": str(upper)})

        for verdict in (through_folder, through_upper):
            assert isinstance(verdict.structured_content, dict)
            assert not verdict.structured_content["allowed"]
            assert "private" not in str(verdict.structured_content["detail"])


async def test_a_file_larger_than_the_disk_quota_is_refused(tmp_path: Path) -> None:
    folder = _plant(tmp_path)
    async with PluginHost([folder], settings=_settings(tmp_path, disk_mb=2)) as host:
        require(host, "landlock", "folder_overlay")

        refused = await _text(host, "favourite_fill", name="big.bin", megabytes=3)
        fits = await _text(host, "favourite_fill", name="small.bin", megabytes=1)

        assert refused == "refused: File too large"
        assert fits == "written"


async def test_a_plugin_that_fills_its_quota_with_many_files_is_stopped_and_reported(
    tmp_path: Path,
) -> None:
    folder = _plant(tmp_path)
    settings = _settings(tmp_path, disk_mb=3)
    settings.runner.max_restarts = 0
    async with PluginHost([folder], settings=settings) as host:
        require(host, "landlock", "folder_overlay")

        failed_soon = asyncio.create_task(
            host.events.wait_for(
                lambda e: e.kind is EventKind.PLUGIN_FAILED and e.plugin_id == KEEPER, timeout=30
            )
        )
        for index in range(3):
            assert await _text(host, "favourite_fill", name=f"{index}.bin", megabytes=1)
        # The fourth megabyte crosses the quota. Whether the count sees it while the call
        # runs (the call fails as a crash) or right after, when the runner rests (its beats
        # 6 s apart here, 30 s by default), the plugin is stopped and reported.
        last = await host.invoke("favourite_fill", {"name": "3.bin", "megabytes": 1})
        assert last.success or "disk quota exceeded" in (last.error_message or "")
        failed = await failed_soon

        assert "disk quota exceeded" in failed.message
        assert "disk_mb" in failed.message


async def test_without_a_disk_quota_nothing_is_counted(tmp_path: Path) -> None:
    folder = _plant(tmp_path)
    async with PluginHost([folder], settings=_settings(tmp_path, disk_mb=None)) as host:
        require(host, "landlock", "folder_overlay")
        runner = host.runner_for(KEEPER)

        written = await _text(host, "favourite_fill", name="a.bin", megabytes=3)

        assert written == "written"
        assert runner is not None and runner._watchdog.disk is None


async def test_a_refused_write_names_the_path_and_the_grant_and_the_grant_works(
    tmp_path: Path,
) -> None:
    folder = _plant(tmp_path)
    shared = tmp_path / "shared-media"
    shared.mkdir()
    target = shared / "favourites.json"
    async with PluginHost([folder], settings=_settings(tmp_path)) as host:
        require(host, "landlock")
        denied = asyncio.ensure_future(
            host.events.wait_for(lambda e: e.kind is EventKind.SANDBOX_DENIED, timeout=20)
        )
        refused = await host.invoke("favourite_export", {"path": str(target)})
        event = await denied
        learned = host.learned_writes()

        grants = await host.grant_write(KEEPER, event.details["grant_path"])
        exported = await _text(host, "favourite_export", path=str(target))

    assert not refused.success
    assert str(target) in refused.error_message
    assert f'write_grants."{KEEPER}"' in refused.error_message
    assert event.plugin_id == KEEPER and event.details["grant_path"] == str(shared)
    assert learned == {KEEPER: [str(shared)]}
    assert grants == [shared]
    assert "已导出" in exported and target.read_text(encoding="utf-8") == "[]"


async def test_a_granted_directory_that_does_not_exist_yet_is_made_and_writable(
    tmp_path: Path,
) -> None:
    """Plugins make their own data folders outside their folder (``<plugins>/../data/x``)."""
    folder = _plant(tmp_path)
    target = tmp_path / "bot-data" / "folder-keeper" / "export.json"
    settings = _settings(tmp_path)
    settings.write_grants = {KEEPER: [target.parent]}
    async with PluginHost([folder], settings=settings) as host:
        require(host, "landlock")
        exported = await _text(host, "favourite_export", path=str(target))

    assert "已导出" in exported and target.read_text(encoding="utf-8") == "[]"


REWRITER = "tests.code-rewriter"
REWRITER_SOURCE = """\
import os
from typing import Any

from plughost_sdk import Plugin, Tool

HERE = os.path.dirname(os.path.abspath(__file__))


class Rewriter(Plugin):
    @Tool("rewriter_says", brief_description="Say which code runs")
    async def rewriter_says(self, **kwargs: Any) -> str:
        return "published"

    @Tool("rewriter_rewrite", brief_description="Rewrite this plugin's own code in its folder")
    async def rewriter_rewrite(self, **kwargs: Any) -> str:
        entry = os.path.join(HERE, "plugin.py")
        with open(entry, encoding="utf-8") as handle:
            text = handle.read()
        with open(entry, "w", encoding="utf-8") as handle:
            handle.write(text.replace('"pub' + 'lished"', '"rewritten"'))
        with open(os.path.join(HERE, "notes.txt"), "w", encoding="utf-8") as handle:
            handle.write("kept")
        return "done"


def create_plugin() -> Rewriter:
    return Rewriter()
"""


async def test_code_a_plugin_rewrote_in_its_folder_is_set_aside_and_the_published_code_runs(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "plugins" / "rewriter"
    folder.mkdir(parents=True)
    manifest = (
        f'{{"manifest_version": 2, "id": "{REWRITER}", "version": "1.0.0", "name": "rewriter", '
        '"description": "Test plugin that rewrites its own code", '
        '"author": {"name": "plughost tests"}, "license": "MIT"}'
    )
    (folder / "_manifest.json").write_text(manifest, encoding="utf-8")
    (folder / "plugin.py").write_text(REWRITER_SOURCE, encoding="utf-8")
    settings = _settings(tmp_path)
    async with PluginHost([folder], settings=settings) as host:
        require(host, "folder_overlay")
        assert await _text(host, "rewriter_rewrite") == "done"
    view = settings.data_dir / FOLDER_VIEWS / REWRITER
    assert '"rewritten"' in (view / "upper" / "plugin.py").read_text(encoding="utf-8")

    async with PluginHost([folder], settings=settings) as host:
        said = await _text(host, "rewriter_says")
        denied = [e for e in host.events.history() if e.kind == EventKind.SANDBOX_DENIED]

    assert said == "published"
    assert not (view / "upper" / "plugin.py").exists()
    assert (view / "upper" / "notes.txt").read_text(encoding="utf-8") == "kept"
    [moved] = (view / "set-aside").glob("*/*/plugin.py")
    assert '"rewritten"' in moved.read_text(encoding="utf-8")
    [event] = [e for e in denied if e.plugin_id == REWRITER]
    assert event.details["set_aside"] == ["plugin.py"]
    assert "plugin.py" in event.message and str(moved.parent) in event.message
