"""``plughost serve`` starts its stdio upstreams from the memo of their last launch, early.

Real ``plughost serve --mcp-stdio`` processes, each spoken to over its pipes,
with one sandboxed upstream (tests/mcp_servers/demo_server.py): the second
start adopts the upstream it launched before importing the MCP SDK; a changed
configuration launches nothing early; the memo keeps no value of a server's
``env`` table. What the memo may start, and what a claim refuses, is checked on
:mod:`plughost.mcp.early_launch` itself, in interpreters of their own (its
state is the process's).
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp_servers.harness import DEMO_SERVER, ROOT
from tests.serving import serve_over_pipes

DEADLINE_S = 60.0
SECRET = "s3cret-of-the-demo"
ADOPTED = "mcp server started early"


def _serve(config: Path, log: Path) -> dict[str, Any]:
    """Start serve, call the upstream's ``echo`` once, close stdin; its stderr goes to ``log``."""
    initialize = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    }
    call = {"name": "mcp_demo_echo", "arguments": {"text": "early"}}
    with serve_over_pipes(config, log, ROOT) as process:
        assert process.stdin is not None
        for message in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
        ):
            process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()
        return _answer(process, 2)


def _answer(process: subprocess.Popen[bytes], wanted: int) -> dict[str, Any]:
    assert process.stdout is not None
    deadline = time.monotonic() + DEADLINE_S
    buffer = b""
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while True:
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                message = json.loads(line)
                if message.get("id") == wanted:
                    return message  # type: ignore[no-any-return]
            remaining = deadline - time.monotonic()
            assert remaining > 0 and selector.select(remaining), "serve did not answer in time"
            chunk = os.read(process.stdout.fileno(), 65536)
            assert chunk, f"serve closed stdout before answering (exit {process.poll()})"
            buffer += chunk


def _echoed(answer: dict[str, Any]) -> str:
    result = answer["result"]
    assert not result.get("isError"), result
    return "".join(block.get("text", "") for block in result["content"])


def _write_config(folder: Path) -> Path:
    # BM25 alone: an embedding model loading in a worker thread would hold every
    # serve's exit until it had loaded, and no test here ranks a search. The
    # upstream's start is not timed here: on a busy machine it may take over 10 s.
    config = folder / "up.toml"
    config.write_text(
        textwrap.dedent(
            f"""\
            [host]
            data_dir = "data/plugins"
            temp_dir = "temp"
            [mcp.servers.demo]
            command = {json.dumps(sys.executable)}
            args = [{json.dumps(str(DEMO_SERVER))}]
            data_dir = {json.dumps(str(folder / "demo-home"))}
            env = {{ DEMO_TOKEN = "{SECRET}" }}
            connect_timeout = {DEADLINE_S}
            [search]
            semantic = "off"
            """
        )
    )
    return config


@pytest.fixture(scope="module")
def two_starts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], list[str]]:
    """A config, and the echo and the stderr of its first and second start."""
    folder = tmp_path_factory.mktemp("early")
    config = _write_config(folder)
    echoes, logs = [], []
    for start in ("first", "second"):
        log = folder / f"{start}.log"
        echoes.append(_echoed(_serve(config, log)))
        logs.append(log.read_text())
    return config, echoes, logs


def test_the_second_start_adopts_the_upstream_it_launched_early(
    two_starts: tuple[Path, list[str], list[str]],
) -> None:
    _, echoes, logs = two_starts

    assert echoes == ["echo: early", "echo: early"]
    assert ADOPTED not in logs[0]  # no memo yet: the upstream started as always
    assert f"{ADOPTED} adopted server=demo" in logs[1], logs[1]


def test_the_launch_memo_keeps_no_value_of_a_servers_env_table(
    two_starts: tuple[Path, list[str], list[str]],
) -> None:
    config, _, _ = two_starts
    memo = config.parent / "data" / "mcp-launch.json"

    text = memo.read_text()
    assert "DEMO_TOKEN" in text and SECRET not in text
    assert memo.stat().st_mode & 0o777 == 0o600


def test_a_changed_configuration_launches_nothing_early(remembered: tuple[Path, Path]) -> None:
    config, _ = remembered
    config.write_text(config.read_text() + "# edited\n")
    log = config.parent / "edited.log"

    assert _echoed(_serve(config, log)) == "echo: early"
    assert ADOPTED not in log.read_text()


def _in_own_interpreter(code: str) -> Any:
    """Run ``code`` in a fresh interpreter from the repository root; return what it prints."""
    script = [sys.executable, "-c", textwrap.dedent(code)]
    printed = subprocess.check_output(script, text=True, timeout=60, cwd=ROOT)
    return json.loads(printed.strip().splitlines()[-1])


def _launch_then(config: Path, then: str) -> Any:
    return _in_own_interpreter(
        f"""
        import json, pathlib
        from plughost import __version__
        from plughost.mcp import early_launch
        early_launch.launch(pathlib.Path({str(config)!r}), __version__)
        launched = early_launch._memo.launched
        {then}
        """
    )


