"""``plughost new NAME``: write a new plugin folder that loads, runs and tests out of the box.

The folder holds ``_manifest.json``, a commented ``config.toml``, a
``plugin.py`` with one tool, ``on_load`` and ``on_config_update``, and
``tests/test_plugin.py`` written with the SDK's test kit (with the ``pytest.ini``
that runs it from the folder without warnings). It is meant to be
read: the comments explain each part to a first-time plugin author.

What does not live here: argument parsing and printing (the CLI).
"""

from __future__ import annotations

import getpass
import json
import re
from pathlib import Path
from typing import Any

from plughost_sdk import __version__ as sdk_version
from plughost_sdk.errors import ManifestError
from plughost_sdk.manifest import MANIFEST_FILE, parse_manifest

__all__ = ["MAX_NAME_LENGTH", "check_name", "scaffold_plugin", "suggest_name"]

MAX_NAME_LENGTH = 40
"""Long enough for a name, short enough that ``<name>_greet`` stays a valid tool name."""

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def scaffold_plugin(
    name: str, directory: Path, *, plugin_id: str | None = None, author: str | None = None
) -> Path:
    """Create the plugin folder ``directory/name`` and return its path.

    Args:
        name: The plugin's name: lowercase letters, digits and ``_``, starting
            with a letter (it names the folder, the tool and the classes).
        directory: Where the folder is created (it is created too if missing).
        plugin_id: The manifest id; ``local.<name>`` by default.
        author: The manifest's author; the current user's login by default.

    Raises:
        ValueError: ``name`` or ``plugin_id`` is not usable; the message suggests one.
        FileExistsError: ``directory/name`` exists and is not an empty folder.
    """
    check_name(name)
    manifest = _manifest(name, plugin_id or f"local.{name}", author or _current_user())
    target = Path(directory) / name
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise FileExistsError(
            f"{target} already exists and is not empty; choose another name or directory, "
            "or remove it first (plughost new never overwrites files)"
        )
    (target / "tests").mkdir(parents=True, exist_ok=True)
    files = {
        MANIFEST_FILE: json.dumps(manifest, indent=2, ensure_ascii=False) + "\n",
        "config.toml": _CONFIG.format(name=name),
        "plugin.py": _PLUGIN.format(name=name, title=_title(name), cls=_class_name(name)),
        "tests/test_plugin.py": _TEST.format(name=name),
        "pytest.ini": _PYTEST_INI,
    }
    for relative, text in files.items():
        (target / relative).write_text(text, encoding="utf-8")
    return target


def check_name(name: str) -> None:
    """Accept ``name`` as a plugin name or raise ValueError with a suggestion."""
    if _NAME.match(name) and len(name) <= MAX_NAME_LENGTH:
        return
    suggestion = suggest_name(name)
    hint = f"; try {suggestion!r}" if suggestion != name else ""
    raise ValueError(
        f"plugin name {name!r} is not usable: use lowercase letters, digits and '_', starting "
        f"with a letter, at most {MAX_NAME_LENGTH} characters{hint}"
    )


def suggest_name(name: str) -> str:
    """The nearest usable name: lowercase, other characters as ``_``, a letter first."""
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()
    slug = re.sub(r"[^a-z0-9]+", "_", words).strip("_")
    slug = re.sub(r"^[0-9_]+", "", slug)[:MAX_NAME_LENGTH].rstrip("_")
    return slug or "my_plugin"


def _manifest(name: str, plugin_id: str, author: str) -> dict[str, Any]:
    major = sdk_version.split(".", 1)[0]
    manifest: dict[str, Any] = {
        "manifest_version": 2,
        "id": plugin_id,
        "version": "0.1.0",
        "name": _title(name),
        "description": f"Greets people by name; a starting point for {name}.",
        "author": {"name": author},
        "license": "MIT",
        "plughost_sdk": {"min_version": sdk_version, "max_version": f"{major}.99.99"},
        "dependencies": [],
        "capabilities": ["send.text"],
    }
    try:
        parse_manifest(manifest)
    except ManifestError as exc:
        raise ValueError(f"cannot write this manifest: {'; '.join(exc.problems)}") from None
    return manifest


def _current_user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name in some containers
        return "plugin author"


def _title(name: str) -> str:
    return name.replace("_", " ").strip().title()


def _class_name(name: str) -> str:
    camel = "".join(part.capitalize() for part in name.split("_"))
    # "my_plugin" gives MyPlugin; "plugin" alone must not shadow the SDK's Plugin.
    return camel if camel.endswith("Plugin") and camel != "Plugin" else f"{camel}Plugin"


_CONFIG = """\
# Settings of {name}. The host reads this file when the plugin loads and again
# whenever it changes: the new values are checked against the plugin's
# config_model, then on_config_update is called. An invalid edit is rejected and
# the plugin keeps its old settings.

[greeting]
# The word put before the person's name.
word = "Hello"
# Add an exclamation mark.
excited = true
"""

