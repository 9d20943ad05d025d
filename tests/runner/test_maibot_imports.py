"""maibot_sdk resolves to plughost's layer for MaiBot plugins' modules, and only for them."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from plughost_runner import maibot_imports

PACKAGE = "plughost_plugin_maibot_probe_1"


@pytest.fixture
def plugin_globals() -> Iterator[dict[str, Any]]:
    """Globals of a module inside a registered MaiBot plugin package."""
    maibot_imports.register_package(PACKAGE)
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
    maibot_imports.register_package(PACKAGE)
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
