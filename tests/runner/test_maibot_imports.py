"""maibot_sdk resolves to plughost's layer for MaiBot plugins' modules, and only for them."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plughost_runner.maibot import imports as maibot_imports
from plughost_runner.plugins import loader
from tests.conftest import TEST_PLUGINS

PACKAGE = "plughost_plugin_maibot_probe_1"
FOLDER = TEST_PLUGINS / "maibot" / "web_search"


@pytest.fixture
def plugin_globals() -> Iterator[dict[str, Any]]:
    """Globals of a module inside a registered MaiBot plugin package."""
    maibot_imports.register_package(PACKAGE, FOLDER)
    yield {"__name__": f"{PACKAGE}.helpers"}
    maibot_imports.unregister_package(PACKAGE)


def _run(code: str, module_globals: dict[str, Any]) -> dict[str, Any]:
    namespace = dict(module_globals)
    exec(compile(code, "<plugin>", "exec"), namespace)
    return namespace


def test_from_maibot_sdk_import_gives_plughosts_classes(plugin_globals: dict[str, Any]) -> None:
    names = _run("from maibot_sdk import MaiBotPlugin, Tool", plugin_globals)

    assert names["MaiBotPlugin"].__module__ == "plughost_sdk.maibot.plugin"
    assert names["Tool"].__module__ == "plughost_sdk.maibot.components"


def test_every_import_form_of_a_submodule_is_mapped(plugin_globals: dict[str, Any]) -> None:
    names = _run(
        "import maibot_sdk\n"
        "import maibot_sdk.types\n"
        "import maibot_sdk.capabilities.send as send_module\n"
        "from maibot_sdk import config\n"
        "from maibot_sdk.messages import MaiMessages\n",
        plugin_globals,
    )

    assert names["maibot_sdk"].__name__ == "plughost_sdk.maibot"
    assert names["maibot_sdk"].types.__name__ == "plughost_sdk.maibot.types"
    assert names["send_module"].__name__ == "plughost_sdk.maibot.capabilities.send"
    assert names["config"].__name__ == "plughost_sdk.maibot.config"
    assert names["MaiMessages"].__module__ == "plughost_sdk.maibot.messages"


def test_an_import_inside_a_function_is_mapped_too(plugin_globals: dict[str, Any]) -> None:
    names = _run(
        "def later():\n    from maibot_sdk.types import EventType\n    return EventType\n",
        plugin_globals,
    )

    assert names["later"]().__module__.startswith("plughost_sdk")


def test_other_modules_get_the_real_maibot_sdk_when_it_is_installed(
    plugin_globals: dict[str, Any],
) -> None:
    names = _run("import maibot_sdk", {"__name__": "plughost_plugin_native_2"})

    assert names["maibot_sdk"].__name__ == "maibot_sdk"
    assert "site-packages" in str(names["maibot_sdk"].__file__)


def test_the_sdk_1x_compat_layer_is_refused_with_the_reason(
    plugin_globals: dict[str, Any],
) -> None:
    with pytest.raises(ImportError, match=r"SDK 1\.x's compatibility layer"):
        _run("from maibot_sdk.compat import BasePlugin", plugin_globals)


def test_a_module_maibot_sdk_does_not_have_is_named(plugin_globals: dict[str, Any]) -> None:
    with pytest.raises(ModuleNotFoundError, match=r"maibot_sdk\.nowhere is not part of"):
        _run("from maibot_sdk.nowhere import thing", plugin_globals)


def test_importing_maibots_host_code_says_the_plugin_depends_on_maibot(
    plugin_globals: dict[str, Any],
) -> None:
    with pytest.raises(ModuleNotFoundError, match=r"src\.common\.logger, which is MaiBot's own"):
        _run("from src.common.logger import get_logger", plugin_globals)


def test_after_unregistering_the_mapping_is_gone() -> None:
    maibot_imports.register_package(PACKAGE, FOLDER)
    maibot_imports.unregister_package(PACKAGE)

    names = _run("import maibot_sdk", {"__name__": f"{PACKAGE}.plugin"})

    assert names["maibot_sdk"].__name__ == "maibot_sdk"


def test_a_runner_imports_the_maibot_layer_only_when_a_maibot_plugin_loads() -> None:
    code = (
        "import sys, plughost_runner.service\n"
        "print(sorted(m for m in sys.modules if m.startswith('plughost_sdk.maibot') "
        "or m == 'tomlkit'))"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )

    assert found.stdout.strip() == "[]"


def test_a_module_the_plugin_imports_by_top_level_name_is_mapped_by_where_its_file_is(
    plugin_globals: dict[str, Any],
) -> None:
    own = {"__name__": "config", "__file__": str(FOLDER / "config.py")}
    nested = {"__name__": "libs.formatting", "__file__": str(FOLDER / "libs" / "formatting.py")}

    for module_globals in (own, nested):
        names = _run("from maibot_sdk import PluginConfigBase", module_globals)
        assert names["PluginConfigBase"].__module__.startswith("plughost_sdk.maibot")


def test_import_module_and_a_hand_called_import_are_mapped_for_the_plugins_files(
    plugin_globals: dict[str, Any],
) -> None:
    code = (
        "import importlib\n"
        "sdk = importlib.import_module('maibot_sdk')\n"
        "types = importlib.import_module('maibot_sdk.types')\n"
        "by_hand = __import__('maibot_sdk')\n"
    )
    names = _run(code, {"__name__": "libs.util", "__file__": str(FOLDER / "libs" / "util.py")})

    assert names["sdk"].__name__ == "plughost_sdk.maibot"
    assert names["types"].__name__ == "plughost_sdk.maibot.types"
    assert names["by_hand"].__name__ == "plughost_sdk.maibot"


def test_a_file_outside_the_folder_is_not_mapped_whatever_its_module_name(
    plugin_globals: dict[str, Any], tmp_path: Path
) -> None:
    sibling = FOLDER.parent / (FOLDER.name + "_extra") / "config.py"  # same prefix, other folder
    outsiders = [
        {"__name__": "config", "__file__": str(sibling)},
        {"__name__": f"{PACKAGE}.helpers", "__file__": str(tmp_path / "helpers.py")},
        {"__name__": loader.__name__, "__file__": loader.__file__},
    ]

    for module_globals in outsiders:
        names = _run(
            "import importlib\nimport maibot_sdk\nagain = importlib.import_module('maibot_sdk')",
            module_globals,
        )
        assert names["maibot_sdk"].__name__ == "maibot_sdk"
        assert names["again"].__name__ == "maibot_sdk"
        assert "site-packages" in str(names["maibot_sdk"].__file__)


def test_import_module_outside_any_plugin_gives_the_real_package(
    plugin_globals: dict[str, Any],
) -> None:
    assert importlib.import_module("maibot_sdk").__name__ == "maibot_sdk"
    assert importlib.import_module("json").__name__ == "json"


def test_a_symlink_into_the_folder_counts_as_inside(
    plugin_globals: dict[str, Any], tmp_path: Path
) -> None:
    link = tmp_path / "linked"
    link.symlink_to(FOLDER, target_is_directory=True)

    names = _run("import maibot_sdk", {"__name__": "config", "__file__": str(link / "config.py")})

    assert names["maibot_sdk"].__name__ == "plughost_sdk.maibot"
