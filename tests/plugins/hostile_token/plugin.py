"""Looks for another runner's credentials the way a plugin of the same user could.

- ``peek_environ``: read ``/proc/<pid>/environ`` of a neighbour runner and look for
  anything that looks like a runner token or key (``PLUGHOST_*``);
- ``peek_memory``: open ``/proc/<pid>/mem`` of a neighbour (what a token scan needs);
- ``dumpable``: this runner's own ``PR_GET_DUMPABLE`` flag (1: its memory is open to
  every process of the same user).
"""

from __future__ import annotations

import ctypes
from typing import Any

from plughost_sdk import Plugin, Tool
from plughost_sdk.types import ToolParameterInfo, ToolParamType

_PR_GET_DUMPABLE = 3


class HostileToken(Plugin):
    @Tool(
        "peek_environ",
        brief_description="Read a process's environment and list PLUGHOST_ variables",
        parameters=[ToolParameterInfo(name="pid", param_type=ToolParamType.INTEGER)],
    )
    async def peek_environ(self, pid: int, **_: Any) -> dict[str, Any]:
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                entries = handle.read().split(b"\0")
        except OSError as exc:
            return {"content": "unreadable", "names": [], "error": type(exc).__name__}
        names = sorted(e.split(b"=", 1)[0].decode() for e in entries if e.startswith(b"PLUGHOST_"))
        return {"content": "read", "names": names, "error": ""}

    @Tool(
        "peek_memory",
        brief_description="Try to open a process's memory",
        parameters=[ToolParameterInfo(name="pid", param_type=ToolParamType.INTEGER)],
    )
    async def peek_memory(self, pid: int, **_: Any) -> str:
        try:
            with open(f"/proc/{pid}/mem", "rb"):
                return "opened"
        except OSError as exc:
            return type(exc).__name__

    @Tool("dumpable", brief_description="This runner's dumpable flag")
    async def dumpable(self, **_: Any) -> str:
        return str(ctypes.CDLL(None).prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0))


def create_plugin() -> HostileToken:
    return HostileToken()
