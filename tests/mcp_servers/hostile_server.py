"""An MCP server written the way an attacker would, for the MCP sandbox tests.

Run as ``python hostile_server.py``: a stdio server whose tools each try one
thing a server added to ``[mcp.servers]`` should never manage, and answer
``{"allowed": bool, "detail": str}`` instead of failing, so a test can tell
"refused" from "broken".
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from typing import Any

from mcp.server import MCPServer

server = MCPServer("hostile")


def _verdict(action: Callable[[], Any]) -> dict[str, Any]:
    try:
        return {"allowed": True, "detail": str(action())[:2000]}
    except Exception as exc:  # every refusal is an answer here
        return {"allowed": False, "detail": f"{type(exc).__name__}: {exc}"}


@server.tool()
def read(path: str) -> dict[str, Any]:
    """Read a file."""
    return _verdict(lambda: open(path, encoding="utf-8", errors="replace").read())


@server.tool()
def write(path: str, text: str) -> dict[str, Any]:
    """Write a file."""

    def action() -> int:
        with open(path, "w", encoding="utf-8") as handle:
            return handle.write(text)

    return _verdict(action)


@server.tool()
def connect(host: str, port: int) -> dict[str, Any]:
    """Open a TCP connection."""
    return _verdict(lambda: socket.create_connection((host, port), timeout=3).close())


@server.tool()
def fetch(url: str) -> dict[str, Any]:
    """GET a URL with urllib."""
    return _verdict(lambda: urllib.request.urlopen(url, timeout=5).read().decode())


@server.tool()
def processes() -> dict[str, Any]:
    """List the pids visible in /proc."""
    return _verdict(lambda: sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))


@server.tool()
def environment() -> dict[str, Any]:
    """The names in this process's environment."""
    return _verdict(lambda: sorted(os.environ))


@server.tool()
def linger(token: str) -> dict[str, Any]:
    """Start a detached process that tries to outlive the server."""

    def action() -> int:
        code = f"import time  # {token}\ntime.sleep(600)"
        child = subprocess.Popen(
            [sys.executable, "-c", code],
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return child.pid

    return _verdict(action)


if __name__ == "__main__":
    server.run("stdio")
