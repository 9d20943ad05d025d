"""A plugin's schemas and descriptions cannot stall the host (real runners)."""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from plughost.host import PluginHost
from tests.conftest import TEST_PLUGINS, HostFactory
from tests.fault_injection import copy_plugin

HOSTILE = TEST_PLUGINS / "hostile_schema"


def _with_mode(tmp_path: Path, mode: str) -> Path:
    folder = copy_plugin(HOSTILE, tmp_path / "plugins" / mode, "tests.hostile_schema")
    (folder / "mode.txt").write_text(mode)
    return folder


async def _median_call_seconds(host: PluginHost, *arguments: dict[str, Any]) -> list[float]:
    """The median time of a call of ``match`` with each of ``arguments``, taken in turns."""
    taken: list[list[float]] = [[] for _ in arguments]
    for _ in range(5):
        for spent, argument in zip(taken, arguments, strict=True):
            started = time.perf_counter()
            await host.invoke("match", argument)
            spent.append(time.perf_counter() - started)
    return [statistics.median(spent) for spent in taken]


async def test_a_catastrophic_backtracking_pattern_is_checked_in_linear_time(
    make_host: HostFactory,
) -> None:
    hostile, served = {"arg": {"s": "a" * 24 + "b"}}, {"arg": {"s": "a" * 40}}
    async with make_host([HOSTILE]) as host:
        refused = await host.invoke("match", hostile)
        accepted = await host.invoke("match", served)
        checked, called = await _median_call_seconds(host, hostile, served)

    assert refused.error_code == "invalid_arguments"
    assert "must match the pattern" in refused.error_message
    assert accepted.content == "matched"
    # Python's re needs a second for this one (four times more per extra "aa"), some
    # hundreds of calls; refused before any runner sees it, it costs less than one.
    assert checked < 50 * called, f"refused in {checked:.4f} s, served in {called:.4f} s"


async def _load_problem(host: PluginHost) -> str:
    (row,) = [r for r in host.status() if r.plugin_id == "tests.hostile_schema"]
    assert row.state == "failed" and not row.tools
    return row.error


async def test_a_pattern_no_linear_engine_can_match_fails_the_plugin_at_load(
    make_host: HostFactory, tmp_path: Path
) -> None:
    async with make_host([_with_mode(tmp_path, "backreference")]) as host:
        problem = await _load_problem(host)

    assert "declare" in problem
    assert "tool match" in problem and "cannot be matched safely" in problem


async def test_a_megabyte_description_fails_the_plugin_at_load_with_the_limit(
    make_host: HostFactory, tmp_path: Path
) -> None:
    (tmp_path / "empty").mkdir()
    async with make_host([tmp_path / "empty"]) as bare:  # never saw the description
        (without,) = await _median_call_seconds(bare, {"arg": {"s": "a"}})
    async with make_host([_with_mode(tmp_path, "huge_description")]) as host:
        problem = await _load_problem(host)
        search = await host.invoke("match", {"arg": {"s": "a"}})
        (after,) = await _median_call_seconds(host, {"arg": {"s": "a"}})

    assert "tool match: its description is" in problem
    assert "over the limit of 16,384" in problem
    assert search.error_code == "tool_not_found"
    # Kept, the 2 MB would be read by every lookup; refused, a lookup costs what it costs
    # a host that has no plugins at all.
    assert after < 50 * without, f"{after:.5f} s, {without:.5f} s with no plugins"
