"""Waiting for many runners' first starts under one deadline."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

from plughost.runners.supervisor import RunnerSupervisor, wait_all_settled


def _starting(count: int) -> list[Any]:
    return [SimpleNamespace(first_start_over=asyncio.Event()) for _ in range(count)]


async def test_waiting_ends_when_the_last_runner_is_over_its_first_start() -> None:
    runners = _starting(3)
    waiting = asyncio.create_task(wait_all_settled(cast(list[RunnerSupervisor], runners), 20))
    for runner in reversed(runners[1:]):  # settling out of order
        runner.first_start_over.set()
        await asyncio.sleep(0)
    assert not waiting.done()  # the first one still starts
    runners[0].first_start_over.set()
    async with asyncio.timeout(20):
        await waiting


async def test_waiting_gives_up_at_the_deadline_without_raising() -> None:
    runners = _starting(2)
    runners[0].first_start_over.set()
    async with asyncio.timeout(20):
        await wait_all_settled(cast(list[RunnerSupervisor], runners), 0.05)
    assert not runners[1].first_start_over.is_set()
