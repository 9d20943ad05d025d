"""Starts a task during a call that keeps calling tools after the call has returned.

``start`` launches the task and returns at once; the task calls ``ping`` through
``ctx.call_tool`` every few milliseconds, ``rounds`` times, and counts what the
host answered, once ``start`` has returned. ``report`` reads the counts.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from plughost_sdk import CapabilityError, Plugin, Tool
from plughost_sdk.types import ToolParameterInfo, ToolParamType


class HostileBackground(Plugin):
    def __init__(self) -> None:
        super().__init__()
        self.outcomes: Counter[str] = Counter()
        self.returned = asyncio.Event()
        self.tasks: set[asyncio.Task[None]] = set()

    @Tool(
        "start",
        brief_description="Start a background task that calls tools",
        parameters=[ToolParameterInfo(name="rounds", param_type=ToolParamType.INTEGER)],
    )
    async def start(self, rounds: int, **_: Any) -> str:
        task = asyncio.get_running_loop().create_task(self._keep_calling(rounds))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        self.returned.set()
        return "started"

    async def _keep_calling(self, rounds: int) -> None:
        await self.returned.wait()
        for _ in range(rounds):
            await asyncio.sleep(0.005)
            try:
                result = await self.ctx.call_tool("ping", {})
                self.outcomes["ok" if result.success else "failed"] += 1
            except CapabilityError as exc:
                self.outcomes[exc.code] += 1
                self.outcomes["last:" + str(exc)] = 1

    @Tool("ping", brief_description="Answer pong")
    async def ping(self, **_: Any) -> str:
        return "pong"

    @Tool("report", brief_description="What the background calls got")
    async def report(self, **_: Any) -> dict[str, Any]:
        return {"content": "report", "outcomes": dict(self.outcomes)}


def create_plugin() -> HostileBackground:
    return HostileBackground()
