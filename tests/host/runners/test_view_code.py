"""The walk that sets aside code a plugin wrote into its folder view, against hostile layers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from plughost.runners import view_code
from plughost.runners.view_code import ViewTooLarge, set_aside_code


def _layer(tmp_path: Path) -> tuple[Path, Path]:
    upper = tmp_path / "view" / "upper"
    upper.mkdir(parents=True)
    return upper, tmp_path / "view" / "set-aside"


def test_module_files_move_out_with_their_paths_and_data_stays(tmp_path: Path) -> None:
    upper, aside = _layer(tmp_path)
    (upper / "libs" / "__pycache__").mkdir(parents=True)
    files = {
        "plugin.py": "rewritten",
        "libs/helper.py": "added",
        "libs/__pycache__/helper.cpython-311.pyc": "bytecode",
        "fast.cpython-311-x86_64-linux-gnu.so": "shared object",
        "data/favourites.json": "[]",
        "config.toml": "x = 1",
    }
    (upper / "data").mkdir()
    for relative, text in files.items():
        (upper / relative).write_text(text, encoding="utf-8")

    done = set_aside_code(upper, aside)

    assert done is not None
    code = {"plugin.py", "libs/helper.py", "libs/__pycache__/helper.cpython-311.pyc"}
    code.add("fast.cpython-311-x86_64-linux-gnu.so")
    assert set(done.moved) == code
    for relative in code:
        assert not (upper / relative).exists()
        assert (done.to / relative).read_text(encoding="utf-8") == files[relative]
    assert (upper / "data" / "favourites.json").read_text(encoding="utf-8") == "[]"
    assert (upper / "config.toml").is_file()


def test_nothing_to_move_or_no_layer_yet_gives_none(tmp_path: Path) -> None:
    upper, aside = _layer(tmp_path)
    (upper / "notes.txt").write_text("kept", encoding="utf-8")
    assert set_aside_code(upper, aside) is None
    assert set_aside_code(tmp_path / "missing", aside) is None
    assert not aside.exists()


def test_a_link_is_moved_as_itself_and_never_followed(tmp_path: Path) -> None:
    upper, aside = _layer(tmp_path)
    outside = tmp_path / "neighbour"
    outside.mkdir()
    (outside / "their.py").write_text("a neighbour's code", encoding="utf-8")
    (upper / "into_neighbour").symlink_to(outside)  # a directory link: never walked into
    (upper / "evil.py").symlink_to(outside / "their.py")  # a module-named link: moved itself

    done = set_aside_code(upper, aside)

    assert done is not None and done.moved == ("evil.py",)
    assert (done.to / "evil.py").is_symlink()
    assert (outside / "their.py").read_text(encoding="utf-8") == "a neighbour's code"
    assert (upper / "into_neighbour").is_symlink()


def test_a_fifo_named_as_a_module_is_moved_without_being_opened(tmp_path: Path) -> None:
    upper, aside = _layer(tmp_path)
    os.mkfifo(upper / "blocked.py")  # opening it for reading would wait for a writer
    done = set_aside_code(upper, aside)
    assert done is not None and done.moved == ("blocked.py",)


def test_a_layer_too_deep_is_refused_with_the_path_and_the_fix(tmp_path: Path) -> None:
    upper, aside = _layer(tmp_path)
    deep = upper.joinpath(*(["d"] * (view_code.MAX_DEPTH + 2)))
    deep.mkdir(parents=True)
    with pytest.raises(ViewTooLarge) as raised:
        set_aside_code(upper, aside)
    assert str(upper) in str(raised.value) and "levels" in str(raised.value)
    assert "data directory" in str(raised.value)


def test_a_layer_with_too_many_entries_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    upper, aside = _layer(tmp_path)
    monkeypatch.setattr(view_code, "MAX_ENTRIES", 10)
    for index in range(11):
        (upper / f"cache-{index}.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ViewTooLarge, match="more than 10 entries"):
        set_aside_code(upper, aside)
