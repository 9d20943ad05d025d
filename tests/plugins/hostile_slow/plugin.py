"""Calls that take seconds, so that a shutdown finds them in flight.

``slow`` leaves a ``started-*`` file in the plugin's data folder as it starts (a
test waits for those instead of guessing when the calls arrived), sleeps, then
answers ``slept <seconds>``.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from plughost_sdk import Plugin, Tool
from plughost_sdk.types import ToolParameterInfo, ToolParamType


class HostileSlow(Plugin):
    @Tool(
        "slow",
        brief_description="Sleep, then answer",
        parameters=[ToolParameterInfo(name="seconds", param_type=ToolParamType.NUMBER)],
    )
    async def slow(self, seconds: float, **_: Any) -> str:
        assert self.ctx.paths is not None
        self.ctx.paths.data(f"started-{uuid.uuid4().hex}").touch()
        await asyncio.sleep(seconds)
        return f"slept {seconds:g}"


def create_plugin() -> HostileSlow:
    return HostileSlow()
