"""The digest a remote runner's pin covers: every file of the plugin folder, and nothing else."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from plughost_sdk import plugin_digest
from plughost_sdk.plugin_digest import DigestError, plugin_sha256


def plugin(root: Path) -> Path:
    folder = root / "plugin"
    (folder / "lib").mkdir(parents=True)
    (folder / "_manifest.json").write_text('{"id": "tests.digest"}')
    (folder / "plugin.py").write_text("print('hi')\n")
    (folder / "lib" / "helper.py").write_text("X = 1\n")
    return folder


def test_the_digest_changes_with_any_file_its_path_or_a_new_one(tmp_path: Path) -> None:
    folder = plugin(tmp_path)
    first = plugin_sha256(folder)

    assert plugin_sha256(folder) == first  # stable
    (folder / "lib" / "helper.py").write_text("X = 2\n")
    changed = plugin_sha256(folder)
    (folder / "lib" / "helper.py").rename(folder / "lib" / "helper2.py")
    renamed = plugin_sha256(folder)
    (folder / "lib" / "extra.pyc").write_bytes(b"\x00")  # sourceless bytecode is code
    added = plugin_sha256(folder)
    (folder / "empty").mkdir()

    assert len({first, changed, renamed, added, plugin_sha256(folder)}) == 5


def test_caches_and_the_runner_machines_config_are_left_out(tmp_path: Path) -> None:
    folder = plugin(tmp_path)
    first = plugin_sha256(folder)

    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "plugin.cpython-311.pyc").write_bytes(b"cached")
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref: main\n")
    (folder / "config.toml").write_text('api_key = "this machine\'s"\n')

    assert plugin_sha256(folder) == first
    (folder / "lib" / "config.toml").write_text("nested = true\n")  # not the top-level one
    assert plugin_sha256(folder) != first


@pytest.mark.parametrize("where", ["plugin.py", "lib"])
def test_a_link_anywhere_in_the_folder_is_refused_naming_it(tmp_path: Path, where: str) -> None:
    folder = plugin(tmp_path)
    (folder / "linked").symlink_to(folder / where)

    with pytest.raises(DigestError, match="linked is a symbolic link"):
        plugin_sha256(folder)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    folder = plugin(tmp_path)
    os.mkfifo(folder / "lib" / "pipe")

    with pytest.raises(DigestError, match="pipe is not a regular file or folder"):
        plugin_sha256(folder)


def test_too_many_files_or_bytes_are_refused_with_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = plugin(tmp_path)
    monkeypatch.setattr(plugin_digest, "MAX_FILES", 3)
    with pytest.raises(DigestError, match="more than 3 files and folders"):
        plugin_sha256(folder)
    monkeypatch.setattr(plugin_digest, "MAX_FILES", 100)
    monkeypatch.setattr(plugin_digest, "MAX_BYTES", 10)
    with pytest.raises(DigestError, match="data directory"):
        plugin_sha256(folder)
