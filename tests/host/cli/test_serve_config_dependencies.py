"""The [host.dependencies] table of plughost.toml: its paths are relative to the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from plughost.cli.serve_config import ConfigFileError, ServeConfig


def test_dependency_paths_in_the_file_are_relative_to_the_file(tmp_path: Path) -> None:
    file = tmp_path / "plughost.toml"
    file.write_text(
        '[host.dependencies]\nwheel_dir = "wheels"\noffline = true\ncache_dir = "uv-cache"\n'
    )
    packages = ServeConfig.load(file).host.dependencies
    assert packages.wheel_dir == tmp_path / "wheels"
    assert packages.cache_dir == tmp_path / "uv-cache"
    assert packages.offline and packages.root is None


def test_offline_without_a_wheel_directory_names_the_field_and_the_fix(tmp_path: Path) -> None:
    file = tmp_path / "plughost.toml"
    file.write_text("[host.dependencies]\noffline = true\n")
    with pytest.raises(ConfigFileError, match=r"host\.dependencies\.offline: .*needs wheel_dir"):
        ServeConfig.load(file)
