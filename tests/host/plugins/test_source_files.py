"""The host's reads and writes of a plugin's config.toml stay inside the plugin's folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from plughost.plugins.source import (
    MAX_WRITTEN_CONFIG,
    is_plugin_dir,
    read_config,
    read_plugin,
    write_config,
)
from plughost_sdk.errors import ManifestError
from tests.conftest import TEST_PLUGINS


def test_a_written_config_reads_back_with_the_same_fingerprint(tmp_path: Path) -> None:
    data, version = write_config(tmp_path, 'word = "planned"\n')

    assert data == {"word": "planned"}
    assert read_config(tmp_path) == (data, version)
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]


def test_a_dangling_link_is_never_written_through(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "planted.toml"
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "plugin").mkdir()
    (tmp_path / "plugin" / "config.toml").symlink_to(target)

    with pytest.raises(ManifestError, match="is a symbolic link; the host writes only over"):
        write_config(tmp_path / "plugin", 'word = "planned"\n')
    with pytest.raises(ManifestError, match=r"config\.toml is a symbolic link \(to "):
        read_config(tmp_path / "plugin")

    assert not target.exists()


def test_a_planned_config_over_the_limit_or_too_deep_is_not_written(tmp_path: Path) -> None:
    big = "x = " + repr("a" * MAX_WRITTEN_CONFIG) + "\n"
    with pytest.raises(ManifestError, match=r"over the limit of 65,536 for a config\.toml"):
        write_config(tmp_path, big)
    with pytest.raises(ManifestError, match="nested deeper than 64 levels"):
        write_config(tmp_path, "deep = " + "[" * 100 + "]" * 100 + "\n")
    with pytest.raises(ManifestError, match="cannot be read as UTF-8"):
        write_config(tmp_path, 'word = "\udcff"\n')  # a lone surrogate from a runner

    assert list(tmp_path.iterdir()) == []


def test_a_folder_whose_manifest_is_a_fifo_is_a_plugin_folder_reported_as_such(
    tmp_path: Path,
) -> None:
    os.mkfifo(tmp_path / "_manifest.json")

    assert is_plugin_dir(tmp_path)
    with pytest.raises(ManifestError, match=r"_manifest\.json is a named pipe \(FIFO\)"):
        read_plugin(tmp_path)


def test_a_plugin_folder_reads_as_before(tmp_path: Path) -> None:
    source = read_plugin(TEST_PLUGINS / "echo")

    assert source.plugin_id == "tests.echo"
    assert source.config == {"greeting": {"word": "hello"}} and len(source.config_version) == 12
