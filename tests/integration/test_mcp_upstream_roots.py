"""An upstream is offered roots only when plughost has some to give.

plughost answers a server's ``roots/list`` with the ``roots`` of its ``[mcp]``
table. With none configured, offering the capability would only change what a
server does, away from what it does for a client that offers none:
server-everything lists a ``get-roots-list`` tool to such a client, and, told to
end while it asks for roots, waits for an answer that cannot come until it is
sent SIGTERM, two seconds later on every stop of serve, so on every call of a
client that starts serve per call.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from plughost.mcp.upstream_requests import UpstreamRequests
from tests.serving import INITIALIZE, PLUGHOST

ROOT = Path(__file__).resolve().parents[2]
EVERYTHING = ROOT / ".venv-mcp-servers" / "node" / "node_modules" / ".bin" / "mcp-server-everything"


def test_the_roots_capability_is_offered_only_with_roots_to_give() -> None:
    assert "list_roots_callback" not in UpstreamRequests().callbacks("files")
    assert "list_roots_callback" in UpstreamRequests(["file:///srv"]).callbacks("files")
    # the other asks are always offered: they are passed on to the calling client
    assert {"sampling_callback", "elicitation_callback"} <= set(
        UpstreamRequests().callbacks("files")
    )


def _request(request_id: int, method: str, params: dict[str, object]) -> bytes:
    line = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return json.dumps(line).encode() + b"\n"


def test_a_gateway_with_no_roots_lists_and_ends_as_its_upstream_does_for_a_client_without(
    tmp_path: Path,
) -> None:
    if not EVERYTHING.exists() or shutil.which("node") is None:
        pytest.fail(
            "server-everything and node are needed: run scripts/install_test_mcp_servers.sh"
        )
    config = tmp_path / "up.toml"
    config.write_text(
        f'[mcp.servers.everything]\ncommand = "node"\nargs = [{json.dumps(str(EVERYTHING))}]\n'
    )
    log_path = tmp_path / "serve.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [*PLUGHOST, "serve", "--no-watch", "--mcp-stdio", "--config", str(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            cwd=tmp_path,
        )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        # a call first: it waits for the upstream, whose listing is then the live one
        process.stdin.write(
            _request(
                2, "tools/call", {"name": "mcp_everything_echo", "arguments": {"message": "hi"}}
            )
        )
        process.stdin.write(_request(3, "tools/list", {}))
        process.stdin.flush()
        answers: dict[int, dict[str, Any]] = {}
        while len(answers) < 3:
            answer = json.loads(process.stdout.readline())
            if "id" in answer:
                answers[answer["id"]] = answer
        process.stdin.close()  # the session is over, as a client that starts serve per call
        code = process.wait(60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
    names = [tool["name"] for tool in answers[3]["result"]["tools"]]
    log_text = log_path.read_text()

    assert code == 0
    assert "did not end within" not in log_text, log_text[-2000:]  # it ended on its own
    assert answers[2]["result"]["content"][0]["text"] == "Echo: hi"
    assert "mcp_everything_echo" in names
    assert "mcp_everything_get-roots-list" not in names
