"""A crashing handler costs its own runner only; hot reload swaps commands and hooks at once."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from plughost.host import PluginHost
from plughost_sdk import EventType
from tests.conftest import TEST_PLUGINS, HostFactory

CHAT, HOOKS_B, CRASHY = (TEST_PLUGINS / n for n in ("chat", "hooks_b", "crashy"))


def _pid(host: PluginHost, plugin_id: str) -> int | None:
    runner = host.runner_for(plugin_id)
    return runner.pid if runner is not None else None


async def test_a_handler_that_kills_its_runner_costs_that_runner_only(
    make_host: HostFactory,
) -> None:
    async with make_host([CHAT, HOOKS_B, CRASHY]) as host:
        before = {p: _pid(host, p) for p in ("tests.chat", "tests.hooks_b")}
        hook = await host.run_hook("test.crash", trail=[])
        event = await host.emit_event(
            EventType.ON_MESSAGE_PRE_PROCESS, {"processed_plain_text": "hi", "trail": []}
        )
        after = {p: _pid(host, p) for p in ("tests.chat", "tests.hooks_b")}

    assert hook.kwargs["trail"] == ["b"]
    assert not hook.aborted
    assert "tests.crashy.dies (skip)" in hook.errors[0]
    assert "crashed" in hook.errors[0]
    first = event.results[0]
    assert (first.handler, first.success, first.error_code) == (
        "tests.crashy.dies_on_message",
        False,
        "plugin_crashed",
    )
    assert [r.handler for r in event.results[1:]] == ["tests.chat.tagger", "tests.chat.spam_filter"]
    assert event.continue_processing
    assert after == before


async def test_a_command_that_kills_its_runner_is_a_failed_outcome(make_host: HostFactory) -> None:
    async with make_host([CHAT, HOOKS_B]) as host:
        neighbour = _pid(host, "tests.hooks_b")
        outcome = await host.dispatch_command("/exit")
        hook = await host.run_hook("test.crash", trail=[])

    assert outcome.handled
    assert outcome.error_code == "plugin_crashed"
    assert outcome.continue_processing is False
    assert hook.kwargs["trail"] == ["b"]
    assert _pid(host, "tests.hooks_b") in (neighbour, None)  # None: the host has closed


PLUGIN = """
from typing import Any

from plughost_sdk import Command, HookHandler, Plugin, Tool


class Versioned(Plugin):
    @Command("which", pattern=r"^/VERSION")
    async def which(self, **kwargs: Any) -> Any:
        return True, "VERSION", True

    @HookHandler("test.version", name="HOOKNAME")
    async def mark(self, **kwargs: Any) -> Any:
        return {"modified_kwargs": {**kwargs, "version": "VERSION"}}

    @Tool("version_tool", brief_description="Say which version answers")
    async def version_tool(self, **kwargs: Any) -> str:
        return "VERSION"


def create_plugin() -> Versioned:
    return Versioned()
"""


def _write(folder: Path, version: str) -> None:
    text = PLUGIN.replace("VERSION", version).replace("HOOKNAME", f"mark_{version}")
    (folder / "plugin.py").write_text(text, encoding="utf-8")


async def test_hot_reload_swaps_commands_hooks_and_tools_in_one_step(
    make_host: HostFactory, tmp_path: Path
) -> None:
    folder = tmp_path / "versioned"
    folder.mkdir()
    manifest = (CHAT / "_manifest.json").read_text(encoding="utf-8")
    (folder / "_manifest.json").write_text(
        manifest.replace("tests.chat", "tests.versioned"), encoding="utf-8"
    )
    _write(folder, "v1")
    async with make_host([folder]) as host:
        seen: list[tuple[str, ...]] = []

        def snapshot() -> None:
            registry = host.components
            seen.append(
                tuple(sorted(c.key for c in registry.components()))
                + tuple(c.name for c in registry.by_plugin("tests.versioned"))
            )

        before_command = await host.dispatch_command("/v1")
        host.components.add_listener(snapshot)
        _write(folder, "v2")
        assert await host.reload_plugin("tests.versioned")
        old = await host.dispatch_command("/v1")
        new = await host.dispatch_command("/v2")
        hook = await host.run_hook("test.version")
        tool = await host.invoke("version_tool", {})

    assert before_command.response == "v1"
    assert old.handled is False
    assert (new.handled, new.response) == (True, "v2")
    assert hook.kwargs == {"version": "v2"}
    assert hook.ran == ["tests.versioned.mark_v2"]
    assert tool.content == "v2"
    new_set = (
        "COMMAND:tests.versioned.which",
        "HOOK_HANDLER:tests.versioned.mark_v2",
        "version_tool",
    )
    assert seen[0] == new_set  # the first change already shows the whole new version
    assert set(seen) == {new_set}


async def test_a_reload_that_fails_keeps_the_old_commands_serving(
    make_host: HostFactory, tmp_path: Path
) -> None:
    folder = tmp_path / "chat"
    shutil.copytree(CHAT, folder)
    async with make_host([folder]) as host:
        (folder / "plugin.py").write_text("raise RuntimeError('broken edit')\n", encoding="utf-8")
        assert not await host.reload_plugin("tests.chat")
        outcome = await host.dispatch_command("/weather Rome")

    assert outcome.response == "sunny in Rome"


async def test_commands_dispatched_during_a_reload_all_succeed_old_then_new(
    make_host: HostFactory, tmp_path: Path
) -> None:
    folder = tmp_path / "versioned"
    folder.mkdir()
    manifest = (CHAT / "_manifest.json").read_text(encoding="utf-8")
    (folder / "_manifest.json").write_text(
        manifest.replace("tests.chat", "tests.versioned"), encoding="utf-8"
    )
    _write(folder, "v1")
    text = (folder / "plugin.py").read_text(encoding="utf-8")
    (folder / "plugin.py").write_text(text.replace("^/v1", "^/which"), encoding="utf-8")
    async with make_host([folder]) as host:
        answers: list[tuple[bool, str | None]] = []
        reloaded = asyncio.Event()

        async def keep_asking() -> None:
            # Until a few commands were sent after the reload ended: one sent before it may
            # still be in flight then, and the old version answers it.
            sent_after = 0
            while sent_after < 3 or len(answers) < 5:
                after = reloaded.is_set()
                outcome = await host.dispatch_command("/which")
                answers.append((outcome.success, outcome.response))
                sent_after += after
                await asyncio.sleep(0.002)  # pacing, so the new runner gets CPU to start

        asker = asyncio.create_task(keep_asking())
        try:
            _write(folder, "v2")
            text = (folder / "plugin.py").read_text(encoding="utf-8")
            (folder / "plugin.py").write_text(text.replace("^/v2", "^/which"), encoding="utf-8")
            assert await host.reload_plugin("tests.versioned")
            reloaded.set()
            await asyncio.wait_for(asker, timeout=30)
        finally:
            asker.cancel()

    responses = [response for _, response in answers]
    assert all(success for success, _ in answers), answers
    assert responses[0] == "v1" and responses[-1] == "v2"
    first_new = responses.index("v2")
    assert set(responses[first_new:]) == {"v2"}  # never the old version after the new one
