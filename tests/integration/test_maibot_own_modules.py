"""Differential: a MaiBot plugin that imports its own modules by top-level name.

Published MaiBot plugins put their folder on ``sys.path`` and import
``config`` or ``libs.x``; under MaiBot those modules get the real
``maibot_sdk``. Under plughost's runner every module whose file lies in the
plugin's folder gets plughost's MaiBot layer, so the plugin's answers, and its
``self.config``, are the ones the real SDK gives.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from plughost.host import PluginHost
from tests.conftest import TEST_PLUGINS, HostFactory, fast_settings
from tests.maibot_real import import_plugin

FIXTURE = TEST_PLUGINS / "maibot" / "web_search"
QUERY = {"query": "麦麦"}


@pytest.fixture
def plugin_dir(tmp_path: Path) -> Path:
    """A copy of the fixture (the host writes its config.toml), outside the repository."""
    return Path(shutil.copytree(FIXTURE, tmp_path / "plugins" / "web_search"))


async def _real_sdk_answer(folder: Path) -> Any:
    """What the plugin answers under the real maibot-plugin-sdk with its default config."""
    plugin = import_plugin(folder, "real_maibot_web_search").create_plugin()
    assert type(plugin).__mro__[1].__module__ == "maibot_sdk.plugin"
    plugin.set_plugin_config(type(plugin).build_default_config())
    return await plugin.web_search(**QUERY)


async def test_own_modules_imported_by_top_level_name_answer_as_under_the_real_sdk(
    make_host: HostFactory, plugin_dir: Path, tmp_path: Path
) -> None:
    real = await _real_sdk_answer(Path(shutil.copytree(FIXTURE, tmp_path / "real")))
    async with make_host([plugin_dir]) as host:
        problems = dict(host.problems)
        result = await host.invoke("web_search", QUERY)

    assert problems == {}  # on_load read self.config
    assert result.success, result.error_message
    assert result.content == real["content"]
    assert "typed=True" in result.content and "max=5" in result.content


async def test_the_plugins_path_entry_does_not_map_a_native_plugin_in_the_same_runner(
    plugin_dir: Path, tmp_path: Path
) -> None:
    settings = fast_settings(tmp_path).model_copy(
        update={"runner_grouping": "single", "group_capability_plugins": True}
    )
    host = PluginHost([plugin_dir, TEST_PLUGINS / "real_maibot_importer"], settings=settings)
    try:
        await host.start()
        ours = await host.invoke("web_search", QUERY)
        native = await host.invoke("which_maibot_sdk")
        pids = {runner.pid for runner in host.runners()}
    finally:
        await host.aclose()

    assert len(pids) == 1
    assert ours.success, ours.error_message
    assert native.content == "maibot_sdk.plugin"
    assert "site-packages" in native.structured_content["file"]
