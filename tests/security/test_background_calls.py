"""ctx.call_tool belongs to a live call: a task that outlives its call is refused (real runners)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from plughost.host import PluginHost
from tests.conftest import TEST_PLUGINS, HostFactory, fast_settings
from tests.waiting import wait_until

HOSTILE = TEST_PLUGINS / "hostile_background"
ROUNDS = 20


async def _background_outcomes(host: PluginHost) -> dict[str, Any]:
    started = await host.invoke("start", {"rounds": ROUNDS})
    assert started.content == "started"
    outcomes: dict[str, Any] = {}

    async def finished() -> bool:
        outcomes.update((await host.invoke("report", {})).structured_content["outcomes"])
        return sum(v for k, v in outcomes.items() if not k.startswith("last:")) >= ROUNDS

    await wait_until(finished, timeout=20, interval=0.05, what="the background calls")
    return outcomes


async def test_tool_calls_from_a_task_that_outlived_its_call_are_refused(
    make_host: HostFactory,
) -> None:
    async with make_host([HOSTILE]) as host:
        outcomes = await _background_outcomes(host)

    assert outcomes.get("capability_denied") == ROUNDS
    assert "ok" not in outcomes
    (last,) = [k for k in outcomes if k.startswith("last:")]
    assert "works only while the plugin serves a tool call" in last
    assert 'background_tool_calls = ["tests.hostile_background"]' in last


async def test_an_operator_grant_lets_a_plugin_call_tools_from_background_work(
    make_host: HostFactory, tmp_path: Path
) -> None:
    settings = fast_settings(tmp_path).model_copy(
        update={"background_tool_calls": ["tests.hostile_background"]}
    )
    async with make_host([HOSTILE], settings) as host:
        outcomes = await _background_outcomes(host)

    assert outcomes == {"ok": ROUNDS}
