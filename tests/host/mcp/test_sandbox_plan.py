"""What a stdio MCP server may read and write, decided from its configuration alone."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from plughost.mcp.config import MCPServerConfig
from plughost.mcp.sandbox import SandboxState, install_roots, sandboxed


def _venv_script(root: Path) -> Path:
    """A console script of a virtualenv, as pip writes one."""
    venv = root / "venv"
    (venv / "bin").mkdir(parents=True)
    base = Path(sys.base_prefix).resolve()
    (venv / "pyvenv.cfg").write_text(f"home = {base / 'bin'}\n")
    script = venv / "bin" / "mcp-server-x"
    script.write_text(f"#!{venv / 'bin' / 'python'}\nimport x\n")
    (venv / "bin" / "python").symlink_to(Path(sys.executable).resolve())
    script.chmod(0o755)
    return script


def test_a_virtualenv_script_brings_its_venv_and_the_python_it_was_made_from(
    tmp_path: Path,
) -> None:
    script = _venv_script(tmp_path)

    roots = install_roots(str(script), dict(os.environ))

    assert str(tmp_path / "venv") in roots
    assert str(Path(sys.base_prefix).resolve()) in roots


def test_a_node_modules_bin_link_brings_its_whole_project(tmp_path: Path) -> None:
    package = tmp_path / "project" / "node_modules" / "@scope" / "server" / "dist"
    package.mkdir(parents=True)
    (package / "index.js").write_text("#!/usr/bin/env node\n")
    bin_dir = tmp_path / "project" / "node_modules" / ".bin"
    bin_dir.mkdir()
    (bin_dir / "server").symlink_to(package / "index.js")

    roots = install_roots(str(bin_dir / "server"), {"PATH": ""})

    assert roots[0] == str(tmp_path / "project")


async def test_named_directories_and_data_files_are_writable_and_scripts_read_only(
    tmp_path: Path,
) -> None:
    root, log, script = tmp_path / "notes", tmp_path / "calls.log", tmp_path / "server.py"
    root.mkdir()
    log.touch()
    script.write_text("print()\n")
    config = MCPServerConfig(
        command=sys.executable,
        args=[str(script), str(root), f"--log={log}"],
        data_dir=str(tmp_path / "data"),
        read=[str(tmp_path / "models")],
    )

    async with sandboxed("files", config, SandboxState()) as plan:
        policy = json.loads(plan.argv[plan.argv.index("--policy") + 1])
        os.close(plan.passed)

    assert str(root) in policy["write"] and str(log) in policy["write"]
    assert str(script) not in policy["write"] and str(tmp_path) in policy["read"]
    assert str(tmp_path / "data") in policy["write"]
    assert str(tmp_path / "models") in policy["read"]
    assert plan.env["HOME"] == str(tmp_path / "data")
    assert policy["egress"] == ""


async def test_a_program_that_is_not_there_fails_as_it_would_unsandboxed(tmp_path: Path) -> None:
    config = MCPServerConfig(command="no-such-mcp-server", data_dir=str(tmp_path))

    with pytest.raises(FileNotFoundError, match="no-such-mcp-server"):
        async with sandboxed("nope", config, SandboxState()):
            pass


async def test_network_grants_give_the_server_a_gate_that_lives_as_long_as_the_plan(
    tmp_path: Path,
) -> None:
    config = MCPServerConfig(
        command=sys.executable, network=["api.example.com"], data_dir=str(tmp_path)
    )
    state = SandboxState()

    async with sandboxed("fetch", config, state) as plan:
        policy = json.loads(plan.argv[plan.argv.index("--policy") + 1])
        os.close(plan.passed)
        assert state.gate is not None and Path(policy["egress"]).is_socket()

    assert not Path(policy["egress"]).exists()


def test_a_command_that_is_a_fifo_is_never_opened(tmp_path: Path) -> None:
    """Reading its ``#!`` line would block the host until a writer came."""
    fifo = tmp_path / "bin" / "server"
    fifo.parent.mkdir()
    os.mkfifo(fifo)

    roots = install_roots(str(fifo), {"PATH": ""})

    assert roots == [str(tmp_path)]
