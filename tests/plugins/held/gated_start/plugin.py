"""A plugin whose start a test holds: ``on_load`` waits for ``open`` in its data directory.

``fail`` there instead makes ``on_load`` raise, so the plugin fails to start.

The test creates the file when it has seen what it wanted to see before the
plugin was up, so the order of events, not timing, proves what was served first.
"""

from __future__ import annotations

import asyncio
from typing import Any

from plughost_sdk import Plugin, Tool
from plughost_sdk.types import ToolParameterInfo, ToolParamType

TOOL_NAME = "gated_echo"


class GatedStart(Plugin):
    async def on_load(self) -> None:
        gate, fail = self.ctx.paths.data("open"), self.ctx.paths.data("fail")
        # A file has no event to wait on; the host bounds this wait (on_load_timeout).
        while not gate.exists() and not fail.exists():  # noqa: ASYNC110 - no event to wait on
            await asyncio.sleep(0.02)
        if fail.exists():
            raise RuntimeError("the test made this start fail")

    @Tool(
        TOOL_NAME,
        brief_description="Echo the text once the plugin has started",
        parameters=[ToolParameterInfo(name="text", param_type=ToolParamType.STRING)],
    )
    async def gated_echo(self, text: str = "", **kwargs: Any) -> str:
        return f"started: {text}"


def create_plugin() -> GatedStart:
    return GatedStart()
