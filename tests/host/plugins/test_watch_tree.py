"""The folders the plugin watcher watches: plugin trees, never through a link below a plugin."""

from __future__ import annotations

from pathlib import Path

import pytest

from plughost.plugins import watch_tree
from plughost.plugins.watch_tree import reshaped, watched_folders


@pytest.fixture
def root(tmp_path: Path) -> Path:
    plugins = tmp_path / "plugins"
    for folder in ("one/pkg/inner", "one/__pycache__", "one/.git/objects", "_off/x", "two"):
        (plugins / folder).mkdir(parents=True)
    for plugin in ("one", "two", "_off"):
        (plugins / plugin / "plugin.py").write_text("")
    (tmp_path / "outside" / "deep").mkdir(parents=True)
    (plugins / "one" / "escape").symlink_to(tmp_path / "outside", target_is_directory=True)
    (tmp_path / "installed" / "sub").mkdir(parents=True)
    (tmp_path / "installed" / "plugin.py").write_text("")
    (plugins / "three").symlink_to(tmp_path / "installed", target_is_directory=True)
    return plugins


def test_plugin_trees_are_watched_but_never_through_a_link_below_a_plugin(root: Path) -> None:
    found = watched_folders([root])

    assert found == [
        root,
        root / "one",
        root / "three",  # an operator's link to a plugin folder is followed
        root / "two",
        root / "one" / "pkg",
        root / "three" / "sub",
        root / "one" / "pkg" / "inner",
    ]


def test_a_root_that_is_a_plugin_folder_is_walked_as_one(root: Path) -> None:
    assert watched_folders([root / "one"]) == [
        root / "one",
        root / "one" / "pkg",
        root / "one" / "pkg" / "inner",
    ]


def test_the_number_of_folders_watched_is_bounded(
    root: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(watch_tree, "MAX_FOLDERS", 3)

    found = watched_folders([root])

    assert found == [root, root / "one", root / "three", root / "two"]  # plugins, never less
    assert "more than 3 folders; changes below" in caplog.text


def test_the_entries_looked_at_are_bounded(
    root: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for n in range(50):
        (root / "one" / f"file{n}.txt").write_text("")
    monkeypatch.setattr(watch_tree, "MAX_ENTRIES", 20)

    found = watched_folders([root])

    assert root / "one" / "pkg" / "inner" not in found
    assert "more than 20 entries; changes below" in caplog.text


def test_a_folder_that_appears_or_goes_reshapes_the_watch_and_a_file_does_not(root: Path) -> None:
    folders = set(watched_folders([root]))
    (root / "one" / "fresh").mkdir()
    (root / "one" / "file.txt").write_text("")
    (root / "one" / "link").symlink_to(root / "two", target_is_directory=True)
    (root / "four").symlink_to(root / "two", target_is_directory=True)

    assert reshaped([root / "one" / "fresh"], folders, [root])
    assert reshaped([root / "one" / "pkg"], folders, [root])  # gone, or changed itself
    assert reshaped([root / "four"], folders, [root])  # a new link among the plugins: followed
    assert not reshaped([root / "one" / "file.txt"], folders, [root])
    assert not reshaped([root / "one" / "link"], folders, [root])  # a link below a plugin
    assert not reshaped([root / "one" / "gone.txt"], folders, [root])
