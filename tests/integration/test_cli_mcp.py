"""``plughost tools`` and ``plughost call`` with the MCP servers of a configuration file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.mcp_servers.harness import DEMO_SERVER

PLUGHOST = [sys.executable, "-m", "plughost"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PLUGHOST, *args], capture_output=True, text=True, timeout=90, check=False
    )


def test_tools_and_call_reach_the_mcp_servers_of_a_config_file(tmp_path: Path) -> None:
    config = tmp_path / "plughost.toml"
    config.write_text(
        "[mcp.servers.demo]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f'args = [{json.dumps(str(DEMO_SERVER))}, "stdio"]\n',
        encoding="utf-8",
    )

    listed = run("tools", "--config", str(config), "--json")
    called = run(
        "call", "mcp_demo_echo", "--config", str(config), "--args", '{"text": "hi"}', "--json"
    )
    nothing = run("tools", "--config", str(tmp_path / "missing.toml"))

    assert listed.returncode == 0, listed.stderr
    names = {tool["name"] for tool in json.loads(listed.stdout)["tools"]}
    assert {"mcp_demo_echo", "mcp_demo_add"} <= names
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout)["content"] == "echo: hi"
    assert nothing.returncode == 2
    assert "file not found" in nothing.stderr
