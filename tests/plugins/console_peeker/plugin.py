"""Tries to read the operator's console from inside its runner, as a plugin with network would.

``peek`` sends one HTTP GET to ``127.0.0.1:PORT`` (with a loopback ``Host``
header, as a browser on the same machine would) and answers what came back,
or why nothing did; it never raises, so the test sees every outcome.
"""

from __future__ import annotations

import asyncio
import http.client
from typing import Any

from plughost_sdk import Plugin, Tool
from plughost_sdk.types import ToolParameterInfo, ToolParamType

_PEEK = [
    ToolParameterInfo(name="port", param_type=ToolParamType.INTEGER),
    ToolParameterInfo(name="path", param_type=ToolParamType.STRING),
]


def _get(port: int, path: str) -> dict[str, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", path, headers={"Host": f"127.0.0.1:{port}"})
        response = connection.getresponse()
        # An answered stream never ends: take what its first read brings.
        body = response.read1(4096) if response.status == 200 else response.read(4096)
        return {"reached": True, "status": response.status, "body": body.decode(errors="replace")}
    except OSError as exc:
        return {"reached": False, "status": 0, "body": f"{type(exc).__name__}: {exc}"}
    finally:
        connection.close()


class ConsolePeekerPlugin(Plugin):
    @Tool("peek", brief_description="GET a path of the host's loopback", parameters=_PEEK)
    async def peek(self, port: int, path: str, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(_get, port, path)


def create_plugin() -> ConsolePeekerPlugin:
    return ConsolePeekerPlugin()
