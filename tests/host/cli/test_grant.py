"""``plughost grant``: network grants written to plughost.toml, as serve will read them."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from click.testing import CliRunner

from plughost.cli.main import cli
from plughost.cli.serve_config import ServeConfig
from tests.conftest import TEST_PLUGINS


def test_grant_adds_to_the_plugins_grants_and_keeps_the_operators_comments(
    tmp_path: Path,
) -> None:
    config = tmp_path / "plughost.toml"
    config.write_text("# production bot\n[host]\nplugin_dirs = []  # set by the deploy\n")

    plugins = ["--plugins", str(TEST_PLUGINS / "echo")]  # a plughost plugin: no default
    first = CliRunner().invoke(
        cli, ["grant", "tests.echo", "api.example.com", "--config", str(config), *plugins]
    )
    again = CliRunner().invoke(
        cli,
        ["grant", "tests.echo", "*.example.org", "api.example.com", "--config", str(config)],
    )

    assert first.exit_code == 0 and again.exit_code == 0, again.output
    text = config.read_text()
    assert "# production bot" in text and "# set by the deploy" in text
    grants = ServeConfig.load(config).host.network_grants
    assert grants == {"tests.echo": ["api.example.com", "*.example.org"]}


def test_grant_refuses_a_url_and_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    config = tmp_path / "plughost.toml"
    config.write_text("[host]\n")

    result = CliRunner().invoke(
        cli, ["grant", "community.weather", "https://api.example.com/v1", "--config", str(config)]
    )

    assert result.exit_code == 2
    assert "is a URL" in result.output and "api.example.com" in result.output
    assert config.read_text() == "[host]\n"


def test_grant_for_an_mcp_server_goes_to_its_table_and_says_so_in_json(tmp_path: Path) -> None:
    config = tmp_path / "plughost.toml"
    config.write_text('[mcp.servers.fetch]\ncommand = "mcp-server-fetch"\n')

    result = CliRunner().invoke(
        cli, ["grant", "fetch", "*", "--mcp", "--json", "--config", str(config)]
    )

    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["network"] == ["*"]
    assert tomllib.loads(config.read_text())["mcp"]["servers"]["fetch"]["network"] == ["*"]


def test_grant_for_an_unknown_mcp_server_is_a_usage_error(tmp_path: Path) -> None:
    config = tmp_path / "plughost.toml"
    config.write_text("")

    result = CliRunner().invoke(cli, ["grant", "nope", "*", "--mcp", "--config", str(config)])

    assert result.exit_code == 2 and "no [mcp.servers.nope]" in result.output


def test_granting_a_maibot_plugin_keeps_the_default_it_had_before_the_file_named_it(
    tmp_path: Path,
) -> None:
    """Naming a plugin in network_grants replaces MaiBot's default: the grant carries it over."""
    config = tmp_path / "plughost.toml"
    folder = TEST_PLUGINS / "folder_keeper"  # written for MaiBot: public hosts by default
    config.write_text(f"[host]\nplugin_dirs = [{json.dumps(str(folder))}]\n")

    result = CliRunner().invoke(
        cli, ["grant", "community.folder-keeper", "localhost:9999", "--config", str(config)]
    )

    assert result.exit_code == 0, result.output
    grants = ServeConfig.load(config).host.network_grants
    assert grants == {"community.folder-keeper": ["*", "localhost:9999"]}


def test_granting_a_plugin_the_host_cannot_find_says_to_pass_its_folder(tmp_path: Path) -> None:
    """Its default grants would be lost without its manifest: refuse rather than guess."""
    config = tmp_path / "plughost.toml"

    result = CliRunner().invoke(
        cli, ["grant", "internetsb.maizone", "localhost:9999", "--config", str(config)]
    )

    assert result.exit_code == 2
    assert "--plugins" in result.output and not config.exists()
