"""Hot reload against real files and real runners: no failed call, broken edits keep serving."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import textwrap
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from plughost.events import EventKind, LifecycleEvent
from plughost.host import PluginHost
from tests.conftest import HOST_PIDS, HostFactory
from tests.fault_injection import EventLog

PLUGIN_ID = "tests.versioned"

MANIFEST = {
    "manifest_version": 2,
    "id": PLUGIN_ID,
    "version": "1.0.0",
    "name": "versioned",
    "description": "answers with its version",
    "author": {"name": "tests"},
    "license": "MIT",
}


def plugin_source(version: str, *, extra: str = "", on_load: str = "pass") -> str:
    return textwrap.dedent(
        f"""
        import os
        from typing import Any
        from pydantic import BaseModel
        from plughost_sdk import Plugin, Tool
        {extra}

        class Config(BaseModel):
            greeting: str = "hi"

        class Versioned(Plugin):
            config_model = Config
            updates: list[str] = []

            async def on_load(self) -> None:
                {on_load}

            async def on_config_update(self, scope: str, config_data: dict, version: str) -> None:
                self.updates.append(version)

            @Tool("version", brief_description="Which version answers", read_only=True)
            async def version(self, **kwargs: Any) -> dict[str, Any]:
                return {{"content": "{version}", "pid": os.getpid(),
                         "greeting": self.config.get("greeting"), "updates": self.updates}}

        def create_plugin() -> Versioned:
            return Versioned()
        """
    )


def write_plugin(folder: Path, version: str, **kwargs: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_manifest.json").write_text(json.dumps(MANIFEST))
    (folder / "plugin.py").write_text(plugin_source(version, **kwargs))


@dataclass
class Watched:
    host: PluginHost
    folder: Path
    recorder: EventLog

    async def next_event(
        self, kinds: set[EventKind], timeout: float = 20.0, plugin_id: str = PLUGIN_ID
    ) -> LifecycleEvent:
        return await self.recorder.next(kinds, plugin_id, timeout)

    async def answer(self) -> tuple[str, int]:
        result = await self.host.invoke("version", {})
        assert result.success, result.error_message
        return result.content, int(result.structured_content["pid"])


@pytest.fixture
async def watched(tmp_path: Path, make_host: HostFactory) -> AsyncIterator[Watched]:
    root = tmp_path / "plugins"
    folder = root / "versioned"
    write_plugin(folder, "v1")
    recorder = EventLog()
    async with make_host([root], sandbox=HOST_PIDS) as host:  # a restart shows as a new pid
        host.events.add_callback(recorder)
        watch = asyncio.create_task(host.watch())
        await watch_is_live(host, root)
        try:
            yield Watched(host, folder, recorder)
        finally:
            watch.cancel()
            with pytest.raises(asyncio.CancelledError):
                await watch


async def watch_is_live(host: PluginHost, root: Path) -> None:
    """Touch a probe file until the watcher reports it: edits from then on are seen."""
    probe = root / ".plughost-probe"
    async with asyncio.timeout(20):
        for n in range(10_000):
            probe.write_text(str(n))
            if host.watcher is not None:
                try:
                    async with asyncio.timeout(0.2):
                        await host.watcher.active.wait()
                    return
                except TimeoutError:
                    continue
            await asyncio.sleep(0.01)  # the watch task has not started yet


async def call_continuously(host: PluginHost, stop: asyncio.Event) -> list[str]:
    """Call the tool back to back until ``stop``; return every answer or error code."""
    answers: list[str] = []
    while not stop.is_set():
        result = await host.invoke("version", {})
        answers.append(result.content if result.success else f"ERROR {result.error_code}")
        # A call that fails without awaiting anything (a runner gone) must not starve the
        # loop: the reload, the watcher and the test's own deadline run on it too.
        await asyncio.sleep(0)
    return answers


async def test_editing_a_plugin_under_load_fails_no_call_and_the_new_version_answers(
    watched: Watched,
) -> None:
    _, old_pid = await watched.answer()
    stop = asyncio.Event()
    clients = [asyncio.create_task(call_continuously(watched.host, stop)) for _ in range(4)]
    write_plugin(watched.folder, "v2")
    await watched.next_event({EventKind.RELOAD_SUCCEEDED})
    content, new_pid = await watched.answer()
    stop.set()
    answers = [a for client in await asyncio.gather(*clients) for a in client]
    assert [a for a in answers if a.startswith("ERROR")] == []
    assert content == "v2"
    assert new_pid != old_pid
    assert {"v1", "v2"} >= set(answers)


@pytest.mark.parametrize(
    ("edit", "stage", "needle"),
    [
        ({"extra": "def broken(:"}, "import", "syntax error"),
        ({"extra": "import module_that_does_not_exist"}, "import", "ModuleNotFoundError"),
        ({"on_load": "raise RuntimeError('no database')"}, "on_load", "no database"),
    ],
)
async def test_a_broken_edit_keeps_the_old_version_serving_until_fixed(
    watched: Watched, edit: dict[str, str], stage: str, needle: str
) -> None:
    _, pid = await watched.answer()
    write_plugin(watched.folder, "v2", **edit)
    failed = await watched.next_event({EventKind.RELOAD_FAILED})
    assert failed.details["stage"] == stage
    assert needle in failed.message
    assert failed.details["file"].endswith("plugin.py")
    assert failed.message.count(failed.details["file"]) == 1  # the place, said once
    rolled_back = await watched.next_event({EventKind.RELOAD_ROLLED_BACK})
    assert "previous version keeps serving" in rolled_back.message
    assert await watched.answer() == ("v1", pid)

    write_plugin(watched.folder, "v3")
    await watched.next_event({EventKind.RELOAD_SUCCEEDED})
    assert (await watched.answer())[0] == "v3"


async def test_a_broken_manifest_or_declaration_keeps_the_old_version(watched: Watched) -> None:
    _, pid = await watched.answer()
    (watched.folder / "_manifest.json").write_text('{"manifest_version": 2, "id": "x"')
    failed = await watched.next_event({EventKind.RELOAD_FAILED})
    assert "invalid JSON" in failed.message
    assert await watched.answer() == ("v1", pid)

    write_plugin(watched.folder, "v2", extra="")
    source = (watched.folder / "plugin.py").read_text()
    (watched.folder / "plugin.py").write_text(source.replace('Tool("version"', 'Tool("bad name!"'))
    failed = await watched.next_event({EventKind.RELOAD_FAILED})
    assert "bad name!" in failed.message
    assert await watched.answer() == ("v1", pid)


async def test_a_config_change_reaches_the_running_instance_without_a_restart(
    watched: Watched,
) -> None:
    _, pid = await watched.answer()
    (watched.folder / "config.toml").write_text('greeting = "hello"\n')
    updated = await watched.next_event({EventKind.CONFIG_UPDATED})
    result = await watched.host.invoke("version", {})
    assert result.structured_content["greeting"] == "hello"
    assert result.structured_content["updates"] == [updated.details["version"]]
    assert result.structured_content["pid"] == pid


def save_with_sed(config: Path) -> None:
    """GNU ``sed -i``: a ``sedXXXXXX`` copy in the folder, renamed over the file."""
    subprocess.run(["sed", "-i", "s/hi/hello/", str(config)], check=True, timeout=10)


def save_with_vim(config: Path) -> None:
    """A real vim writing with a backup: the ``4913`` probe, ``config.toml~``, a new file."""
    if shutil.which("vim") is None:
        pytest.skip("vim is not installed: the real-vim save is not tried")
    # backupskip is emptied since vim skips backups under /tmp, where the test's folder is.
    options = "set backup writebackup backupcopy=auto backupskip="
    script = ["-c", options, "-c", "%s/hi/hello/", "-c", "wq"]
    subprocess.run(
        ["vim", "-N", "-u", "NONE", "-n", "-Es", *script, str(config)], check=True, timeout=10
    )


def save_like_jetbrains(config: Path) -> None:
    """JetBrains' safe write: ``___jb_tmp___`` written, the old file moved aside, then gone."""
    temporary = config.with_name(config.name + "___jb_tmp___")
    old = config.with_name(config.name + "___jb_old___")
    temporary.write_text('greeting = "hello"\n')
    os.replace(config, old)
    os.replace(temporary, config)
    old.unlink()


