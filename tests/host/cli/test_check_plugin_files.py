"""``plughost check`` and ``plughost grant`` read a plugin's files as the host does."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from plughost.cli.checker import check_plugins
from plughost.cli.grants import write_grants
from tests.conftest import TEST_PLUGINS


def _plugins(tmp_path: Path) -> Path:
    plugins = tmp_path / "plugins"
    shutil.copytree(TEST_PLUGINS / "config_mirror", plugins / "fifo")
    (plugins / "fifo" / "config.toml").unlink()
    os.mkfifo(plugins / "fifo" / "config.toml")
    shutil.copytree(TEST_PLUGINS / "config_mirror", plugins / "linked")
    (plugins / "linked" / "_manifest.json").unlink()
    (plugins / "linked" / "_manifest.json").symlink_to(TEST_PLUGINS / "echo" / "_manifest.json")
    return plugins


async def test_check_reports_a_fifo_and_a_linked_manifest_without_blocking(tmp_path: Path) -> None:
    plugins = _plugins(tmp_path)

    async with asyncio.timeout(60):  # a FIFO opened for reading would block here for good
        report = await check_plugins([plugins])

    found = {(p.plugin, Path(p.file).name): p.message for p in report.errors}
    assert "config.toml is a named pipe (FIFO)" in found["fifo", "config.toml"]
    assert "_manifest.json is a symbolic link" in found["linked", "_manifest.json"]
    assert report.plugins_ok == []


def test_grant_never_reads_a_manifest_through_a_link(tmp_path: Path) -> None:
    plugins = _plugins(tmp_path)
    config = tmp_path / "plughost.toml"

    # tests.echo is named only by the linked manifest: the grant cannot find its default.
    with pytest.raises(ValueError, match=r"no plugin 'tests\.echo'"):
        write_grants(config, "tests.echo", ["example.com"], mcp=False, plugin_dirs=(plugins,))
    assert not config.exists()
