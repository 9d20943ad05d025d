"""Progress and cancellation between the host and a real runner, both ways through the wire."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from plughost.tools.progress import Progress
from tests.conftest import TEST_PLUGINS, HostFactory
from tests.waiting import wait_until

PROGRESS = TEST_PLUGINS / "progress"


@pytest.mark.parametrize("tool", ["count", "count_sync"])
async def test_a_plugins_progress_reaches_on_progress_in_order_before_the_result(
    make_host: HostFactory, tool: str
) -> None:
    reports: list[Progress] = []
    async with make_host([PROGRESS]) as host:
        result = await host.invoke(tool, {"steps": 5}, on_progress=reports.append)
        unheard = await host.invoke(tool, {"steps": 2})

    assert result.success, result.error_message
    assert [r.progress for r in reports] == [1, 2, 3, 4, 5]
    assert {r.total for r in reports} == {5}
    if tool == "count":
        assert reports[0].message == "step 1 of 5"
    assert unheard.success


async def test_cancelling_the_caller_cancels_the_plugins_handler(
    make_host: HostFactory, tmp_path: Path
) -> None:
    marker = tmp_path / "data" / "tests.progress" / "linger.txt"  # the plugin's data dir
    async with make_host([PROGRESS]) as host:
        call = asyncio.create_task(host.invoke("linger"))
        await wait_until(marker.exists, timeout=20, what="the handler started")
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await wait_until(
            lambda: "cancelled" in marker.read_text(encoding="utf-8"),
            timeout=10,
            what="the handler saw its cancellation",
        )
        after = await host.invoke("count", {"steps": 1})

    assert after.success


async def test_a_sync_handler_sees_ctx_cancelled_when_its_caller_gives_up(
    make_host: HostFactory, tmp_path: Path
) -> None:
    marker = tmp_path / "data" / "tests.progress" / "linger_sync.txt"
    async with make_host([PROGRESS]) as host:
        call = asyncio.create_task(host.invoke("linger_sync"))
        await wait_until(marker.exists, timeout=20, what="the handler started")
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await wait_until(
            lambda: "cancelled" in marker.read_text(encoding="utf-8"),
            timeout=10,
            what="the sync handler saw ctx.cancelled",
        )
