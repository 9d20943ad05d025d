"""ToolCatalogue: a saved tool list comes back only for sources whose fingerprint is unchanged."""

from __future__ import annotations

import os
from pathlib import Path

import mcp_types as types
import pytest

from plughost.mcp.catalogue import ToolCatalogue, source_of
from plughost_sdk.models import ToolSpec

PLUGIN_TOOL = ToolSpec(
    name="greet", provider_type="plugin", metadata={"plugin_id": "example.greeter"}
)
UPSTREAM_TOOL = ToolSpec(
    name="mcp_git_git_commit",
    provider_type="mcp",
    metadata={"server": "git"},
    mcp_tool=types.Tool(
        name="git_commit",
        input_schema={"type": "object"},
        annotations=types.ToolAnnotations(destructive_hint=False),
        output_schema={"type": "object"},
    ),
)
SEARCH_TOOL = ToolSpec(name="tool_search", provider_type="builtin")
REMOTE_TOOL = ToolSpec(name="far", provider_type="remote", provider_name="lab")
PRINTS = {"host": "h1", "plugin:example.greeter": "p1", "mcp:git": "g1"}


def saved(tmp_path: Path) -> ToolCatalogue:
    catalogue = ToolCatalogue(tmp_path / "data" / "tool-catalogue.json")
    catalogue.save([PLUGIN_TOOL, UPSTREAM_TOOL, SEARCH_TOOL, REMOTE_TOOL], PRINTS)
    return catalogue


def test_unchanged_sources_come_back_in_order_with_upstream_definitions_whole(
    tmp_path: Path,
) -> None:
    loaded = saved(tmp_path).load(PRINTS)

    assert loaded is not None
    assert [spec.name for spec in loaded] == ["greet", "mcp_git_git_commit", "tool_search"]
    assert loaded[1].mcp_tool == UPSTREAM_TOOL.mcp_tool


def test_a_changed_plugin_or_server_makes_a_cold_start(tmp_path: Path) -> None:
    catalogue = saved(tmp_path)

    assert catalogue.load({**PRINTS, "plugin:example.greeter": "p2"}) is None
    assert catalogue.load({**PRINTS, "mcp:git": "g2"}) is None


def test_a_new_plugin_makes_a_cold_start(tmp_path: Path) -> None:
    assert saved(tmp_path).load({**PRINTS, "plugin:example.new": "n1"}) is None


def test_a_server_that_went_takes_its_tools_with_it(tmp_path: Path) -> None:
    loaded = saved(tmp_path).load({"host": "h1", "plugin:example.greeter": "p1"})

    assert loaded is not None
    assert [spec.name for spec in loaded] == ["greet", "tool_search"]


def test_another_host_fingerprint_makes_a_cold_start(tmp_path: Path) -> None:
    assert saved(tmp_path).load({**PRINTS, "host": "h2"}) is None


def test_a_missing_or_damaged_file_makes_a_cold_start(tmp_path: Path) -> None:
    catalogue = ToolCatalogue(tmp_path / "tool-catalogue.json")
    assert catalogue.load(PRINTS) is None
    catalogue.path.write_text("{not json")
    assert catalogue.load(PRINTS) is None


def test_the_file_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    assert saved(tmp_path).path.stat().st_mode & 0o777 == 0o600


def test_tools_of_other_providers_have_no_fingerprint_key() -> None:
    assert source_of(REMOTE_TOOL) not in PRINTS


def test_a_file_others_could_write_or_a_link_makes_a_cold_start(tmp_path: Path) -> None:
    catalogue = saved(tmp_path)
    assert catalogue.load(PRINTS) is not None
    catalogue.path.chmod(0o622)
    assert catalogue.load(PRINTS) is None
    catalogue.path.chmod(0o600)
    linked = ToolCatalogue(tmp_path / "linked.json")
    linked.path.symlink_to(catalogue.path)
    assert linked.load(PRINTS) is None


def test_a_file_of_another_user_makes_a_cold_start(tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("giving a file to another user needs root")
    catalogue = saved(tmp_path)
    os.chown(catalogue.path, 65534, -1)
    assert catalogue.load(PRINTS) is None


def test_saving_never_writes_through_a_link_planted_in_the_directory(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("kept")
    folder = tmp_path / "data"
    folder.mkdir()
    for name in (f".tool-catalogue.json.{os.getpid()}.tmp", "tool-catalogue.json"):
        (folder / name).symlink_to(victim)
    saved(tmp_path)
    assert victim.read_text() == "kept"
    assert not (folder / "tool-catalogue.json").is_symlink()
