"""``plughost serve --mcp-stdio`` ends when it is told to, whatever it is still doing.

Clients that open a session per call (langchain-mcp-adapters, llama-index) close
stdin after each call and wait for the process to end; a service manager or a
Ctrl-C sends SIGTERM. Serve must then end without waiting for work that no longer
matters: a thread still busy (the search model loading), or a start still under
way (a plugin's ``on_load`` may take up to its timeout, packages may install),
and leave no runner or fork server behind.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.conftest import TEST_PLUGINS
from tests.serving import INITIALIZE, PLUGHOST

_NEVER_ENDING = (
    "import sys, threading; "
    "threading.Thread(target=threading.Event().wait, name='never-ends').start(); "
    "sys.argv = ['plughost', *sys.argv[1:]]; "
    "from plughost.cli.main import main; main()"
)
"""serve, with a thread that never ends started first (it stands for any busy one)."""


def _serve(argv: list[str], folder: Path) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    """Start serve over stdio and shake hands; the process and its ``initialize`` answer."""
    with (folder / "serve.log").open("w") as log:
        process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, cwd=folder
        )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    process.stdin.flush()
    return process, json.loads(process.stdout.readline())


def _reap(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
        process.wait()
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            stream.close()


def test_serve_over_stdio_ends_when_its_client_closes_stdin(tmp_path: Path) -> None:
    argv = [sys.executable, "-c", _NEVER_ENDING, "serve", "--no-watch", "--mcp-stdio"]
    process, answer = _serve([*argv, "--plugins", str(TEST_PLUGINS / "echo")], tmp_path)
    try:
        assert process.stdin is not None
        process.stdin.close()  # the session is over
        code = process.wait(60)  # a serve that joined the thread would never end
    finally:
        _reap(process)

    assert answer["result"]["serverInfo"]["name"] == "plughost"
    assert code == 0


@pytest.mark.parametrize("stop", ["sigterm", "stdin_closed"])
def test_serve_stopped_while_a_plugin_loads_ends_and_leaves_nothing_behind(
    tmp_path: Path, stop: str
) -> None:
    plugins = tmp_path / "plugins"
    shutil.copytree(TEST_PLUGINS / "breakable", plugins / "breakable")
    (plugins / "breakable" / "fault.txt").write_text("on_load_hang")
    config = tmp_path / "serve.toml"
    config.write_text(
        '[host]\nplugin_dirs = ["plugins"]\n'
        "[host.runner]\nready_timeout = 600\non_load_timeout = 600\n"
    )
    argv = [*PLUGHOST, "serve", "--no-watch", "--mcp-stdio", "--config", str(config)]
    process, answer = _serve(argv, tmp_path)  # answered while the plugins start
    try:
        family = psutil.Process(process.pid).children(recursive=True)
        if stop == "sigterm":
            process.send_signal(signal.SIGTERM)
        else:
            assert process.stdin is not None
            process.stdin.close()
        code = process.wait(90)  # the plugin's on_load would hold a waiting serve 600 s
        _, left = psutil.wait_procs(family, timeout=30)
    finally:
        _reap(process)

    assert answer["result"]["serverInfo"]["name"] == "plughost"
    assert code == 0
    assert left == [], [p.pid for p in left]
    assert "plugin(s) loaded" not in (tmp_path / "serve.log").read_text()  # never finished