def save_atomically_from_python(config: Path) -> None:
    """An atomic writer in Python: ``tempfile.mkstemp`` beside the file, then ``os.replace``."""
    descriptor, name = tempfile.mkstemp(dir=config.parent)
    with os.fdopen(descriptor, "w") as handle:
        handle.write('greeting = "hello"\n')
    os.replace(name, config)


@pytest.mark.parametrize(
    "save", [save_with_sed, save_with_vim, save_like_jetbrains, save_atomically_from_python]
)
async def test_a_config_saved_by_an_editor_or_tool_is_a_config_change(
    watched: Watched, save: Callable[[Path], None]
) -> None:
    config = watched.folder / "config.toml"
    config.write_text('greeting = "hi"\n')
    await watched.next_event({EventKind.CONFIG_UPDATED})
    _, pid = await watched.answer()

    await asyncio.to_thread(save, config)

    seen = await watched.next_event({EventKind.CONFIG_UPDATED, EventKind.RELOAD_STARTED})
    assert seen.kind is EventKind.CONFIG_UPDATED, seen.message
    result = await watched.host.invoke("version", {})
    assert result.structured_content["greeting"] == "hello"
    assert result.structured_content["pid"] == pid  # the same runner: no restart


async def test_an_invalid_config_is_rejected_and_the_old_config_stays(watched: Watched) -> None:
    (watched.folder / "config.toml").write_text('greeting = "hello"\n')
    await watched.next_event({EventKind.CONFIG_UPDATED})
    (watched.folder / "config.toml").write_text("greeting = [1, 2]\n")
    rejected = await watched.next_event({EventKind.CONFIG_REJECTED})
    assert "greeting" in rejected.message
    (watched.folder / "config.toml").write_text("greeting = \n")
    rejected = await watched.next_event({EventKind.CONFIG_REJECTED})
    assert "invalid TOML" in rejected.message
    result = await watched.host.invoke("version", {})
    assert result.structured_content["greeting"] == "hello"


