"""``[host.plugin_replicas]`` in the serve configuration reaches HostSettings, and is checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from plughost.cli.serve_config import ConfigFileError, ServeConfig


def test_replicas_per_plugin_are_read_from_the_file(tmp_path: Path) -> None:
    path = tmp_path / "plughost.toml"
    path.write_text('[host.plugin_replicas]\n"author.cpu" = 3\n')
    assert ServeConfig.load(path).host.plugin_replicas == {"author.cpu": 3}


def test_a_replica_count_below_one_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "plughost.toml"
    path.write_text('[host.plugin_replicas]\n"author.cpu" = 0\n')
    with pytest.raises(ConfigFileError, match=r"host\.plugin_replicas\.author\.cpu"):
        ServeConfig.load(path)
