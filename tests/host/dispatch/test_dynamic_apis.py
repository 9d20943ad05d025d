"""What one api.replace_dynamic may publish, and what the host keeps of dropped APIs."""

from __future__ import annotations

from typing import Any

from plughost.dispatch.dynamic_apis import (
    MAX_API_VERSION,
    MAX_OFFLINE_APIS,
    MAX_OFFLINE_REASON,
    next_dynamic_set,
)
from plughost.plugins.component_info import PluginComponent

PLUGIN = "tests.dynamic"


def _entry(name: str, **metadata: Any) -> dict[str, Any]:
    return {"name": name, "type": "API", "metadata": {"public": True, **metadata}}


def _apply(mine: list[PluginComponent], apis: Any, reason: Any = "gone") -> list[PluginComponent]:
    outcome = next_dynamic_set(PLUGIN, mine, apis, reason)
    assert not isinstance(outcome, str), outcome
    return outcome[0]


def test_a_dropped_api_keeps_only_its_reason_cut_to_the_limit() -> None:
    first = _apply([], [_entry("greet", description="d" * 1000, extra="x" * 1000)])
    second = _apply(first, [], reason="r" * 10_000)

    (dropped,) = second
    assert dropped.metadata == {
        "dynamic": True,
        "version": "1",
        "public": True,
        "enabled": False,
        "offline_reason": "r" * MAX_OFFLINE_REASON,
    }


def test_the_apis_dropped_last_are_kept_and_the_oldest_forgotten() -> None:
    mine: list[PluginComponent] = []
    for round_ in range(3):
        names = [f"r{round_}_{i}" for i in range(MAX_OFFLINE_APIS)]
        mine = _apply(mine, [_entry(name) for name in names])

    offline = {c.name for c in mine if c.metadata.get("offline_reason")}
    assert len(offline) == MAX_OFFLINE_APIS
    assert offline == {f"r1_{i}" for i in range(MAX_OFFLINE_APIS)}


def test_a_version_past_the_limit_is_refused_naming_it() -> None:
    refusal = next_dynamic_set(PLUGIN, [], [_entry("greet", version="9" * 40)], "")

    assert isinstance(refusal, str)
    assert f"at most {MAX_API_VERSION} printable characters" in refusal


def test_metadata_too_deep_to_measure_is_refused() -> None:
    deep: Any = {}
    for _ in range(5000):
        deep = {"d": deep}
    refusal = next_dynamic_set(PLUGIN, [], [_entry("greet", nested=deep)], "")

    assert isinstance(refusal, str) and "cannot be measured" in refusal
