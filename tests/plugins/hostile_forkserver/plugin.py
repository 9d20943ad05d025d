"""Freezes the process that forks runners, then dies, so its own restart needs that process.

``freeze_and_die`` sends SIGSTOP to its runner's parent (the fork server, when the
runner was forked) and exits; ``alive`` answers once the runner is back.
"""

from __future__ import annotations

import os
import signal
from typing import Any

from plughost_sdk import Plugin, Tool


class HostileForkServer(Plugin):
    @Tool("freeze_and_die", brief_description="Stop the fork server, then exit")
    async def freeze_and_die(self, **_: Any) -> str:
        os.kill(os.getppid(), signal.SIGSTOP)
        os._exit(1)

    @Tool("alive", brief_description="Answer with this runner's pid")
    async def alive(self, **_: Any) -> str:
        return str(os.getpid())


def create_plugin() -> HostileForkServer:
    return HostileForkServer()
