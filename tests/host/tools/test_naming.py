"""Tests for model-facing tool names: sanitizing, qualifying, resolving collisions."""

from __future__ import annotations

import hashlib
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plughost.tools.naming import (
    MAX_NAME_LENGTH,
    NameRequest,
    lookalike_key,
    qualified_name,
    resolve_names,
    sanitize_name,
)

VALID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _sha8(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:8]


def test_sanitize_name_keeps_a_valid_name_unchanged() -> None:
    assert sanitize_name("get_weather-v2") == "get_weather-v2"


def test_sanitize_name_replaces_invalid_characters_and_collapses_underscores() -> None:
    assert sanitize_name("docs.search: files!") == "docs_search_files"


def test_sanitize_name_replaces_non_ascii_letters() -> None:
    assert sanitize_name("天气 query") == "query"


def test_sanitize_name_never_returns_an_empty_name() -> None:
    assert sanitize_name("") == f"tool_{_sha8('')}"
    assert sanitize_name("!!!") == f"tool_{_sha8('!!!')}"


def test_sanitize_name_caps_long_names_with_a_hash_of_the_full_raw_name() -> None:
    raw = "a" * 100
    name = sanitize_name(raw)
    assert len(name) == MAX_NAME_LENGTH
    assert name.endswith(f"_{_sha8(raw)}")
    assert name.startswith("a" * 50)


def test_sanitize_name_keeps_long_names_with_a_shared_prefix_distinct() -> None:
    first = sanitize_name("x" * 80 + "first")
    second = sanitize_name("x" * 80 + "second")
    assert first != second
    assert len(first) == len(second) == MAX_NAME_LENGTH


@given(st.text(max_size=200))
def test_sanitize_name_always_returns_a_valid_stable_name(raw: str) -> None:
    name = sanitize_name(raw)
    assert VALID.match(name)
    assert sanitize_name(raw) == name
    assert sanitize_name(name) == name


def test_qualified_name_joins_parts_with_underscores_and_skips_empty_ones() -> None:
    assert qualified_name("mcp", "my server", "read.file") == "mcp_my_server_read_file"
    assert qualified_name("", "search") == "search"


def test_resolve_names_keeps_unique_preferred_names() -> None:
    names = resolve_names(
        [NameRequest("p:a:search", "search", "a"), NameRequest("p:b:weather", "weather", "b")]
    )
    assert names == {"p:a:search": "search", "p:b:weather": "weather"}


def test_resolve_names_lets_the_first_claimant_keep_a_shared_name_and_qualifies_the_rest() -> None:
    names = resolve_names(
        [
            NameRequest("plugin:web:search", "search", "web"),
            NameRequest("mcp:docs:search", "search", "mcp_docs"),
            NameRequest("plugin:web:fetch", "fetch", "web"),
        ]
    )
    assert names == {
        "plugin:web:search": "search",
        "mcp:docs:search": "mcp_docs_search",
        "plugin:web:fetch": "fetch",
    }


def test_resolve_names_gives_a_contested_name_to_whoever_comes_first() -> None:
    web = NameRequest("plugin:web:search", "search", "web")
    docs = NameRequest("plugin:docs:search", "search", "docs")
    assert resolve_names([docs, web])["plugin:docs:search"] == "search"
    assert resolve_names([docs, web])["plugin:web:search"] == "web_search"
    assert resolve_names([web, docs])["plugin:docs:search"] == "docs_search"


def test_resolve_names_hash_suffixes_qualified_names_that_still_collide() -> None:
    entries = [
        NameRequest("a:x:search", "search", "x"),
        NameRequest("b:x:search", "search", "x"),
        NameRequest("c:z:x_search", "x_search", "z"),
    ]
    names = resolve_names(entries)
    assert names["c:z:x_search"] == "x_search"
    assert names["a:x:search"] == "search"
    assert names["b:x:search"] == f"x_search_{_sha8('b:x:search')}"


def test_resolve_names_rejects_repeated_tool_ids() -> None:
    with pytest.raises(ValueError, match="repeated: p:a:t"):
        resolve_names([NameRequest("p:a:t", "t", "a"), NameRequest("p:a:t", "u", "a")])


@given(
    st.lists(
        st.tuples(st.sampled_from(["search", "fetch", "a.b", "x" * 70]), st.sampled_from("xyz")),
        max_size=12,
    )
)
def test_resolve_names_always_gives_distinct_valid_names(pairs: list[tuple[str, str]]) -> None:
    entries = [
        NameRequest(f"id{i}", preferred, qualifier)
        for i, (preferred, qualifier) in enumerate(pairs)
    ]
    names = resolve_names(entries)
    assert list(names) == [entry.tool_id for entry in entries]
    assert len(set(names.values())) == len(entries)
    assert all(VALID.match(name) for name in names.values())


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("get_weather", "Get_Weather"),
        ("get_weather", "get-weather"),
        ("get_weather", "getWeather"),
        ("tool_search", "tooI_search"),
        ("tool_search", "t00l_search"),
        ("list_files", "Iist_fi1es"),
        ("modern", "modem"),
        ("swap", "svvap"),
        ("dear", "clear"),
        ("tool_search", "\uff54\uff4f\uff4f\uff4c\uff3f\uff53\uff45\uff41\uff52\uff43\uff48"),
    ],
)
def test_lookalike_key_is_the_same_for_names_a_model_could_mistake(one: str, other: str) -> None:
    assert lookalike_key(one) == lookalike_key(other)


@pytest.mark.parametrize(("one", "other"), [("get_weather", "get_weathers"), ("send", "sand")])
def test_lookalike_key_tells_different_names_apart(one: str, other: str) -> None:
    assert lookalike_key(one) != lookalike_key(other)


def test_resolve_names_qualifies_a_later_look_alike_and_keeps_the_first() -> None:
    entries = [
        NameRequest("p:b:get_weather", "get_weather", "b"),
        NameRequest("p:a:Get_Weather", "Get_Weather", "a"),
    ]
    assert resolve_names(entries) == {
        "p:b:get_weather": "get_weather",
        "p:a:Get_Weather": "a_Get_Weather",
    }


def test_resolve_names_never_qualifies_into_a_reserved_name_or_a_look_alike() -> None:
    entries = [
        NameRequest("p:x:search", "search", "x"),
        NameRequest("p:tool:search", "search", "tool"),
    ]
    names = resolve_names(entries, reserved=["tool_search"])
    assert names["p:x:search"] == "search"
    assert names["p:tool:search"] == f"tool_search_{_sha8('p:tool:search')}"
