"""A real runner runs a plugin's sources, not the bytecode its folder ships.

A folder can carry ``__pycache__`` files that Python would run instead of the
``.py`` beside them (see :mod:`plughost_runner.plugins.sources`). Here a
plugin ships, for its entry module and for a module it imports, an unchecked
hash-based ``.pyc`` (which plain Python runs whatever the source says) and the
runner must answer from the sources, before and after an edit; and a MaiBot
plugin that imports its own modules by top-level name, after putting its
folder on ``sys.path``, gets them from their sources too.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import TEST_PLUGINS, HostFactory
from tests.shipped_bytecode import ship_bytecode

PLUGIN_ID = "tests.shipped-bytecode"
ENTRY = """\
from typing import Any

from plughost_sdk import Plugin, Tool

from .words import WORD


class Speaker(Plugin):
    @Tool("say_word", brief_description="Say the plugin's word")
    async def say_word(self, **kwargs: Any) -> str:
        return f"{WORD} from {ORIGIN}"


ORIGIN = "plugin.py"


def create_plugin() -> Speaker:
    return Speaker()
"""


def _write(folder: Path, word: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    manifest = {
        "manifest_version": 2,
        "id": PLUGIN_ID,
        "version": "1.0.0",
        "name": "shipped-bytecode",
        "description": "Test plugin whose folder ships bytecode that differs from its sources",
        "author": {"name": "plughost tests"},
        "license": "MIT",
    }
    (folder / "_manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (folder / "plugin.py").write_text(ENTRY, encoding="utf-8")
    (folder / "words.py").write_text(f"WORD = {word!r}\n", encoding="utf-8")


def _ship(folder: Path) -> None:
    ship_bytecode(
        folder / "plugin.py", ENTRY.replace('"plugin.py"', '"shipped"'), unchecked_hash=True
    )
    ship_bytecode(folder / "words.py", "WORD = 'shipped'\n", unchecked_hash=True)


async def test_the_runner_answers_from_the_sources_before_and_after_an_edit(
    tmp_path: Path, make_host: HostFactory
) -> None:
    folder = tmp_path / "plugins" / "shipped"
    _write(folder, "source")
    _ship(folder)
    async with make_host([folder.parent]) as host:
        assert host.problems == {}
        first = await host.invoke("say_word", {})
        _write(folder, "edited")  # the shipped .pyc files stay, still "valid" to Python
        reloaded = await host.reload_plugin(PLUGIN_ID)
        second = await host.invoke("say_word", {})

    assert first.success, first.error_message
    assert first.content == "source from plugin.py"
    assert reloaded is True
    assert second.content == "edited from plugin.py"


async def test_a_maibot_plugin_imports_its_own_top_level_modules_from_their_sources(
    tmp_path: Path, make_host: HostFactory
) -> None:
    folder = Path(shutil.copytree(TEST_PLUGINS / "maibot" / "web_search", tmp_path / "p" / "ws"))
    helpers = folder / "libs" / "formatting.py"
    shipped = "def describe(config, query):\n    return 'shipped describe'\n"
    ship_bytecode(helpers, shipped, unchecked_hash=True)
    async with make_host([folder.parent]) as host:
        result = await host.invoke("web_search", {"query": "q"})

    assert result.success, result.error_message
    assert result.content.startswith("query=q url=")
    assert "shipped" not in result.content
