"""Differential: the tool description each kind of plugin gives the model.

A MaiBot plugin's model reads what MaiBot's host sends: the component's
``description`` alone. MaiBot's host (``src/plugin_runtime/host/component_registry.py``,
``ToolEntry``; ``src/core/tooling.py``, ``ToolSpec.build_llm_description``) takes the
metadata's ``description``, else ``brief_description``, else ``工具 <name>``,
stripped; the SDK's ``detailed_description`` (with its ``参数说明：`` list) is
deprecated for the model's text. The real ``maibot-plugin-sdk`` builds each
plugin's component dicts here; plughost's host must send the same text, and
keep the SDK's detailed text on the ToolSpec.

A plughost plugin's model reads the brief description, a blank line, then the
detailed one with its generated ``Parameter details:`` section.
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from typing import Any

import pytest

from plughost.host import PluginHost
from plughost_sdk.models import ToolSpec
from tests.conftest import EXAMPLES, TEST_PLUGINS, HostFactory
from tests.maibot_host import MaiBotHost
from tests.maibot_real import import_plugin

pytestmark = pytest.mark.filterwarnings("ignore:.*Action.*:DeprecationWarning")

MAIBOT_FIXTURES = ["weather_report", "legacy_greeter", "group_admin", "web_search"]
_ids = itertools.count()


def _maibot_host_description(name: str, metadata: dict[str, Any]) -> str:
    """The tool description MaiBot's host gives the model, by its rule."""
    text = str(metadata.get("description") or metadata.get("brief_description") or "")
    return text.strip() or f"工具 {name}"


def _real_tools(folder: Path) -> dict[str, dict[str, Any]]:
    """The TOOL component metadata the real maibot_sdk reports for ``folder``'s plugin."""
    plugin = import_plugin(folder, f"real_maibot_descriptions_{next(_ids)}").create_plugin()
    assert type(plugin).__mro__[1].__module__ == "maibot_sdk.plugin"
    return {c["name"]: c["metadata"] for c in plugin.get_components() if c["type"] == "TOOL"}


async def _specs(host: PluginHost) -> dict[str, ToolSpec]:
    return {spec.name: spec for spec in await host.tools.list_tools(include_hidden=True)}


async def test_a_maibot_plugins_model_reads_what_maibots_host_sends(
    make_host: HostFactory, tmp_path: Path
) -> None:
    expected: dict[str, str] = {}
    detailed: dict[str, str] = {}
    for name in MAIBOT_FIXTURES:
        copy = Path(shutil.copytree(TEST_PLUGINS / "maibot" / name, tmp_path / "real" / name))
        for tool, metadata in _real_tools(copy).items():
            expected[tool] = _maibot_host_description(tool, metadata)
            detailed[tool] = metadata["detailed_description"]
    folders = [
        Path(shutil.copytree(TEST_PLUGINS / "maibot" / n, tmp_path / "ours" / n))
        for n in MAIBOT_FIXTURES
    ]
    async with make_host(folders) as host:
        MaiBotHost().install(host)
        definitions = await host.tools.get_llm_definitions(format="openai", names=list(expected))
        specs = await _specs(host)

    sent = {d["function"]["name"]: d["function"]["description"] for d in definitions}
    assert sent == expected
    assert {n: specs[n].metadata["detailed_description"] for n in expected} == detailed
    assert any("参数说明：" in text for text in detailed.values())


async def test_a_plughost_plugins_model_reads_the_brief_and_the_generated_detail(
    make_host: HostFactory,
) -> None:
    async with make_host([EXAMPLES / "search_tools"]) as host:
        specs = await _specs(host)
        definitions = await host.tools.get_llm_definitions(format="openai", names=list(specs))

    sent = {d["function"]["name"]: d["function"]["description"] for d in definitions}
    assert sent
    for name, text in sent.items():
        spec = specs[name]
        detail = spec.metadata["detailed_description"]
        assert "Parameter details:\n- " in detail
        assert text == f"{spec.brief_description}\n\n{detail}"
