"""``plughost serve --mcp-stdio`` answers ``initialize`` and ``tools/list`` before it has loaded.

Real serve processes over their pipes, a client that writes JSON-RPC lines itself
(so the very lines can be compared), and a copy of tests/plugins/echo: the first
start answers from its session and keeps those answers; the next start gives
them before serving begins (its log says so), the same JSON the session gives,
and the session then takes over the same connection for a call. A list given first
that the session would not give is corrected at once (the client is told the
list changed); a plugin edited since the list was kept is listed by the session
only, as the tool catalogue has it. A client asking for a protocol version no
run has answered is left to the session, and so is one whose ``initialize`` the
session refuses: it gets the session's error.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from plughost.mcp.first_answers import MEMO_FILE
from tests.conftest import TEST_PLUGINS
from tests.serving import PLUGHOST, serve_over_pipes

DEADLINE_S = 60.0
GIVEN = "mcp first answers given before serving answered=initialize,tools/list"
VERSION = "2025-11-25"


class _Client:
    """One serve process, spoken to line by line; every message it wrote, in order."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.received: list[dict[str, Any]] = []
        self._buffer = b""

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return self.until(lambda m: m.get("id") == request_id)

    def until(self, wanted: Any) -> dict[str, Any]:
        """The first message not yet seen that ``wanted`` accepts (under the deadline)."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + DEADLINE_S
        seen = 0
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            while True:
                while b"\n" in self._buffer:
                    line, self._buffer = self._buffer.split(b"\n", 1)
                    self.received.append(json.loads(line))
                for message in self.received[seen:]:
                    seen += 1
                    if wanted(message):
                        return message
                remaining = deadline - time.monotonic()
                assert remaining > 0 and selector.select(remaining), "serve did not answer"
                chunk = os.read(self.process.stdout.fileno(), 65536)
                assert chunk, f"serve closed stdout (exit {self.process.poll()})"
                self._buffer += chunk


@contextmanager
def _serve(config: Path, log: Path) -> Iterator[_Client]:
    with serve_over_pipes(config, log, config.parent) as process:
        yield _Client(process)


@contextmanager
def _restart(first_run: dict[str, Any], name: str) -> Iterator[tuple[_Client, Path]]:
    """Serve the first run's configuration again; its stderr is ``name``.log."""
    log = first_run["config"].parent / f"{name}.log"
    with _serve(first_run["config"], log) as client:
        yield client, log


def _session(client: _Client, version: str = VERSION) -> tuple[dict[str, Any], dict[str, Any]]:
    """initialize, initialized, tools/list: the two answers, their ids taken out."""
    hello = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    }
    initialized = client.request(1, "initialize", hello)
    client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    listed = client.request(2, "tools/list", {})
    return initialized["result"], listed["result"]


