"""Reading a plugin's files: only regular files of the folder's own, bounded in size and depth."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest

from plughost_sdk import plugin_files
from plughost_sdk.errors import ManifestError
from plughost_sdk.manifest import load_manifest
from plughost_sdk.plugin_files import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    open_file,
    parse_json,
    parse_toml,
    read_file,
    write_file,
)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    plugin = tmp_path / "plugin"
    (plugin / "sub").mkdir(parents=True)
    (plugin / "config.toml").write_text('word = "mine"\n')
    (plugin / "sub" / "data.txt").write_text("nested")
    (tmp_path / "neighbour").mkdir()
    (tmp_path / "neighbour" / "config.toml").write_text('api_key = "theirs"\n')
    return plugin


def _refusal(folder: Path, name: str) -> str:
    with pytest.raises(ManifestError) as caught:
        read_file(folder, name)
    assert caught.value.path == str(folder / name)
    (problem,) = caught.value.problems
    return problem


def test_a_regular_file_is_read_and_a_missing_one_is_none(folder: Path) -> None:
    assert read_file(folder, "config.toml") == b'word = "mine"\n'
    assert read_file(folder, "sub/data.txt") == b"nested"
    assert read_file(folder, "absent.toml") is None
    assert read_file(folder, "absent/config.toml") is None
    assert read_file(folder.parent / "no-such-folder", "config.toml") is None


def test_a_link_to_a_neighbours_file_is_refused_naming_its_target(folder: Path) -> None:
    (folder / "config.toml").unlink()
    (folder / "config.toml").symlink_to("../neighbour/config.toml")

    problem = _refusal(folder, "config.toml")

    assert problem.startswith("config.toml is a symbolic link (to ../neighbour/config.toml);")
    assert problem.endswith("replace the link with the file itself")


def test_a_link_inside_the_folder_is_refused_too(folder: Path) -> None:
    (folder / "alias.toml").symlink_to("config.toml")

    assert "alias.toml is a symbolic link (to config.toml)" in _refusal(folder, "alias.toml")


def test_a_linked_folder_on_the_way_is_refused(folder: Path) -> None:
    (folder / "linked").symlink_to(folder.parent / "neighbour", target_is_directory=True)

    problem = _refusal(folder, "linked/config.toml")

    assert problem.startswith("linked is a symbolic link (to ")
    assert problem.endswith("replace the link with the folder itself")


def test_the_plugin_folder_itself_may_be_a_link(folder: Path, tmp_path: Path) -> None:
    (tmp_path / "installed").symlink_to(folder, target_is_directory=True)

    assert read_file(tmp_path / "installed", "config.toml") == b'word = "mine"\n'


def test_a_hard_link_is_refused_with_its_link_count(folder: Path) -> None:
    os.link(folder.parent / "neighbour" / "config.toml", folder / "stolen.toml")

    problem = _refusal(folder, "stolen.toml")

    assert problem.startswith("stolen.toml has 2 hard links, so it is also a file elsewhere")
    assert "cp stolen.toml stolen.toml.copy && mv stolen.toml.copy stolen.toml" in problem


def test_a_fifo_is_refused_without_blocking(folder: Path) -> None:
    os.mkfifo(folder / "fifo.toml")  # no writer: an open for reading would block

    assert _refusal(folder, "fifo.toml").startswith(
        "fifo.toml is a named pipe (FIFO), not a regular file;"
    )


def test_a_socket_and_a_folder_are_refused(folder: Path) -> None:
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(folder / "sock.toml"))

    assert _refusal(folder, "sock.toml").startswith("sock.toml is a socket, not a regular file")
    assert _refusal(folder, "sub").startswith("sub is a folder, not a regular file")


def test_a_file_where_a_folder_should_be_is_refused(folder: Path) -> None:
    assert _refusal(folder, "config.toml/x").startswith("config.toml is a regular file, not a")


def test_a_file_over_the_limit_is_refused_with_both_sizes_unread(folder: Path) -> None:
    with (folder / "big.toml").open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)

    problem = _refusal(folder, "big.toml")

    assert problem.startswith("big.toml is 1,048,577 bytes, over the limit of 1 MiB (1,048,576")
    assert read_file(folder, "config.toml", limit=14) == b'word = "mine"\n'
    with pytest.raises(ManifestError, match="is 14 bytes, over the limit of 13 bytes"):
        read_file(folder, "config.toml", limit=13)


def test_a_file_that_grows_while_read_is_cut_at_the_limit() -> None:
    # /proc files say they are empty, then hold more: as a file growing under the reader.
    with pytest.raises(ManifestError, match="status grew while the host read it, over the limit"):
        read_file(Path("/proc/self"), "status", limit=16)


def test_a_file_swapped_in_between_the_check_and_the_open_is_never_read(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (folder / "swap.toml").write_text('api_key = "theirs"\n')
    reopen = plugin_files._reopen

    def swapping(probe: int, parent: int, part: str) -> int:
        os.replace(folder / "swap.toml", folder / "config.toml")  # after the check
        return reopen(probe, parent, part)

    monkeypatch.setattr(plugin_files, "_reopen", swapping)
    # The checked file is the one opened (through /proc/self/fd), whatever the name holds now.
    assert read_file(folder, "config.toml") == b'word = "mine"\n'

    (folder / "swap.toml").write_text('word = "mine"\n')
    real_open = os.open

    def without_proc(path: str, flags: int, *args: int, **kwargs: int) -> int:
        if str(path).startswith("/proc/self/fd/"):
            raise FileNotFoundError(path)  # a host without /proc opens the name again
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", without_proc)
    assert "config.toml was replaced while the host opened it" in _refusal(folder, "config.toml")


def test_names_that_leave_the_folder_are_a_callers_mistake(folder: Path) -> None:
    for name in ("../neighbour/config.toml", "/etc/passwd", "sub/../config.toml", ""):
        with pytest.raises(ValueError, match="is not a path inside a folder"):
            read_file(folder, name)


def test_open_file_hands_back_a_descriptor_of_the_checked_file(folder: Path) -> None:
    fd = open_file(folder, "config.toml")
    assert fd is not None
    try:
        assert os.read(fd, 100) == b'word = "mine"\n'
    finally:
        os.close(fd)


def test_a_write_replaces_the_file_and_never_writes_through_a_link(folder: Path) -> None:
    write_file(folder, "config.toml", b'word = "new"\n')
    assert (folder / "config.toml").read_bytes() == b'word = "new"\n'
    assert sorted(p.name for p in folder.iterdir()) == ["config.toml", "sub"]  # no leftovers

    (folder / "config.toml").unlink()
    (folder / "config.toml").symlink_to("../neighbour/config.toml")
    with pytest.raises(ManifestError, match=r"config\.toml is a symbolic link; the host writes"):
        write_file(folder, "config.toml", b'api_key = "overwritten"\n')
    assert (folder.parent / "neighbour" / "config.toml").read_text() == 'api_key = "theirs"\n'
    assert (folder / "config.toml").is_symlink()


def test_a_write_refuses_a_name_that_is_not_a_plain_file_name(folder: Path) -> None:
    with pytest.raises(ValueError, match="is not a file name"):
        write_file(folder, "../neighbour/config.toml", b"")


@pytest.mark.parametrize(
    "text",
    [
        "deep = " + "[" * 100_000 + "]" * 100_000,  # the parser gives up: RecursionError
        "deep = " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),  # it parses, then is checked
        "[" + ".".join(["a"] * 100_000) + "]",  # dotted keys: no recursion at all
        ".".join(["a"] * (MAX_DEPTH + 1)) + " = 1",
        ".".join(['"a"'] * (MAX_DEPTH + 1)) + " = 1",
        "x = { " + " . ".join(["'a'"] * (MAX_DEPTH + 1)) + " = 1 }",
        "deep = " + "{ a = " * (MAX_DEPTH + 1) + "1" + " }" * (MAX_DEPTH + 1),
    ],
)
def test_toml_nested_past_the_limit_is_refused(text: str) -> None:
    with pytest.raises(ManifestError) as caught:
        parse_toml(text.encode(), "config.toml")

    assert caught.value.problems == [
        f"nested deeper than {MAX_DEPTH} levels of tables and arrays, which the host refuses "
        "to read: flatten it"
    ]


def test_a_key_of_100000_parts_costs_no_more_than_a_flat_file_of_its_size() -> None:
    # tomllib takes time quadratic in a key's parts: 13 s for this 200 KB header (and as
    # "a.a... = 1", memory too: 258 MB for 8,000 parts, so 100,000 would exhaust the host).
    dotted = ("[" + ".".join(["a"] * 100_000) + "]").encode()
    flat = "".join(f"k{i} = 1\n" for i in range(len(dotted) // 8)).encode()
    started = time.perf_counter()
    parse_toml(flat, "config.toml")
    baseline = time.perf_counter() - started

    started = time.perf_counter()
    with pytest.raises(ManifestError, match="nested deeper than"):
        parse_toml(dotted, "config.toml")
    took = time.perf_counter() - started

    assert took < 3 * baseline, f"{took:.3f} s against {baseline:.3f} s for a flat file"


def test_dots_inside_strings_are_not_keys() -> None:
    text = 'x = "' + ".".join(["a"] * 100) + '"\ny = [' + ", ".join(["'a.b'"] * 100) + "]"

    assert parse_toml(text.encode(), "config.toml")["x"].count(".") == 99


def test_toml_nested_to_the_limit_is_read() -> None:
    depth = MAX_DEPTH - 1  # the top-level table is one level
    text = "deep = " + "[" * depth + "]" * depth

    assert "deep" in parse_toml(text.encode(), "config.toml")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a = 99999999999999999999", "an integer of 67 bits; the host reads 64 at most"),
        ("a = " + "9" * 5000, "invalid TOML: Exceeds the limit (4300 digits)"),
        ("a = [", "invalid TOML: "),
    ],
)
def test_toml_a_runner_could_not_be_sent_is_refused(text: str, problem: str) -> None:
    with pytest.raises(ManifestError) as caught:
        parse_toml(text.encode(), "config.toml")

    assert caught.value.problems[0].startswith(problem)


def test_toml_that_is_not_utf8_is_refused() -> None:
    with pytest.raises(ManifestError, match="cannot be read as UTF-8 text"):
        parse_toml(b'a = "\xff"', "config.toml")


@pytest.mark.parametrize(
    "text",
    ["[" * 100_000 + "]" * 100_000, '{"a": ' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1)],
)
def test_json_nested_past_the_limit_is_refused(text: str) -> None:
    with pytest.raises(ManifestError, match=f"nested deeper than {MAX_DEPTH} levels"):
        parse_json(text.encode(), "_manifest.json")


def test_json_errors_keep_their_line_and_column() -> None:
    with pytest.raises(ManifestError) as caught:
        parse_json(b'{\n  "a": 1,\n}', "_manifest.json")

    assert caught.value.problems[0].startswith("line 3, column 1: invalid JSON: ")


def test_a_deep_manifest_is_a_manifest_error(tmp_path: Path) -> None:
    manifest = {"manifest_version": 2, "i18n": {"x": 0}}
    text = json.dumps(manifest).replace("0", "[" * 100_000 + "]" * 100_000)
    (tmp_path / "_manifest.json").write_text(text)

    with pytest.raises(ManifestError, match="nested deeper than 64 levels"):
        load_manifest(tmp_path)


def test_a_linked_manifest_is_a_manifest_error(tmp_path: Path, folder: Path) -> None:
    (folder / "_manifest.json").symlink_to(folder.parent / "neighbour" / "config.toml")

    with pytest.raises(ManifestError, match=r"_manifest\.json is a symbolic link"):
        load_manifest(folder)
