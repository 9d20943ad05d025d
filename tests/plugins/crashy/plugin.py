"""Handlers that kill their own runner mid-call: os._exit, as a crashing C extension would."""

from __future__ import annotations

import os
from typing import Any

from plughost_sdk import EventHandler, EventType, HookHandler, HookOrder, Plugin


class Crashy(Plugin):
    @HookHandler("test.crash", name="dies", order=HookOrder.EARLY)
    def dies(self, **kwargs: Any) -> Any:
        os._exit(9)

    @EventHandler(
        "dies_on_message",
        event_type=EventType.ON_MESSAGE_PRE_PROCESS,
        intercept_message=True,
        weight=1000,
    )
    def dies_on_message(self, **kwargs: Any) -> Any:
        os._exit(9)


def create_plugin() -> Crashy:
    return Crashy()
