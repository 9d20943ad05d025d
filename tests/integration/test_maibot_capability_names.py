"""A MaiBot plugin listing a capability name no handler can answer loads, with a warning.

MaiBot accepts any non-empty name in ``capabilities``; published plugins list
names such as ``"logger"``. plughost loads such a plugin too, and says, in
``plughost check`` and in the host's log at load, that the name can never be
answered.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from plughost.cli.checker import check_plugins
from tests.conftest import TEST_PLUGINS, HostFactory

NOT_A_NAME = "'logger' is not a capability name ('group.name')"


@pytest.fixture
def plugin_dir(tmp_path: Path) -> Path:
    """The web search fixture, its manifest listing ' send.text', 'logger' and a repeat."""
    folder = Path(shutil.copytree(TEST_PLUGINS / "maibot" / "web_search", tmp_path / "search"))
    manifest = json.loads((folder / "_manifest.json").read_text(encoding="utf-8"))
    manifest["capabilities"] = [" send.text", "logger", "send.text"]
    (folder / "_manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return folder


async def test_check_passes_the_plugin_and_warns_at_the_capabilities_line(
    plugin_dir: Path,
) -> None:
    report = await check_plugins([plugin_dir])

    assert report.ok, [p.describe() for p in report.errors]
    assert report.plugins_ok == ["community.web-search"]
    warned = [p for p in report.warnings if NOT_A_NAME in p.message]
    assert len(warned) == 1
    lines = (plugin_dir / "_manifest.json").read_text(encoding="utf-8").splitlines()
    assert lines[warned[0].line - 1].strip().startswith('"capabilities"')


async def test_the_plugin_loads_with_maibots_reading_and_the_warning_is_logged(
    make_host: HostFactory, plugin_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="plughost"):
        async with make_host([plugin_dir]) as host:
            problems = dict(host.problems)
            capabilities = host.sources["community.web-search"].manifest.capabilities
            result = await host.invoke("web_search", {"query": "麦麦"})

    assert problems == {}
    assert result.success, result.error_message
    assert capabilities == ["send.text", "logger"]
    assert any(
        "community.web-search" in r.getMessage() and NOT_A_NAME in r.getMessage()
        for r in caplog.records
    )
