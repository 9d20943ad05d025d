"""``plughost new``: the scaffolded plugin loads, and its own tests pass as written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from plughost.cli.scaffold import scaffold_plugin, suggest_name
from plughost.plugins.source import read_plugin


def test_the_scaffolded_plugin_passes_its_own_tests(tmp_path: Path) -> None:
    folder = scaffold_plugin("weather_bot", tmp_path)

    run = subprocess.run(
        [sys.executable, "-m", "pytest", str(folder), "-q", "-p", "no:cacheprovider"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )

    assert run.returncode == 0, run.stdout + run.stderr
    assert "5 passed" in run.stdout
    # The folder carries its pytest configuration: no warning greets a new author.
    assert "Warning" not in run.stdout + run.stderr


def test_read_plugin_accepts_the_scaffolded_folder(tmp_path: Path) -> None:
    folder = scaffold_plugin("weather_bot", tmp_path, author="Ada")

    source = read_plugin(folder)

    assert folder == tmp_path / "weather_bot"
    assert source.plugin_id == "local.weather_bot"
    assert source.manifest.version == "0.1.0"
    assert source.manifest.author.name == "Ada"
    assert source.manifest.capabilities == ["send.text"]
    assert source.warnings == ()
    assert source.config == {"greeting": {"word": "Hello", "excited": True}}
    assert sorted(p.name for p in folder.rglob("*") if p.is_file()) == [
        "_manifest.json",
        "config.toml",
        "plugin.py",
        "pytest.ini",
        "test_plugin.py",
    ]


def test_the_plugin_id_can_be_chosen(tmp_path: Path) -> None:
    folder = scaffold_plugin("notes", tmp_path, plugin_id="ada.notes")

    manifest = json.loads((folder / "_manifest.json").read_text(encoding="utf-8"))

    assert manifest["id"] == "ada.notes"
    assert manifest["manifest_version"] == 2


def test_an_unusable_plugin_id_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a plugin id"):
        scaffold_plugin("notes", tmp_path, plugin_id="nodots")

    assert not (tmp_path / "notes").exists()


def test_an_existing_folder_with_files_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "plugin.py").write_text("# mine\n", encoding="utf-8")

    with pytest.raises(FileExistsError, match="already exists and is not empty"):
        scaffold_plugin("notes", tmp_path)

    assert (tmp_path / "notes" / "plugin.py").read_text(encoding="utf-8") == "# mine\n"
    assert not (tmp_path / "notes" / "_manifest.json").exists()


def test_an_existing_empty_folder_is_filled(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()

    folder = scaffold_plugin("notes", tmp_path)

    assert (folder / "plugin.py").is_file()


def test_a_missing_target_directory_is_created(tmp_path: Path) -> None:
    folder = scaffold_plugin("notes", tmp_path / "plugins" / "local")

    assert (folder / "tests" / "test_plugin.py").is_file()


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("My Weather!", "my_weather"),
        ("WeatherBot", "weather_bot"),
        ("2fast", "fast"),
        ("weather-bot", "weather_bot"),
        ("!!!", "my_plugin"),
    ],
)
def test_an_unusable_name_is_refused_with_a_suggestion(
    tmp_path: Path, name: str, suggestion: str
) -> None:
    with pytest.raises(ValueError, match=f"try '{suggestion}'"):
        scaffold_plugin(name, tmp_path)

    assert suggest_name(name) == suggestion
    assert list(tmp_path.iterdir()) == []


def test_a_name_too_long_for_a_tool_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at most 40 characters"):
        scaffold_plugin("a" * 41, tmp_path)
