"""What the first-answers reader answers before serve has loaded, and what it leaves alone.

The reader (``plughost.mcp.first_answers``) answers a client's ``initialize``
and first ``tools/list`` from the last run's answers; a line the session would
refuse, or read otherwise, is left to the session, so the client gets the
session's error instead of a success it would not have had. The answers go to a
pipe of the test's here; the whole path over a real serve is
tests/integration/test_mcp_first_answers.py. ``folders_state`` reads through a
plugin folder that is a link, and gives up at any other link, as the tool
catalogue does.
"""

from __future__ import annotations

import json
import os
import select
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plughost.mcp import first_answers

VERSION = "2025-11-25"
HELLO = {
    "protocolVersion": VERSION,
    "capabilities": {
        "roots": {"listChanged": True},
        "sampling": {"context": {}, "tools": {}},
        "elicitation": {"form": {}, "url": {}},
        "experimental": {"x": {"n": 1}},
    },
    "clientInfo": {"name": "test", "version": "1"},
}
INITIALIZED = {"protocolVersion": VERSION, "capabilities": {}, "serverInfo": {"name": "plughost"}}
LISTED = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}


@pytest.fixture
def responder() -> Iterator[first_answers._Responder]:
    """A reader whose memo answers VERSION, writing its answers into a pipe of its own."""
    read, write = os.pipe()
    given = first_answers.Given(memo={"initialize": {VERSION: INITIALIZED}, "tools/list": {}})
    given.memo["tools/list"][VERSION] = LISTED
    try:
        yield first_answers._Responder(given, lists_hold=True, out=write)
    finally:
        os.close(read)
        os.close(write)


def _deep(levels: int) -> dict[str, Any]:
    value: Any = []
    for _ in range(levels):
        value = [value]
    return {"n": value}


def _line(request_id: Any, method: str, params: Any) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return json.dumps(message).encode()


def test_a_plain_initialize_and_the_list_after_it_are_answered(
    responder: first_answers._Responder,
) -> None:
    responder._consider(_line(0, "initialize", HELLO))
    responder._consider(_line("1", "tools/list", {}))

    assert responder.given.answers == {0: ("initialize", INITIALIZED), "1": ("tools/list", LISTED)}


