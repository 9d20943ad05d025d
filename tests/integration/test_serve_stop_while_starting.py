"""A stop while serve starts ends the start, instead of waiting for it.

A start can take long: a plugin's ``on_load`` may take up to its timeout,
packages may be installing. A SIGTERM (a service manager stopping serve, a
Ctrl-C) or, over stdio, a client that closed its end, must end serve then, and
leave no runner or fork server behind. The plugin here hangs in ``on_load``
with a ten-minute timeout: a serve that waited for its start would not end.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from pathlib import Path

import psutil
import pytest

from tests.conftest import TEST_PLUGINS
from tests.serving import PLUGHOST

_HELLO = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "impatient", "version": "1"},
    },
}


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
    with (tmp_path / "serve.log").open("w") as log:
        process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, cwd=tmp_path
        )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(json.dumps(_HELLO).encode() + b"\n")
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())  # answered while the plugins start
        family = psutil.Process(process.pid).children(recursive=True)
        if stop == "sigterm":
            process.send_signal(signal.SIGTERM)
        else:
            process.stdin.close()
        code = process.wait(90)  # the plugin's on_load would hold a waiting serve 600 s
        _, left = psutil.wait_procs(family, timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdin.close()
        process.stdout.close()

    assert answer["result"]["serverInfo"]["name"] == "plughost"
    assert code == 0
    assert left == [], [p.pid for p in left]
    assert "plugin(s) loaded" not in (tmp_path / "serve.log").read_text()  # never finished