async def test_a_new_folder_is_loaded_and_a_removed_one_is_unloaded_cleanly(
    watched: Watched,
) -> None:
    other = watched.folder.parent / "second"
    other.mkdir()
    manifest = {**MANIFEST, "id": "tests.second"}
    (other / "plugin.py").write_text(plugin_source("second").replace('"version"', '"second"'))
    (other / "_manifest.json").write_text(json.dumps(manifest))
    await watched.next_event({EventKind.PLUGIN_LOADED}, plugin_id="tests.second")
    assert (await watched.host.invoke("second", {})).content == "second"
    runner = watched.host.runner_for("tests.second")
    assert runner is not None

    shutil.rmtree(other)
    await watched.next_event({EventKind.PLUGIN_UNLOADED}, plugin_id="tests.second")
    assert not await watched.host.tools.has_tool("second")
    assert watched.host.components.by_plugin("tests.second") == ()
    assert "tests.second" not in watched.host.sources
    assert runner.state.value == "stopped"
    assert runner not in watched.host.runners()


async def test_rapid_successive_saves_coalesce_into_fewer_reloads(watched: Watched) -> None:
    for n in range(2, 8):
        write_plugin(watched.folder, f"v{n}")
    await _until_answer(watched, "v7")
    starts = len(watched.recorder.of(PLUGIN_ID, {EventKind.RELOAD_STARTED}))
    assert 1 <= starts < 6


async def test_the_reload_api_reloads_by_id_with_the_same_guarantees(
    tmp_path: Path, make_host: HostFactory
) -> None:
    folder = tmp_path / "plugins" / "versioned"
    write_plugin(folder, "v1")
    async with make_host([folder.parent]) as host:
        write_plugin(folder, "v2", extra="import nope_not_here")
        assert await host.reload_plugin(PLUGIN_ID) is False
        assert (await host.invoke("version", {})).content == "v1"
        write_plugin(folder, "v2")
        assert await host.reload_plugin(PLUGIN_ID) is True
        assert (await host.invoke("version", {})).content == "v2"
        with pytest.raises(KeyError):
            await host.reload_plugin("tests.unknown")


async def test_polling_mode_sees_edits_too(tmp_path: Path, make_host: HostFactory) -> None:
    folder = tmp_path / "plugins" / "versioned"
    write_plugin(folder, "v1")
    async with make_host([folder.parent]) as host:
        watch = asyncio.create_task(host.watch(force_polling=True))
        try:
            await watch_is_live(host, folder.parent)
            write_plugin(folder, "v2")
            await host.events.wait_for(lambda e: e.kind is EventKind.RELOAD_SUCCEEDED, timeout=20)
            assert (await host.invoke("version", {})).content == "v2"
        finally:
            watch.cancel()
            with pytest.raises(asyncio.CancelledError):
                await watch


async def _until_answer(watched: Watched, expected: str) -> None:
    def done(event: LifecycleEvent) -> bool:
        return event.kind is EventKind.RELOAD_SUCCEEDED

    check: Callable[[LifecycleEvent], bool] = done
    async with asyncio.timeout(30):
        while (await watched.answer())[0] != expected:
            await watched.host.events.wait_for(check, timeout=30)
