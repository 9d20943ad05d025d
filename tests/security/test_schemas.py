"""A plugin's schemas and descriptions cannot stall the host (real runners)."""

from __future__ import annotations

import time
from pathlib import Path

from plughost.host import PluginHost
from tests.conftest import TEST_PLUGINS, HostFactory
from tests.fault_injection import copy_plugin

HOSTILE = TEST_PLUGINS / "hostile_schema"


def _with_mode(tmp_path: Path, mode: str) -> Path:
    folder = copy_plugin(HOSTILE, tmp_path / "plugins" / mode, "tests.hostile_schema")
    (folder / "mode.txt").write_text(mode)
    return folder


async def test_a_catastrophic_backtracking_pattern_is_checked_in_linear_time(
    make_host: HostFactory,
) -> None:
    async with make_host([HOSTILE]) as host:
        started = time.perf_counter()
        # Python's re needs seconds for this one (four times more per extra "aa").
        refused = await host.invoke("match", {"arg": {"s": "a" * 26 + "b"}})
        took = time.perf_counter() - started
        accepted = await host.invoke("match", {"arg": {"s": "a" * 40}})

    assert refused.error_code == "invalid_arguments"
    assert "must match the pattern" in refused.error_message
    assert took < 1.0, f"checking one argument took {took:.1f} s"
    assert accepted.content == "matched"


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
    async with make_host([_with_mode(tmp_path, "huge_description")]) as host:
        problem = await _load_problem(host)
        started = time.perf_counter()
        search = await host.invoke("match", {"arg": {"s": "a"}})
        took = time.perf_counter() - started

    assert "tool match: its description is" in problem
    assert "over the limit of 16,384" in problem
    assert search.error_code == "tool_not_found" and took < 1.0
