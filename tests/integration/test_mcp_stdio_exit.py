"""``plughost serve --mcp-stdio`` ends when its client closes stdin, whatever threads still run.

Clients that open a session per call (langchain-mcp-adapters, llama-index) close
stdin after each call and wait for the process to end. Serve must not wait for
work of its own that no longer matters, such as the search model still loading in
a worker thread. Here a thread that never ends stands for all of them: a serve
that joined its threads at exit would never end.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import TEST_PLUGINS

_NEVER_ENDING = (
    "import sys, threading; "
    "threading.Thread(target=threading.Event().wait, name='never-ends').start(); "
    "sys.argv = ['plughost', *sys.argv[1:]]; "
    "from plughost.cli.main import main; main()"
)
_HELLO = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "per-call", "version": "1"},
    },
}


def test_serve_over_stdio_ends_when_its_client_closes_stdin(tmp_path: Path) -> None:
    argv = [sys.executable, "-c", _NEVER_ENDING, "serve", "--no-watch", "--mcp-stdio"]
    argv += ["--plugins", str(TEST_PLUGINS / "echo")]
    with (tmp_path / "serve.log").open("w") as log:
        process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, cwd=tmp_path
        )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(json.dumps(_HELLO).encode() + b"\n")
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())
        process.stdin.close()  # the session is over
        code = process.wait(60)  # a serve that joined the thread would never end
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()

    assert answer["result"]["serverInfo"]["name"] == "plughost"
    assert code == 0
