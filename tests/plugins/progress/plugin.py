"""Reports progress (from the loop and from a worker thread), and notes its cancellation."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from plughost_sdk import Plugin, Tool
from plughost_sdk.types import ToolParameterInfo, ToolParamType

_STEPS = [ToolParameterInfo(name="steps", param_type=ToolParamType.INTEGER)]


class ProgressPlugin(Plugin):
    @Tool("count", brief_description="Report each step as progress", parameters=_STEPS)
    async def count(self, steps: int, **kwargs: Any) -> str:
        for step in range(1, steps + 1):
            self.ctx.report_progress(step, steps, f"step {step} of {steps}")
        return f"counted {steps}"

    @Tool("count_sync", brief_description="The same, from a sync handler", parameters=_STEPS)
    def count_sync(self, steps: int, **kwargs: Any) -> str:
        for step in range(1, steps + 1):
            self.ctx.report_progress(step, steps)
        return f"counted {steps}"

    @Tool("linger", brief_description="Wait until cancelled, noting it in data/linger.txt")
    async def linger(self, **kwargs: Any) -> str:
        path = self.ctx.paths.data("linger.txt")
        path.write_text("started\n", encoding="utf-8")
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            with path.open("a", encoding="utf-8") as note:
                note.write("cancelled\n")
            raise
        return "never"

    @Tool("linger_sync", brief_description="A sync handler that stops when ctx.cancelled")
    def linger_sync(self, **kwargs: Any) -> str:
        path = self.ctx.paths.data("linger_sync.txt")
        path.write_text("started\n", encoding="utf-8")
        while not self.ctx.cancelled:
            time.sleep(0.01)
        with path.open("a", encoding="utf-8") as note:
            note.write("cancelled\n")
        return "stopped"


def create_plugin() -> ProgressPlugin:
    return ProgressPlugin()