@pytest.fixture(scope="module")
def served_once(two_starts: tuple[Path, list[str], list[str]]) -> tuple[Path, Path]:
    """A config whose memo a real serve wrote (the second of ``two_starts``); and that memo."""
    config, _, _ = two_starts
    return config, config.parent / "data" / "mcp-launch.json"


@pytest.fixture
def remembered(served_once: tuple[Path, Path]) -> Iterator[tuple[Path, Path]]:
    """``served_once``, its config and memo as serve left them again after each test.

    A test may edit either (or have a serve rewrite the memo); the next test
    finds them as the start before it wrote them, whatever the order.
    """
    config, memo = served_once
    source = config.read_bytes()
    written, mode = memo.read_bytes(), memo.stat().st_mode & 0o777
    yield served_once
    config.write_bytes(source)
    memo.chmod(0o600)
    memo.write_bytes(written)
    memo.chmod(mode)


def test_an_early_process_whose_launch_differs_is_killed_not_used(
    remembered: tuple[Path, Path],
) -> None:
    config, _ = remembered

    running, claimed, ended = _launch_then(
        config,
        """
        early = launched["demo"]
        running = early.process.poll() is None
        claimed = early_launch.claim("demo", early.argv, {**early.env, "EXTRA": "1"}, early.cwd)
        print(json.dumps([running, claimed is not None, early.process.poll() is not None]))
        """,
    )

    assert (running, claimed, ended) == (True, False, True)


def test_a_memo_naming_anything_but_the_sandbox_launcher_runs_nothing(
    remembered: tuple[Path, Path], tmp_path: Path
) -> None:
    config, memo = remembered
    marker = tmp_path / "ran"
    data = json.loads(memo.read_text())
    data["servers"]["demo"]["argv"] = [
        "/bin/sh",
        "-c",
        f"touch {marker}",
        "--report-fd",
        "{report}",
    ]
    memo.write_text(json.dumps(data))

    launched = _launch_then(config, "print(json.dumps(sorted(launched)))")

    assert launched == []
    assert not marker.exists()


def test_a_memo_another_user_may_write_is_not_believed(remembered: tuple[Path, Path]) -> None:
    config, memo = remembered
    memo.chmod(0o620)

    refused = _launch_then(config, "print(json.dumps(sorted(launched)))")
    memo.chmod(0o600)
    believed = _launch_then(config, "print(json.dumps(sorted(launched))); early_launch.discard()")

    assert (refused, believed) == ([], ["demo"])


def _launched_early(
    remembered: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> tuple[Any, subprocess.Popen[bytes]]:
    """The demo server's configuration, and its process launched early from the memo."""
    from plughost import __version__
    from plughost.cli.serve_config import ServeConfig
    from plughost.mcp import early_launch

    config, _ = remembered
    monkeypatch.chdir(ROOT)  # where the serve that wrote the memo ran
    monkeypatch.setattr(early_launch, "_memo", early_launch._Memo())
    early_launch.launch(config, __version__)
    return ServeConfig.load(config).mcp.servers["demo"], early_launch._memo.launched["demo"].process


async def test_an_early_process_that_cannot_be_adopted_is_killed_and_the_server_started_anew(
    remembered: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from plughost.mcp import early_launch
    from plughost.mcp.adopted_process import AdoptedProcess
    from plughost.mcp.session import open_client

    server, early = _launched_early(remembered, monkeypatch)

    async def no_pidfd(process: Any) -> AdoptedProcess:
        raise OSError("no pidfd here")

    monkeypatch.setattr(AdoptedProcess, "adopt", no_pidfd)
    caplog.set_level(logging.INFO, logger="plughost.mcp.session")
    try:
        async with open_client(server, _ignore, lambda reason: None, name="demo") as client:
            tools = [tool.name for tool in (await client.list_tools()).tools]
    finally:
        early_launch.discard()

    assert "started early not adopted server=demo reason=no pidfd here" in caplog.text
    assert early.poll() is not None
    assert "echo" in tools


async def test_an_early_process_that_ended_is_claimed_and_its_end_reported_not_started_again(
    remembered: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from plughost.mcp import early_launch
    from plughost.mcp.session import open_client

    server, early = _launched_early(remembered, monkeypatch)
    os.killpg(early.pid, signal.SIGKILL)  # it ends before serve gets to it
    early.wait(DEADLINE_S)  # and is reaped: its pid may be another process's by now
    ended: list[str] = []
    try:
        with pytest.raises(Exception) as failed:  # noqa: PT011 - the SDK's, wrapped or not
            async with open_client(server, _ignore, ended.append, name="demo") as client:
                await client.list_tools()
    finally:
        early_launch.discard()

    # a fresh start would have answered the listing: the early process's end is the answer
    assert "demo" not in early_launch._memo.launched
    assert ended and "SIGKILL" in ended[0], (ended, failed.value)


async def _ignore(message: Any) -> None:
    return None
