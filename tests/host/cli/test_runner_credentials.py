"""``plughost runner-credentials new``: allow-list entries, folder pins and grants."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from plughost.cli.credentials import runner_credentials
from plughost.remote.keys import AllowEntry, RemoteKeyStore
from plughost_sdk.plugin_digest import plugin_sha256

PLUGIN = Path(__file__).parents[2] / "plugins" / "caller"


def issue(tmp_path: Path, *args: str) -> tuple[int, str]:
    config = tmp_path / "plughost.toml"
    config.write_text(f'[host.remote]\nkeys_dir = "{tmp_path / "keys"}"\n')
    out = tmp_path / "runner.json"
    result = CliRunner().invoke(
        runner_credentials, ["new", "box", *args, "--out", str(out), "--config", str(config)]
    )
    return result.exit_code, result.output


def test_pin_replaces_a_plugin_entry_of_the_same_id_with_its_digest_and_declarations(
    tmp_path: Path,
) -> None:
    code, output = issue(
        tmp_path,
        "--plugin",
        "tests.caller",
        "--plugin",
        "tests.other==2.0.0",
        "--pin",
        str(PLUGIN),
        "--grant",
        "tools.call",
    )
    assert code == 0, output
    (credential,) = RemoteKeyStore(tmp_path / "keys").credentials()
    assert credential.allow == (
        AllowEntry("tests.other", "2.0.0"),
        AllowEntry("tests.caller", "1.0.0", plugin_sha256(PLUGIN)),
    )
    # What the copy declares, loaded in a throwaway runner: the host registers no more.
    assert credential.declares == {
        plugin_sha256(PLUGIN): frozenset({"tool:relay", "tool:shout_back", "tool:recurse"})
    }
    assert credential.undeclared(plugin_sha256(PLUGIN), ["tool:relay", "tool:new"]) == ["tool:new"]
    assert credential.grants == ("tools.call",)
    assert credential.grants_capability("tools.call")
    assert not credential.grants_capability("send.text")
    handed_out = json.loads((tmp_path / "runner.json").read_text())
    assert handed_out["grants"] == ["tools.call"]


def test_a_pin_in_an_entry_is_checked_against_the_offered_hash() -> None:
    entry = AllowEntry.parse(f"tests.caller==1.0.0@sha256:{'a' * 64}")
    assert str(entry) == f"tests.caller==1.0.0@sha256:{'a' * 64}"
    assert entry.refusal("1.0.0", "a" * 64) is None
    assert entry.refusal("1.0.0", "b" * 64) == (
        f"files sha256:{'a' * 64} expected, sha256:{'b' * 64} offered (the runner's copy of "
        "the plugin differs from the pinned one in some file)"
    )
    assert entry.refusal("1.0.0", "", "plugin.py is a symbolic link") == (
        f"files sha256:{'a' * 64} expected; the runner has no digest of the folder: "
        "plugin.py is a symbolic link"
    )
    with pytest.raises(ValueError, match="64 hex digits"):
        AllowEntry.parse("tests.caller@sha256:beef")


@pytest.mark.parametrize("grant", ["tools", "tools call", ""])
def test_a_malformed_grant_is_refused(tmp_path: Path, grant: str) -> None:
    code, output = issue(tmp_path, "--plugin", "tests.caller", "--grant", grant)
    assert code != 0 and "a grant is 'group.name'" in output


def test_pin_refuses_a_folder_holding_a_link(tmp_path: Path) -> None:
    folder = tmp_path / "caller"
    shutil.copytree(PLUGIN, folder)
    (folder / "helper.py").symlink_to(tmp_path / "elsewhere.py")

    code, output = issue(tmp_path, "--pin", str(folder))

    assert code != 0
    assert "helper.py is a symbolic link" in output and "replace it with a copy" in output


def test_pin_of_a_plugin_that_does_not_load_here_names_the_digest_only_entry(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "crash"
    shutil.copytree(PLUGIN.parent / "crash_on_import", folder)
    manifest = json.loads((folder / "_manifest.json").read_text())

    code, output = issue(tmp_path, "--pin", str(folder))

    assert code != 0
    assert f"plugin {manifest['id']} did not load here" in output
    digest = plugin_sha256(folder)
    assert f"--plugin {manifest['id']}=={manifest['version']}@sha256:{digest}" in " ".join(
        output.split()
    )
    assert not (tmp_path / "runner.json").exists()


@pytest.mark.parametrize("command", [[], ["new"], ["list"], ["revoke"]])
def test_every_subcommand_teaches_with_an_example(command: list[str]) -> None:
    result = CliRunner().invoke(runner_credentials, [*command, "--help"])

    assert result.exit_code == 0
    assert "Example" in result.output
    assert "plughost runner-credentials " in result.output


def test_list_json_gives_each_credential_its_plugins_and_grants(tmp_path: Path) -> None:
    assert issue(tmp_path, "--plugin", "author.ocr==1.2.0", "--grant", "tools.call")[0] == 0
    config = tmp_path / "plughost.toml"

    result = CliRunner().invoke(runner_credentials, ["list", "--config", str(config), "--json"])

    assert result.exit_code == 0, result.output
    listed = json.loads(result.output)
    assert listed["keys_dir"] == str(tmp_path / "keys")
    assert listed["credentials"] == [
        {
            "name": "box",
            "plugins": [{"plugin_id": "author.ocr", "version": "1.2.0", "sha256": None}],
            "grants": ["tools.call"],
        }
    ]


def test_list_json_of_no_credentials_is_an_empty_list(tmp_path: Path) -> None:
    config = tmp_path / "plughost.toml"
    config.write_text(f'[host.remote]\nkeys_dir = "{tmp_path / "keys"}"\n')

    result = CliRunner().invoke(runner_credentials, ["list", "--config", str(config), "--json"])

    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["credentials"] == []