@pytest.mark.parametrize(
    "line",
    [
        _line(1, "initialize", {k: v for k, v in HELLO.items() if k != "clientInfo"}),
        _line(1, "initialize", {**HELLO, "capabilities": {"roots": True}}),
        _line(1, "initialize", {**HELLO, "capabilities": {"roots": {"listChanged": "maybe"}}}),
        _line(1, "initialize", {**HELLO, "capabilities": {"sampling": {"context": True}}}),
        _line(1, "initialize", {**HELLO, "clientInfo": {"name": "test"}}),
        _line(1, "initialize", {**HELLO, "protocolVersion": [VERSION]}),
        _line(1, "initialize", {**HELLO, "protocolVersion": {"v": VERSION}}),
        b"\xef\xbb\xbf" + _line(1, "initialize", HELLO),  # a byte-order mark
        _line(1, "initialize", {**HELLO, "clientInfo": {"name": "a\ud800", "version": "1"}}),
        _line(1, "initialize", {**HELLO, "capabilities": {"experimental": {"x": _deep(250)}}}),
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": ' + b"[" * 100_000,
    ],
    ids=[
        "no-client-info",
        "capability-not-an-object",
        "list-changed-not-a-boolean",
        "sampling-context-not-an-object",
        "client-without-version",
        "version-a-list",
        "version-an-object",
        "byte-order-mark",
        "lone-surrogate",
        "nested-deeper-than-the-session-reads",
        "nested-too-deep",
    ],
)
def test_an_initialize_the_session_would_refuse_is_left_to_it(
    responder: first_answers._Responder, line: bytes
) -> None:
    responder._consider(line)

    assert responder.given.answers == {}
    assert responder.done  # and every later line is the session's too


def test_a_request_reusing_the_id_answered_early_is_left_to_the_session(
    responder: first_answers._Responder,
) -> None:
    responder._consider(_line(1, "initialize", HELLO))
    responder._consider(_line(1, "tools/list", {}))

    assert responder.given.answers == {1: ("initialize", INITIALIZED)}
    assert responder.done


def test_a_file_behind_a_linked_plugin_folder_is_part_of_the_state(tmp_path: Path) -> None:
    plugins, elsewhere = tmp_path / "plugins", tmp_path / "elsewhere" / "echo"
    elsewhere.mkdir(parents=True)
    plugins.mkdir()
    (elsewhere / "plugin.py").write_text("tools = 1\n")
    (plugins / "echo").symlink_to(elsewhere, target_is_directory=True)
    before = first_answers.folders_state([str(plugins)])
    (elsewhere / "plugin.py").write_text("tools = 2\n")  # the same size, a new change time
    os.utime(elsewhere / "plugin.py", ns=(0, 0))

    assert before is not None
    assert first_answers.folders_state([str(plugins)]) not in (before, None)


def test_a_link_inside_a_plugin_folder_gives_no_state(tmp_path: Path) -> None:
    plugin = tmp_path / "plugins" / "echo"
    plugin.mkdir(parents=True)
    (plugin / "plugin.py").write_text("tools = 1\n")
    (tmp_path / "helper.py").write_text("x = 1\n")
    assert first_answers.folders_state([str(tmp_path / "plugins")]) is not None
    (plugin / "helper.py").symlink_to(tmp_path / "helper.py")

    assert first_answers.folders_state([str(tmp_path / "plugins")]) is None


def _kept(path: Path, state: str | None, version: str, listed: dict[str, Any]) -> dict[str, Any]:
    """A session's answers recorded as serve records them; the memo file they leave."""
    saved = json.loads(path.read_text()) if path.exists() else {}
    memo = {k: v for k, v in saved.items() if k in ("initialize", "tools/list", "folders")}
    given = first_answers.Given(path=path, key="k", state=state, memo=memo)
    given.record("initialize", {**INITIALIZED, "protocolVersion": version})
    given.record("tools/list", listed)
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def test_a_list_kept_from_other_files_is_dropped_when_another_version_lists(
    tmp_path: Path,
) -> None:
    memo = tmp_path / first_answers.MEMO_FILE
    _kept(memo, "before the edit", VERSION, LISTED)
    edited = {"tools": [*LISTED["tools"], {"name": "added", "inputSchema": {"type": "object"}}]}
    saved = _kept(memo, "after the edit", "2025-06-18", edited)

    assert saved["folders"] == "after the edit"
    assert saved["tools/list"] == {"2025-06-18": edited}  # not VERSION's list of before
    assert set(saved["initialize"]) == {VERSION, "2025-06-18"}


def test_a_list_is_kept_with_the_files_as_serve_started_not_as_they_are_when_it_lists(
    tmp_path: Path,
) -> None:
    plugin = tmp_path / "plugins" / "echo"
    plugin.mkdir(parents=True)
    (plugin / "plugin.py").write_text("tools = 1\n")
    started = first_answers.folders_state([str(tmp_path / "plugins")])
    (plugin / "plugin.py").write_text("tools = 22\n")  # edited while serving, not loaded
    saved = _kept(tmp_path / first_answers.MEMO_FILE, started, VERSION, LISTED)

    assert saved["folders"] == started
    assert started != first_answers.folders_state([str(tmp_path / "plugins")])


def test_a_list_larger_than_a_non_blocking_pipe_holds_goes_out_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read, write = os.pipe()
    os.set_blocking(write, False)  # as a client may leave the descriptor it shares
    tools = [{"name": f"tool_{n}", "description": "x" * 200} for n in range(1000)]
    given = first_answers.Given(memo={"initialize": {VERSION: INITIALIZED}})
    given.memo["tools/list"] = {VERSION: {"tools": tools}}
    responder = first_answers._Responder(given, lists_hold=True, out=write)
    full = threading.Event()  # the pipe is full: the reader waits for room, or gave up
    real_select = select.select

    def waiting(*args: Any) -> Any:
        full.set()
        return real_select(*args)

    monkeypatch.setattr(first_answers.select, "select", waiting)
    failed: list[BaseException] = []

    def answer() -> None:
        try:
            responder._consider(_line(1, "initialize", HELLO))
            responder._consider(_line(2, "tools/list", {}))
        except BaseException as exc:
            failed.append(exc)
        finally:
            full.set()
            os.close(write)

    answering = threading.Thread(target=answer)
    answering.start()
    assert full.wait(30)  # only then is the pipe read, so it did fill up
    received = _until_closed(read)
    answering.join()
    os.close(read)

    assert failed == []
    lines = [json.loads(line) for line in received.splitlines()]
    assert [line["id"] for line in lines] == [1, 2]
    assert lines[1]["result"]["tools"] == tools  # more than the 64 KiB a pipe holds


def _until_closed(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_a_walk_through_more_folders_than_the_bound_gives_no_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = tmp_path / "plugins" / "echo"
    plugin.mkdir(parents=True)
    (plugin / "plugin.py").write_text("tools = 1\n")
    monkeypatch.setattr(first_answers, "_MAX_ENTRIES", 10)
    assert first_answers.folders_state([str(tmp_path / "plugins")]) is not None
    for n in range(10):
        (plugin / f"empty_{n}").mkdir()  # no file in them, but each is walked

    assert first_answers.folders_state([str(tmp_path / "plugins")]) is None


def test_a_line_that_could_nest_past_the_parsers_limit_is_never_parsed(
    responder: first_answers._Responder, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[object] = []
    monkeypatch.setattr(first_answers.json, "loads", lambda text: parsed.append(text))
    head = b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": '

    responder._consider(head + b"[" * 100_000)

    # A RecursionError inside CPython 3.11's parser can leave compile() failing with
    # "AST constructor recursion depth mismatch" for the rest of the process, and
    # serve imports its modules after these lines are read.
    assert parsed == []
    assert responder.done and responder.given.answers == {}


def test_an_mcp_sdk_upgraded_under_the_same_plughost_keeps_no_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site-packages"
    (site / "mcp").mkdir(parents=True)
    (site / "mcp" / "__init__.py").write_text("")
    (site / "mcp-2.3.0.dist-info").mkdir()
    monkeypatch.setattr("sys.path", [str(site)])
    before = first_answers.memo_key(b"", [], "1.0")

    (site / "mcp-2.3.0.dist-info").rename(site / "mcp-2.4.0.dist-info")

    assert first_answers.memo_key(b"", [], "1.0") != before
    assert first_answers.memo_key(b"", [], "1.0") == first_answers.memo_key(b"", [], "1.0")
