"""Starts child processes, then kills its own runner, leaving the children behind.

The children (see child.py) record their pids as ``ROLE.PID`` files in the
folder the caller names, so a test knows exactly which processes to look for.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from plughost_sdk import Plugin, Tool
from plughost_sdk.types import ToolParameterInfo, ToolParamType

CHILD = Path(__file__).with_name("child.py")
EXIT_CODE = 19


class SpawnChildren(Plugin):
    @Tool(
        "spawn_and_exit",
        brief_description="Start children (and optionally one in its own session), then die",
        parameters=[
            ToolParameterInfo(name="pid_dir", param_type=ToolParamType.STRING),
            ToolParameterInfo(name="marker", param_type=ToolParamType.STRING),
            ToolParameterInfo(name="escape", param_type=ToolParamType.BOOLEAN, required=False),
        ],
    )
    def spawn_and_exit(self, pid_dir: str, marker: str, escape: bool = False, **kwargs: Any) -> str:
        folder = Path(pid_dir)
        folder.mkdir(parents=True, exist_ok=True)
        sleeper = subprocess.Popen(["sleep", "1000"])
        (folder / f"sleep.{sleeper.pid}").touch()
        subprocess.Popen([sys.executable, str(CHILD), "parent", pid_dir, marker])
        roles = {"sleep", "parent", "grandchild"}
        if escape:
            launcher = subprocess.Popen([sys.executable, str(CHILD), "escape", pid_dir, marker])
            launcher.wait(10)
            roles.add("escaped")
        deadline = time.monotonic() + 10
        while {p.name.split(".")[0] for p in folder.iterdir()} < roles:
            if time.monotonic() > deadline:
                raise TimeoutError(f"children did not start: {sorted(os.listdir(folder))}")
            time.sleep(0.01)
        os._exit(EXIT_CODE)


def create_plugin() -> SpawnChildren:
    return SpawnChildren()