_PLUGIN = '''\
"""{title}: a plughost plugin with one tool.

A plugin is a Plugin subclass whose @Tool methods the model can call, plus a
module-level create_plugin(). It runs in its own process (a runner), so a
crash or a hang here never takes the host down.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from plughost_sdk import Plugin, Tool, ToolError
from plughost_sdk.types import ToolParameterInfo, ToolParamType


class GreetingSettings(BaseModel):
    """The [greeting] table of config.toml."""

    word: str = Field(default="Hello", min_length=1)
    excited: bool = True


class Settings(BaseModel):
    """All of config.toml. With config_model set, a bad edit never reaches the plugin."""

    greeting: GreetingSettings = Field(default_factory=GreetingSettings)


class {cls}(Plugin):
    """Greets people by name."""

    config_model = Settings

    async def on_load(self) -> None:
        # Runs once before any call. Open connections or load data here; if it
        # raises, the plugin is reported as failed (with file and line) and not served.
        self.settings = Settings.model_validate(self.config.get_all())
        self.ctx.logger.info("loaded, greeting word %r", self.settings.greeting.word)

    async def on_config_update(self, scope: str, config_data: dict[str, Any], version: str) -> None:
        # config.toml changed and passed config_model: take the new values.
        self.settings = Settings.model_validate(config_data)
        self.ctx.logger.info("settings updated (version %s)", version)

    @Tool(
        "{name}_greet",
        # The model reads the brief description to decide whether to call the tool.
        brief_description="Greet a person by name",
        detailed_description="Returns a greeting; inside a chat it is also posted to the chat.",
        parameters=[
            ToolParameterInfo(
                name="person",
                param_type=ToolParamType.STRING,
                description="The name of the person to greet",
            ),
        ],
    )
    async def greet(self, person: str, stream_id: str = "", **kwargs: Any) -> dict[str, Any]:
        # The model's arguments arrive as keyword arguments; so does the
        # conversation's context (stream_id, user_id, ...): **kwargs takes the rest.
        if not person.strip():
            # A ToolError's message goes to the model, so say what would work.
            raise ToolError("person is empty; give the name of the person to greet")
        greeting = self.settings.greeting
        text = f"{{greeting.word}}, {{person.strip()}}" + ("!" if greeting.excited else ".")
        if stream_id:
            # A host capability: allowed because _manifest.json lists "send.text".
            await self.ctx.send.text(text, stream_id)
        # "content" is what the model reads; other keys are kept as structured data.
        return {{"content": text, "person": person.strip()}}


def create_plugin() -> {cls}:
    return {cls}()
'''

_PYTEST_INI = """\
# `pytest` run from this folder finds the tests and runs them as the test kit expects.
[pytest]
testpaths = tests
asyncio_default_fixture_loop_scope = function
"""

_TEST = '''\
"""Tests of {name}: each one loads the plugin in a real runner process.

Run them from the plugin folder with `pytest tests`. The plugin_harness fixture
comes with plughost-sdk's test kit; the tests need it and pytest-asyncio:
pip install "plughost-sdk[testing]" pytest pytest-asyncio
"""

from __future__ import annotations

import pytest

from plughost_sdk.pytest_plugin import HarnessFactory

pytestmark = pytest.mark.asyncio

TOOL = "{name}_greet"


async def test_greet_answers_with_a_greeting(plugin_harness: HarnessFactory) -> None:
    async with plugin_harness() as harness:
        result = await harness.call(TOOL, {{"person": "Ada"}})

    assert result.success, result.error_message
    assert result.content == "Hello, Ada!"


async def test_greet_posts_to_the_chat_it_is_called_from(plugin_harness: HarnessFactory) -> None:
    async with plugin_harness() as harness:
        await harness.call(TOOL, {{"person": "Ada"}}, stream_id="chat-1")

    assert [(message.stream_id, message.text) for message in harness.sent] == [
        ("chat-1", "Hello, Ada!")
    ]


async def test_greet_uses_the_configured_word(plugin_harness: HarnessFactory) -> None:
    config = {{"greeting": {{"word": "Hi", "excited": False}}}}
    async with plugin_harness(config=config) as harness:
        result = await harness.call(TOOL, {{"person": "Ada"}})

    assert result.content == "Hi, Ada."


async def test_a_config_update_takes_effect_at_once(plugin_harness: HarnessFactory) -> None:
    async with plugin_harness() as harness:
        await harness.update_config({{"greeting": {{"word": "Welcome"}}}})
        result = await harness.call(TOOL, {{"person": "Ada"}})

    assert result.content == "Welcome, Ada!"


async def test_an_empty_name_is_refused_with_a_hint(plugin_harness: HarnessFactory) -> None:
    async with plugin_harness() as harness:
        result = await harness.call(TOOL, {{"person": " "}})

    assert not result.success
    assert "give the name" in result.error_message
'''
