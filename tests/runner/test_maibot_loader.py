"""Setting up a MaiBot plugin in the runner: context, paths, and its TOOL dicts as declarations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from plughost_runner.maibot.loader import MaiBotSetupError, set_up, tool_declaration
from plughost_sdk.errors import PluginDeclarationError
from plughost_sdk.maibot import MaiBotPlugin, Tool


def _entry(**metadata: Any) -> dict[str, Any]:
    return {
        "name": "lookup",
        "type": "TOOL",
        "metadata": {"brief_description": "查找", "handler_name": "handle", **metadata},
    }


def test_chat_scope_and_allowed_session_from_the_entry_reach_the_declaration() -> None:
    entry = {**_entry(), "chat_scope": "group", "allowed_session": ["qq:1"]}

    declaration = tool_declaration(entry)

    assert declaration.metadata["chat_scope"] == "group"
    assert declaration.metadata["allowed_session"] == ["qq:1"]
    assert declaration.handler_name == "handle"


def test_a_core_tool_is_visible_and_others_are_deferred_as_in_maibot() -> None:
    assert tool_declaration(_entry(core_tool=True)).visibility == "visible"
    assert tool_declaration(_entry()).visibility == "deferred"
    with pytest.raises(PluginDeclarationError, match="visibility 'loud'"):
        tool_declaration(_entry(visibility="loud"))


def test_in_the_dict_form_only_required_true_makes_a_parameter_required() -> None:
    entry = _entry(
        parameters_raw={"a": {"type": "string", "required": True}, "b": {"type": "float"}}
    )

    schema = tool_declaration(entry).parameters_schema

    assert schema["required"] == ["a"]
    assert schema["properties"]["b"] == {"type": "number"}


class Paths(MaiBotPlugin):
    @Tool("where", description="数据目录")
    async def where(self, **kwargs: Any) -> str:
        return str(self.ctx.paths.data_dir)


class Broken(MaiBotPlugin):
    def get_components(self) -> list[dict[str, Any]]:
        return [{"name": "ghost", "type": "TOOL", "metadata": {"handler_name": "missing"}}]


class NoBridge:
    async def call_capability(self, *args: Any) -> Any:
        raise AssertionError("no capability is called while setting up")


def test_the_context_gets_the_plugins_own_directories(tmp_path: Path) -> None:
    plugin = Paths()
    setup = set_up(
        plugin,
        plugin_id="community.paths",
        folder=tmp_path,
        config={},
        data_dir=tmp_path / "data",
        temp_dir=tmp_path / "temp",
        bridge=NoBridge(),
    )

    assert plugin.ctx.plugin_id == "community.paths"
    assert (plugin.ctx.paths.data_dir, plugin.ctx.paths.runtime_dir) == (
        tmp_path / "data",
        tmp_path / "temp",
    )
    assert [d.name for d, _ in setup.tools] == ["where"]
    assert setup.config_file is None


def test_a_tool_whose_handler_is_missing_fails_the_load_naming_it(tmp_path: Path) -> None:
    with pytest.raises(MaiBotSetupError, match="'ghost' names handler 'missing'") as caught:
        set_up(
            Broken(),
            plugin_id="community.broken",
            folder=tmp_path,
            config={},
            data_dir=tmp_path,
            temp_dir=tmp_path,
            bridge=NoBridge(),
        )
    assert caught.value.stage == "declaration"
