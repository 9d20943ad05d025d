"""Tests for tool grant patterns: the names a tool is known by and what a pattern matches."""

from __future__ import annotations

import tomllib

import pytest

from plughost.plugins.grants import (
    grant_hint,
    granted_by,
    owning_plugin,
    pattern_matches,
    tool_names,
)
from plughost.settings import HostSettings
from plughost_sdk.models import ToolSpec


def _plugin_tool(plugin_id: str, tool: str, name: str | None = None) -> ToolSpec:
    return ToolSpec(
        name=name or tool,
        provider_name="plugins",
        provider_type="plugin",
        tool_id=f"plugin:{plugin_id}:{tool}",
    )


@pytest.mark.parametrize(
    ("pattern", "name"),
    [
        ("acme.search.*", "acme.search.web_search"),
        ("plugin:acme.search:*", "plugin:acme.search:web_search"),
        ("mcp:docs:*", "mcp:docs:search"),
        ("web_*", "web_search"),
        ("*", "web_search"),
        ("acme.**", "acme.search.extra.web_search"),
        ("**", "plugin:acme.search:web_search"),
        ("web_searc?", "web_search"),
        ("web_search", "web_search"),
    ],
)
def test_a_pattern_matches_the_names_it_is_meant_for(pattern: str, name: str) -> None:
    assert pattern_matches(pattern, name)


@pytest.mark.parametrize(
    ("pattern", "name"),
    [
        ("acme.search.*", "acme.search.extra.web_search"),  # another plugin
        ("acme.*", "acme.search.web_search"),
        ("*", "acme.search.web_search"),
        ("*", "plugin:acme.search:web_search"),
        ("mcp:*", "mcp:docs:search"),
        ("acme?search.*", "acme.search.web_search"),
        ("Web_search", "web_search"),  # case-sensitive
        ("web", "web_search"),  # whole names only
        ("web_search", "my_web_search"),
    ],
)
def test_a_pattern_does_not_reach_past_what_it_names(pattern: str, name: str) -> None:
    assert not pattern_matches(pattern, name)


def test_characters_other_than_the_wildcards_are_literal() -> None:
    assert pattern_matches("a+b[1].(x)", "a+b[1].(x)")
    assert not pattern_matches("a[12]", "a1")


def test_a_plugin_tool_is_known_by_its_name_its_tool_id_and_its_full_name() -> None:
    spec = _plugin_tool("acme.search", "web_search", name="search_web_search")

    assert tool_names(spec) == (
        "search_web_search",
        "plugin:acme.search:web_search",
        "acme.search.web_search",
    )


def test_a_builtin_tool_is_known_by_its_name_and_its_tool_id() -> None:
    spec = ToolSpec(
        name="reply", provider_name="builtin", provider_type="builtin", tool_id="builtin:x:reply"
    )

    assert tool_names(spec) == ("reply", "builtin:x:reply")


def test_the_owning_plugin_comes_from_a_plugin_tools_id() -> None:
    assert owning_plugin(_plugin_tool("acme.search", "web_search")) == "acme.search"


def test_a_tool_of_another_provider_belongs_to_no_plugin_whatever_its_id_claims() -> None:
    spec = ToolSpec(name="x", provider_name="mcp", tool_id="plugin:acme.search:web_search")

    assert owning_plugin(spec) is None
    assert tool_names(spec) == ("x", "plugin:acme.search:web_search")


def test_granted_by_returns_the_first_pattern_matching_any_name() -> None:
    names = tool_names(_plugin_tool("acme.search", "web_search"))

    assert granted_by(["mcp:*:*", "acme.search.*", "*"], names) == "acme.search.*"
    assert granted_by(["mcp:*:*", "other.plugin.*"], names) is None
    assert granted_by([], names) is None


def test_the_grant_hint_is_a_toml_line_the_settings_accept() -> None:
    line = grant_hint("tests.caller", "echo")

    data = tomllib.loads(f"[host.tool_grants]\n{line}\n")
    settings = HostSettings.model_validate(data["host"])

    assert line == '"tests.caller" = ["echo"]'
    assert settings.tool_grants == {"tests.caller": ["echo"]}
