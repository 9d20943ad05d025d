"""A host that has just started answers its first calls, all at once, from every runner.

The registry's tool view is built once for the calls that arrive together
(:mod:`plughost.tools.views`); these tests pin that what they get is what each
would have got alone: every plugin's tool listed and run by its own runner, a
plugin that failed still reported with its folder and reason while the others
answer, and a reload's new tool callable at once.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

from plughost.host import PluginHost
from plughost_sdk.models import ToolInvocation
from tests.conftest import TEST_PLUGINS, HostFactory

COPIES = 4
DEADLINE_S = 60.0


def _echo_copies(root: Path, copies: int = COPIES) -> list[Path]:
    folders = []
    for index in range(copies):
        folder = root / f"echo_{index}"
        shutil.copytree(TEST_PLUGINS / "echo", folder, ignore=shutil.ignore_patterns("__pycache__"))
        manifest = json.loads((folder / "_manifest.json").read_text(encoding="utf-8"))
        manifest.update(id=f"tests.echo-{index}", name=f"echo-{index}")
        (folder / "_manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        folders.append(folder)
    return folders


def _echo_names(host: PluginHost, copies: int = COPIES) -> dict[str, str]:
    """Each copy's plugin id -> the model-facing name of its ``echo`` tool."""
    names = {}
    for index in range(copies):
        plugin_id = f"tests.echo-{index}"
        [echo] = [c for c in host.components.by_plugin(plugin_id) if c.name == "echo"]
        names[plugin_id] = host.query.model_name(echo)
    return names


def _runner_pid(host: PluginHost, plugin_id: str) -> int | None:
    runner = host.runner_for(plugin_id)
    assert runner is not None
    return runner.pid


async def test_first_calls_arriving_together_reach_every_plugin_and_a_failure_stays_reported(
    make_host: HostFactory, tmp_path: Path
) -> None:
    folders = [*_echo_copies(tmp_path / "plugins"), TEST_PLUGINS / "crash_on_import"]
    async with asyncio.timeout(DEADLINE_S), make_host(folders) as host:
        names = _echo_names(host)
        calls = [
            host.tools.invoke(ToolInvocation(tool_name=name, arguments={"text": plugin_id}))
            for plugin_id, name in names.items()
        ]
        results = await asyncio.gather(*calls)
        listed = {spec.name for spec in await host.tools.list_tools()}
        problem = host.problems["tests.crash-on-import"]
        pids = [_runner_pid(host, plugin_id) for plugin_id in names]

    assert [r.success for r in results] == [True] * COPIES, [r.error_message for r in results]
    assert [r.content for r in results] == list(names)
    assert len(set(pids)) == COPIES  # each copy has a runner of its own
    assert set(names.values()) <= listed
    assert problem.path == TEST_PLUGINS / "crash_on_import"
    assert "this plugin cannot be imported" in problem.describe()


async def test_calls_arriving_together_after_a_reload_see_the_reloaded_tool(
    make_host: HostFactory, tmp_path: Path
) -> None:
    folders = _echo_copies(tmp_path / "plugins", copies=2)
    source = folders[0] / "plugin.py"
    async with asyncio.timeout(DEADLINE_S), make_host(folders) as host:
        names = _echo_names(host, copies=2)
        await asyncio.gather(*(host.tools.invoke(_echo(name)) for name in names.values()))
        text = source.read_text(encoding="utf-8")
        source.write_text(text.replace("Echo the text back", "Echo it back, reloaded"), "utf-8")
        assert await host.reload_plugin("tests.echo-0") is True
        name = names["tests.echo-0"]
        results = await asyncio.gather(*(host.tools.invoke(_echo(name)) for _ in range(3)))
        spec = await host.tools.get_tool_spec(name)

    assert [r.success for r in results] == [True] * 3, [r.error_message for r in results]
    assert spec is not None
    assert "reloaded" in spec.description


def _echo(name: str) -> ToolInvocation:
    return ToolInvocation(tool_name=name, arguments={"text": "x"})
