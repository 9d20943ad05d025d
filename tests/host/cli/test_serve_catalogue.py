"""Each tool source's fingerprint changes with what can change its tools, and only then."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from plughost.cli.serve_catalogue import catalogue_for, fingerprints
from plughost.cli.serve_config import ServeConfig
from plughost_sdk.models import ToolSpec

PLUGIN = Path(__file__).resolve().parents[2] / "plugins" / "ordered_content"
KEY = "plugin:tests.ordered_content"


def config_file(tmp_path: Path, command: str = "mcp-server-time") -> ServeConfig:
    if not (tmp_path / "plugins" / "ordered_content").exists():
        shutil.copytree(PLUGIN, tmp_path / "plugins" / "ordered_content")
    file = tmp_path / "plughost.toml"
    file.write_text(
        f"[host]\nplugin_dirs = [{json.dumps(str(tmp_path / 'plugins'))}]\n"
        f"[mcp.servers.time]\ncommand = {json.dumps(command)}\n"
        '[mcp.servers.git]\ncommand = "mcp-server-git"\n'
    )
    return ServeConfig.load(file)


def test_a_plugins_fingerprint_follows_its_files_and_its_config_toml(tmp_path: Path) -> None:
    config = config_file(tmp_path)
    folder = tmp_path / "plugins" / "ordered_content"
    first = fingerprints(config)
    (folder / "config.toml").write_text("greeting = 'hi'\n")
    configured = fingerprints(config)
    (folder / "plugin.py").write_text((folder / "plugin.py").read_text() + "\n# edited\n")
    edited = fingerprints(config)

    assert len({first[KEY], configured[KEY], edited[KEY]}) == 3
    assert first["host"] == configured["host"] == edited["host"]


def test_a_servers_fingerprint_follows_its_own_table_only(tmp_path: Path) -> None:
    before = fingerprints(config_file(tmp_path))
    after = fingerprints(config_file(tmp_path, command="mcp-server-time-2"))

    assert before["mcp:time"] != after["mcp:time"]
    assert before["mcp:git"] == after["mcp:git"]
    assert before[KEY] == after[KEY] and before["host"] == after["host"]


def test_the_catalogue_lives_beside_the_plugin_data_directories(tmp_path: Path) -> None:
    config = config_file(tmp_path)

    assert catalogue_for(config).path == config.host.data_dir.parent / "tool-catalogue.json"


def test_a_plugin_that_cannot_be_digested_makes_every_start_cold(tmp_path: Path) -> None:
    config = config_file(tmp_path)
    (tmp_path / "plugins" / "ordered_content" / "elsewhere").symlink_to(tmp_path)
    catalogue = catalogue_for(config)
    listed = [
        ToolSpec(name="ordered", provider_type="plugin", metadata={"plugin_id": KEY[7:]}),
        ToolSpec(name="tool_search", provider_type="builtin"),
    ]
    catalogue.save(listed, fingerprints(config))

    assert catalogue.load(fingerprints(config)) is None  # never the list without its tools
