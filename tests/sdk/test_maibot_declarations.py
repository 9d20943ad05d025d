"""Differential: the MaiBot fixture plugins' own source, through MaiBot's real SDK and plughost's.

Each plugin folder is imported twice, unmodified: once from a copy, as an
ordinary module (its ``maibot_sdk`` imports get the real maibot-plugin-sdk 2.16),
and once as a MaiBot plugin of plughost's runner (the imports of every module
in its folder get ``plughost_sdk.maibot``). The component dicts, tool schemas,
description text and configuration must agree.
"""

from __future__ import annotations

import itertools
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from maibot_sdk.types import ToolComponentInfo as RealToolInfo

from plughost_runner.maibot import imports as maibot_imports
from plughost_runner.maibot.loader import tool_declaration
from tests.conftest import TEST_PLUGINS
from tests.maibot_real import import_plugin

pytestmark = pytest.mark.filterwarnings("ignore:.*Action.*:DeprecationWarning")

FIXTURES = sorted(
    p.name
    for p in (TEST_PLUGINS / "maibot").iterdir()
    if (p / "plugin.py").is_file() and p.name != "host_internals"
)
_ids = itertools.count()


@pytest.fixture(params=FIXTURES)
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    """(real SDK instance, plughost instance) of one fixture plugin."""
    folder = TEST_PLUGINS / "maibot" / request.param
    copy = shutil.copytree(folder, tmp_path / request.param)  # outside the mapped folder
    n = next(_ids)
    real_name, our_name = f"real_maibot_fixture_{n}", f"plughost_plugin_maibot_fixture_{n}"
    maibot_imports.register_package(our_name, folder)
    try:
        real = import_plugin(copy, real_name).create_plugin()
        ours = import_plugin(folder, our_name).create_plugin()
        yield real, ours
    finally:
        maibot_imports.unregister_package(our_name)
        sys.modules.pop(real_name, None)
        sys.modules.pop(our_name, None)


def test_the_two_imports_really_use_different_sdks(pair: tuple[Any, Any]) -> None:
    real, ours = pair

    assert type(real).__mro__[1].__module__ == "maibot_sdk.plugin"
    assert type(ours).__mro__[1].__module__ == "plughost_sdk.maibot.plugin"


def test_get_components_is_identical(pair: tuple[Any, Any]) -> None:
    real, ours = pair

    assert ours.get_components() == real.get_components()


def test_get_llm_providers_is_identical(pair: tuple[Any, Any]) -> None:
    real, ours = pair

    assert ours.get_llm_providers() == real.get_llm_providers()


def test_tool_schemas_and_descriptions_are_maibots(pair: tuple[Any, Any]) -> None:
    real, ours = pair
    declared = {c["name"]: c["metadata"] for c in real.get_components()}
    for entry in (c for c in ours.get_components() if c["type"] == "TOOL"):
        fields = set(RealToolInfo.model_fields) - {"name", "type", "metadata"}
        info = RealToolInfo(
            name=entry["name"], **{k: v for k, v in entry["metadata"].items() if k in fields}
        )
        declaration = tool_declaration(entry)

        assert declaration.parameters_schema == (
            info.get_parameters_schema() or {"type": "object", "properties": {}}
        )
        assert declaration.detailed_description == declared[entry["name"]]["detailed_description"]
        assert declaration.brief_description == info.get_brief_description()
        assert declaration.description == info.get_brief_description()  # what the model reads
        assert "参数说明" not in declaration.description
    assert real.get_components() != []


def test_the_typed_configuration_has_the_same_defaults(pair: tuple[Any, Any]) -> None:
    real, ours = pair
    if not type(real).has_config_model():
        assert not type(ours).has_config_model()
        return
    defaults = type(real).build_default_config()
    real.set_plugin_config(defaults)
    ours.set_plugin_config(defaults)

    assert ours.config.model_dump() == real.config.model_dump()
    assert ours.get_plugin_config_data() == real.get_plugin_config_data()
    assert type(ours).build_default_config() == defaults


def test_config_reload_subscriptions_are_read_the_same(pair: tuple[Any, Any]) -> None:
    real, ours = pair

    assert ours.get_config_reload_subscriptions() == real.get_config_reload_subscriptions()
