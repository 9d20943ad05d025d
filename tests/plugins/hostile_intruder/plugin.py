"""A plugin that tries what an attacker would: every tool reports what the kernel allowed.

Each tool answers ``{"allowed": bool, "detail": ...}`` instead of raising, so
a test reads the kernel's verdict (an ``OSError`` is "not allowed", with its
message) from an ordinary result.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
from typing import Any

from plughost_sdk import Plugin, Tool
from plughost_sdk.types import ToolParameterInfo, ToolParamType


def _text(name: str, description: str) -> ToolParameterInfo:
    return ToolParameterInfo(
        name=name, param_type=ToolParamType.STRING, description=description, required=True
    )


def _number(name: str, description: str) -> ToolParameterInfo:
    return ToolParameterInfo(
        name=name, param_type=ToolParamType.INTEGER, description=description, required=True
    )


def _verdict(action: Any) -> dict[str, Any]:
    try:
        detail = action()
    except OSError as exc:
        return {"content": "denied", "allowed": False, "detail": f"{type(exc).__name__}: {exc}"}
    return {"content": "allowed", "allowed": True, "detail": detail}


class Intruder(Plugin):
    @Tool("intrude_read", brief_description="Read a file", parameters=[_text("path", "file")])
    async def read(self, path: str, **kwargs: Any) -> dict[str, Any]:
        def action() -> str:
            with open(path, "rb") as handle:
                return handle.read(4096).decode(errors="replace")

        return _verdict(action)

    @Tool(
        "intrude_write",
        brief_description="Append to a file",
        parameters=[_text("path", "file"), _text("text", "what to append")],
    )
    async def write(self, path: str, text: str, **kwargs: Any) -> dict[str, Any]:
        def action() -> int:
            with open(path, "a", encoding="utf-8") as handle:
                return handle.write(text)

        return _verdict(action)

    @Tool(
        "intrude_connect",
        brief_description="Open a TCP connection",
        parameters=[_text("host", "address"), _number("port", "TCP port")],
    )
    async def connect(self, host: str, port: int, **kwargs: Any) -> dict[str, Any]:
        def action() -> str:
            with socket.create_connection((host, port), timeout=5) as connection:
                return str(connection.getpeername())

        return _verdict(action)

    @Tool(
        "intrude_unix",
        brief_description="Connect to a Unix socket by path",
        parameters=[_text("path", "socket file")],
    )
    async def connect_unix(self, path: str, **kwargs: Any) -> dict[str, Any]:
        def action() -> str:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
                connection.settimeout(5)
                connection.connect(path)
                return "connected"

        return _verdict(action)

    @Tool("intrude_listen", brief_description="Listen on a TCP port on every interface")
    async def listen(self, **kwargs: Any) -> dict[str, Any]:
        def action() -> int:
            with socket.create_server(("0.0.0.0", 0)) as server:
                return int(server.getsockname()[1])

        return _verdict(action)

    @Tool("intrude_signal", brief_description="Signal a process", parameters=[_number("pid", "")])
    async def send_signal(self, pid: int, **kwargs: Any) -> dict[str, Any]:
        return _verdict(lambda: os.kill(pid, signal.SIGCONT))

    @Tool("intrude_processes", brief_description="List the pids in /proc, and the own pid")
    async def processes(self, **kwargs: Any) -> dict[str, Any]:
        pids = sorted(int(entry) for entry in os.listdir("/proc") if entry.isdigit())
        return {"content": "pids", "allowed": True, "detail": pids, "own": os.getpid()}

    @Tool("intrude_kill_self", brief_description="SIGKILL the own process")
    async def kill_self(self, **kwargs: Any) -> dict[str, Any]:
        os.kill(os.getpid(), signal.SIGKILL)
        return {"content": "still alive", "allowed": False, "detail": os.getpid()}

    @Tool(
        "intrude_spawn",
        brief_description="Start sleeping children until the kernel refuses (a fork bomb)",
        parameters=[_number("count", "children to try")],
    )
    def spawn(self, count: int, **kwargs: Any) -> dict[str, Any]:
        children: list[subprocess.Popen[bytes]] = []
        refused = ""
        try:
            for _ in range(count):
                children.append(subprocess.Popen(["sleep", "60"]))
        except OSError as exc:
            refused = f"{type(exc).__name__}: {exc}"
        finally:
            for child in children:
                child.kill()
                child.wait()
        return {
            "content": "spawned",
            "allowed": not refused,
            "detail": len(children),
            "refused": refused,
        }

    @Tool("intrude_unshare", brief_description="Enter a new user namespace (unshare(2))")
    async def unshare(self, **kwargs: Any) -> dict[str, Any]:
        def action() -> int:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER
                code = ctypes.get_errno()
                raise OSError(code, os.strerror(code))
            return 0

        return _verdict(action)

    @Tool("intrude_environ", brief_description="Read the own environment's variable names")
    async def environ(self, **kwargs: Any) -> dict[str, Any]:
        return {"content": "env", "allowed": True, "detail": sorted(os.environ)}


def create_plugin() -> Intruder:
    return Intruder()
