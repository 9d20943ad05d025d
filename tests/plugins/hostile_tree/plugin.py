"""Spends CPU time in processes it starts, where a per-process limit does not look.

``burn`` starts busy children and returns at once: each child alone stays
under ``RLIMIT_CPU``, together they do not. ``detach`` makes each child fork a
grandchild and exit, so the busy processes are orphans reaped by whoever
adopts them; ``relay`` runs short-lived busy children one after another, each
gone (and waited for) before the next starts. ``read`` returns a file whole
(read by the runner, or by a child process of it), for what ``/proc`` shows
from inside the runner; ``dial`` and ``serve_once`` use the TCP ports a
manifest asks for.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from typing import Any

from plughost_sdk import Plugin, Tool
from plughost_sdk.types import ToolParameterInfo, ToolParamType

SPIN = "while True: pass"
DETACHED = "import os, sys\nif os.fork() == 0:\n    while True: pass\nsys.exit(0)"
SHORT = "import time\nend = time.process_time() + 0.4\nwhile time.process_time() < end: pass"
_children: list[subprocess.Popen[bytes]] = []


def _run_relay() -> None:
    while True:
        subprocess.run([sys.executable, "-c", SHORT], check=False)


class HostileTree(Plugin):
    @Tool(
        "burn",
        brief_description="Start busy child processes and return",
        parameters=[
            ToolParameterInfo(name="count", param_type=ToolParamType.INTEGER),
            ToolParameterInfo(name="mode", param_type=ToolParamType.STRING, required=False),
        ],
    )
    def burn(self, count: int, mode: str = "children", **kwargs: Any) -> str:
        if mode == "relay":
            for _ in range(count):
                threading.Thread(target=_run_relay, daemon=True).start()
            return f"{count} relays"
        code = DETACHED if mode == "detach" else SPIN
        for _ in range(count):
            child = subprocess.Popen([sys.executable, "-c", code])
            if mode == "detach":
                child.wait(10)  # the busy grandchild is now an orphan
            else:
                _children.append(child)
        return f"{count} started"

    @Tool(
        "read",
        brief_description="Read a file whole (at most 4 MiB), here or in a child process",
        parameters=[
            ToolParameterInfo(name="path", param_type=ToolParamType.STRING),
            ToolParameterInfo(name="child", param_type=ToolParamType.BOOLEAN, required=False),
        ],
    )
    def read(self, path: str, child: bool = False, **kwargs: Any) -> dict[str, Any]:
        if child:
            code = "import sys; sys.stdout.write(open(sys.argv[1], errors='replace').read())"
            done = subprocess.run(
                [sys.executable, "-c", code, path], capture_output=True, text=True, check=False
            )
            if done.returncode:
                return {"content": "denied", "readable": False, "text": done.stderr}
            return {"content": "read", "readable": True, "text": done.stdout}
        try:
            with open(path, "rb") as handle:
                text = handle.read(4 << 20).decode(errors="replace")
        except OSError as exc:
            return {"content": "denied", "readable": False, "text": f"{exc}"}
        return {"content": "read", "readable": True, "text": text}

    @Tool(
        "dial",
        brief_description="Connect to the host's loopback on a port and read one line",
        parameters=[ToolParameterInfo(name="port", param_type=ToolParamType.INTEGER)],
    )
    def dial(self, port: int, **kwargs: Any) -> str:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
            return connection.makefile("rb").readline().decode().strip()

    @Tool(
        "serve_once",
        brief_description="Listen on a port of every interface; greet one connection",
        parameters=[ToolParameterInfo(name="port", param_type=ToolParamType.INTEGER)],
    )
    def serve_once(self, port: int, **kwargs: Any) -> int:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("0.0.0.0", port))
        listener.listen(1)

        def greet() -> None:
            with listener:
                connection, _ = listener.accept()
                with connection:
                    connection.sendall(b"hello from the plugin\n")

        threading.Thread(target=greet, daemon=True).start()
        return int(listener.getsockname()[1])

    @Tool("fine", brief_description="Answer at once")
    async def fine(self, **kwargs: Any) -> str:
        return "fine"


def create_plugin() -> HostileTree:
    return HostileTree()
