"""Paths in an MCP server's table are read as every other path in the file: relative to it."""

from __future__ import annotations

from pathlib import Path

from plughost.cli.serve_config import ServeConfig


def _load(tmp_path: Path, text: str) -> ServeConfig:
    folder = tmp_path / "etc"
    folder.mkdir()
    config = folder / "plughost.toml"
    config.write_text(text, encoding="utf-8")
    return ServeConfig.load(config)


def test_relative_server_paths_are_relative_to_the_file_not_the_working_directory(
    tmp_path: Path,
) -> None:
    config = _load(
        tmp_path,
        """
[mcp.servers.files]
command = "mcp-server-files"
cwd = "work"
data_dir = "state/files"
read = ["docs", "/srv/shared"]
write = ["out"]
""",
    )
    etc = tmp_path / "etc"
    files = config.mcp.servers["files"]

    assert files.cwd == str(etc / "work")
    assert files.data_dir == str(etc / "state/files")
    assert files.read == [str(etc / "docs"), "/srv/shared"]  # an absolute path stays
    assert files.write == [str(etc / "out")]


def test_a_table_pasted_from_another_host_has_its_paths_resolved_too(tmp_path: Path) -> None:
    config = _load(tmp_path, '[mcp.mcpServers.pasted]\ncommand = "x"\ndataDir = "state"\n')

    assert config.mcp.servers["pasted"].data_dir == str(tmp_path / "etc" / "state")


def test_a_server_without_data_dir_keeps_its_files_beside_the_hosts_data_dir(
    tmp_path: Path,
) -> None:
    config = _load(
        tmp_path,
        """
[host]
data_dir = "/var/lib/plughost/plugins"

[mcp.servers.time]
command = "mcp-server-time"

[mcp.servers.remote]
url = "http://127.0.0.1:9/mcp"
""",
    )

    assert config.mcp.servers["time"].data_dir == "/var/lib/plughost/mcp/time"
    assert config.mcp.servers["remote"].data_dir is None  # no process of ours to give one


def test_without_host_data_dir_a_servers_files_are_where_the_docs_say(tmp_path: Path) -> None:
    config = _load(tmp_path, '[mcp.servers.time]\ncommand = "mcp-server-time"\n')

    assert config.mcp.servers["time"].data_dir == str(Path("data/mcp/time"))