def _names(listed: dict[str, Any]) -> list[str]:
    return sorted(tool["name"] for tool in listed["tools"])


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A configuration serving a copy of the echo plugin, after one start that kept its answers."""
    folder = tmp_path_factory.mktemp("first")
    plugins = folder / "plugins"
    shutil.copytree(TEST_PLUGINS / "echo", plugins / "echo")
    config = folder / "serve.toml"
    config.write_text(
        f'[host]\ndata_dir = "data/plugins"\nplugin_dirs = [{json.dumps(str(plugins))}]\n'
        "[search]\nenabled = false\n"
    )
    with _serve(config, folder / "first.log") as client:
        initialized, listed = _session(client)
    return {
        "config": config,
        "plugin": plugins / "echo",
        "initialized": initialized,
        "listed": listed,
        "log": (folder / "first.log").read_text(),
    }


def test_the_next_start_answers_first_as_its_session_does_and_then_serves(
    first_run: dict[str, Any],
) -> None:
    config = first_run["config"]
    with _restart(first_run, "second") as (client, log):
        initialized, listed = _session(client)
        called = client.request(3, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        client.send({"jsonrpc": "2.0", "id": 4, "method": "ping"})
        client.until(lambda m: m.get("id") == 4)  # anything the session sent is in by now
    text = log.read_text()

    assert GIVEN not in first_run["log"]  # no memo yet: the session answered
    assert (config.parent / "data" / MEMO_FILE).stat().st_mode & 0o777 == 0o600
    assert GIVEN in text, text
    assert (initialized, listed) == (first_run["initialized"], first_run["listed"])
    assert "echo" in _names(listed)
    assert called["result"]["content"][0]["text"] == "hi"  # the session took over the pipe
    ids = [m.get("id") for m in client.received if "id" in m]
    assert ids == [1, 2, 3, 4]  # each answered once: the session's own answers were dropped
    assert not any(m.get("method") == "notifications/tools/list_changed" for m in client.received)


def test_a_list_given_first_that_the_session_would_not_give_is_corrected_at_once(
    first_run: dict[str, Any],
) -> None:
    config = first_run["config"]
    memo = config.parent / "data" / MEMO_FILE
    kept = json.loads(memo.read_text())
    listed = kept["tools/list"][VERSION]
    listed["tools"] = [tool for tool in listed["tools"] if tool["name"] != "echo"]
    memo.write_text(json.dumps(kept))  # as if echo had been added since the list was kept
    with _serve(config, config.parent / "stale.log") as client:
        _, given = _session(client)
        client.until(lambda m: m.get("method") == "notifications/tools/list_changed")
        relisted = client.request(3, "tools/list", {})["result"]
    with _serve(config, config.parent / "corrected.log") as client:
        _, next_given = _session(client)

    assert "echo" not in _names(given)  # the list kept, given before serving
    assert "echo" in _names(relisted)  # the client was told, and listed the session's
    assert next_given == first_run["listed"]  # the session's answer is kept for the next start


def test_a_plugin_edited_since_the_list_was_kept_is_listed_by_the_session_only(
    first_run: dict[str, Any],
) -> None:
    plugin = first_run["plugin"]
    source = plugin / "plugin.py"
    original = source.read_text()
    source.write_text(
        original.replace(
            '    @Tool(\n        "sleep",',
            '    @Tool("added_since")\n'
            '    async def added_since(self, **kwargs: Any) -> str:\n        return "new"\n\n'
            '    @Tool(\n        "sleep",',
            1,
        )
    )
    try:
        with _restart(first_run, "edited") as (client, log):
            _, listed = _session(client)
    finally:
        source.write_text(original)

    # as the catalogue does: a changed plugin's tools are known only live
    assert "mcp first answers given before serving answered=initialize\n" in log.read_text()
    assert "added_since" in _names(listed)


def test_a_client_asking_for_a_version_no_run_answered_is_left_to_the_session(
    first_run: dict[str, Any],
) -> None:
    with _restart(first_run, "other-version") as (client, log):
        initialized, listed = _session(client, version="2025-06-18")

    assert "first answers given" not in log.read_text()
    assert initialized["protocolVersion"] == "2025-06-18"
    assert "echo" in _names(listed)


def test_the_catalogue_file_looked_at_first_is_the_one_serve_keeps() -> None:
    from plughost.cli import serve_catalogue
    from plughost.mcp import first_answers

    assert first_answers.CATALOGUE_FILE == serve_catalogue.CATALOGUE_FILE


def test_an_initialize_the_session_refuses_gets_the_sessions_error_not_the_kept_answer(
    first_run: dict[str, Any],
) -> None:
    memo = json.loads((first_run["config"].parent / "data" / MEMO_FILE).read_text())
    hello = {"protocolVersion": VERSION, "capabilities": {}}  # no clientInfo
    with _restart(first_run, "refused") as (client, log):
        refused = client.request(1, "initialize", hello)

    assert VERSION in memo["initialize"]  # a kept answer was there to give
    assert refused["error"]["code"] == -32602, refused
    assert "first answers given" not in log.read_text()


def test_serve_whose_working_directory_is_gone_still_answers(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    plugins = tmp_path / "plugins"  # none: a runner, too, needs a working directory
    plugins.mkdir()
    # --plugins, not --config: the launch memo of a configuration's upstreams needs a cwd too
    argv = [*PLUGHOST, "serve", "--no-watch", "--mcp-stdio", "--plugins", str(plugins)]
    shell = 'cd "$1" && rmdir "$1" && shift && exec "$@"'  # the directory goes before serve runs
    log = tmp_path / "gone.log"
    with log.open("w") as errors:
        process = subprocess.Popen(
            ["/bin/sh", "-c", shell, "sh", str(gone), *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
        )
    client = _Client(process)
    try:
        initialized, _ = _session(client)
    finally:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.close()
        try:
            process.wait(30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            process.stdout.close()

    assert not gone.exists()
    assert initialized["serverInfo"]["name"] == "plughost"
    assert "first_answers" not in log.read_text()
