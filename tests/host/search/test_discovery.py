"""Tests for per-conversation discovery state and the order tools are assembled in."""

from __future__ import annotations

import json

import pytest

from plughost.search.discovery import DiscoveryState, DiscoveryStore, assemble_tool_names


def test_discovery_keeps_first_discovery_order_and_ignores_repeats() -> None:
    state = DiscoveryState("s1")
    state.add(["b", "a"])
    state.add(["c", "a", "b"])
    assert state.names == ("b", "a", "c")
    assert len(state) == 3
    assert "c" in state


def test_add_returns_only_the_names_that_were_new() -> None:
    state = DiscoveryState("s1", ["a"])
    assert state.add(["a", "b", "b", ""]) == ["b"]


def test_discovery_state_offers_no_way_to_forget_a_name() -> None:
    state = DiscoveryState("s1", ["a"])
    for forgetting in ("remove", "discard", "clear", "pop", "__delitem__"):
        assert not hasattr(state, forgetting)
    assert list(state) == ["a"]


def test_a_state_survives_a_trip_through_json() -> None:
    state = DiscoveryState("chat-7", ["x", "y"])
    copy = DiscoveryState.restore(json.loads(json.dumps(state.export())))
    assert copy.session_id == "chat-7"
    assert copy.names == ("x", "y")


def test_store_keeps_one_state_per_conversation() -> None:
    store = DiscoveryStore()
    store.get("a").add(["t1"])
    store.get("b").add(["t2"])
    assert store.get("a").names == ("t1",)
    assert store.get("b").names == ("t2",)
    assert store.get("a") is store.get("a")


def test_store_export_and_restore_round_trip_through_json() -> None:
    store = DiscoveryStore()
    store.get("a").add(["t1", "t2"])
    store.get("empty")
    saved = json.loads(json.dumps(store.export()))
    assert saved == {"version": 1, "sessions": {"a": ["t1", "t2"]}}

    restarted = DiscoveryStore()
    restarted.restore(saved)
    assert restarted.get("a").names == ("t1", "t2")


def test_restore_puts_saved_names_before_names_found_since_start() -> None:
    store = DiscoveryStore()
    store.get("a").add(["new", "old2"])
    store.restore({"version": 1, "sessions": {"a": ["old1", "old2"]}})
    assert store.get("a").names == ("old1", "old2", "new")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"version": 2, "sessions": {}}, "version"),
        ({"version": 1, "sessions": []}, "sessions"),
        ({"version": 1, "sessions": {"a": "t1"}}, "names"),
        ({"version": 1, "sessions": {"a": [1]}}, "names"),
    ],
)
def test_restore_rejects_malformed_data_and_changes_nothing(
    data: dict[str, object], message: str
) -> None:
    store = DiscoveryStore()
    store.get("a").add(["kept"])
    with pytest.raises(ValueError, match=message):
        store.restore(data)
    assert store.get("a").names == ("kept",)


def test_assembler_orders_core_sorted_then_search_then_discovered_in_order() -> None:
    names = assemble_tool_names(
        ["zeta", "alpha"], ["late", "early"], {"late", "early"}, search_tool="tool_search"
    )
    assert names == ["alpha", "zeta", "tool_search", "late", "early"]


def test_assembler_skips_discovered_names_that_are_gone() -> None:
    names = assemble_tool_names(["core"], ["gone", "here"], {"core", "here"}, search_tool="s")
    assert names == ["core", "s", "here"]


def test_assembler_lists_a_discovered_tool_that_became_core_only_once() -> None:
    names = assemble_tool_names(["b", "a"], ["b", "c"], {"a", "b", "c"}, search_tool="s")
    assert names == ["a", "b", "s", "c"]


def test_assembler_without_a_search_tool_keeps_the_other_groups() -> None:
    assert assemble_tool_names(["b", "a"], ["c"], {"c"}) == ["a", "b", "c"]


def test_assembled_lists_only_grow_at_their_end_as_discoveries_arrive() -> None:
    state = DiscoveryState("s")
    available = {"t1", "t2", "t3"}
    previous = assemble_tool_names(["core"], state.names, available, search_tool="s")
    for name in ("t2", "t1", "t3"):
        state.add([name])
        current = assemble_tool_names(["core"], state.names, available, search_tool="s")
        assert current[: len(previous)] == previous
        assert current[-1] == name
        previous = current
