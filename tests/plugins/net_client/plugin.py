"""网络查询: the HTTP clients published MaiBot plugins use, each reaching the same URL.

Every tool answers ``{"reached": bool, "answer": str}`` rather than raising,
the way plugins report a failed request to the chat ("查询失败").
"""

import asyncio
import json
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import httpx
import requests
from maibot_sdk import MaiBotPlugin, Tool

URL = {"url": {"type": "string", "description": "地址", "required": True}}
ADDRESS = {
    "host": {"type": "string", "description": "主机", "required": True},
    "port": {"type": "integer", "description": "端口", "required": True},
}


async def _outcome(fetch: Callable[[], Awaitable[str]]) -> dict[str, Any]:
    try:
        return {"reached": True, "answer": await fetch()}
    except Exception as exc:  # a plugin reports any failure to its chat
        return {"reached": False, "answer": f"{type(exc).__name__}: {exc}"}


class NetClientPlugin(MaiBotPlugin):
    async def on_load(self) -> None:
        pass

    async def on_unload(self) -> None:
        pass

    @Tool("fetch_aiohttp", description="用 aiohttp 请求", parameters=URL)
    async def with_aiohttp(self, url: str, **kwargs: Any) -> dict[str, Any]:
        async def fetch() -> str:
            timeout = aiohttp.ClientTimeout(total=10)
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.get(url) as response,
            ):
                return await response.text()

        return await _outcome(fetch)

    @Tool("fetch_httpx", description="用 httpx 请求", parameters=URL)
    async def with_httpx(self, url: str, **kwargs: Any) -> dict[str, Any]:
        async def fetch() -> str:
            async with httpx.AsyncClient(timeout=10) as client:
                return (await client.get(url)).text

        return await _outcome(fetch)

    @Tool("fetch_requests", description="用 requests 请求", parameters=URL)
    async def with_requests(self, url: str, **kwargs: Any) -> dict[str, Any]:
        async def fetch() -> str:
            return await asyncio.to_thread(lambda: requests.get(url, timeout=10).text)

        return await _outcome(fetch)

    @Tool("fetch_urllib", description="用 urllib 请求", parameters=URL)
    async def with_urllib(self, url: str, **kwargs: Any) -> dict[str, Any]:
        def get() -> str:
            with urllib.request.urlopen(url, timeout=10) as response:
                return response.read().decode()

        async def fetch() -> str:
            return await asyncio.to_thread(get)

        return await _outcome(fetch)

    @Tool("fetch_socket", description="用原始套接字请求", parameters=ADDRESS)
    async def with_socket(self, host: str, port: int, **kwargs: Any) -> dict[str, Any]:
        def get() -> str:
            with socket.create_connection((host, port), timeout=10) as connection:
                connection.sendall(f"GET / HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
                return _read_all(connection)

        async def fetch() -> str:
            return await asyncio.to_thread(get)

        return await _outcome(fetch)

    @Tool("fetch_streams", description="用 asyncio 流请求", parameters=ADDRESS)
    async def with_streams(self, host: str, port: int, **kwargs: Any) -> dict[str, Any]:
        async def fetch() -> str:
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(f"GET / HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
            body = (await reader.read()).decode()
            writer.close()
            await writer.wait_closed()
            return body

        return await _outcome(fetch)

    @Tool("fetch_subprocess", description="在子进程里请求", parameters=ADDRESS)
    async def with_subprocess(self, host: str, port: int, **kwargs: Any) -> dict[str, Any]:
        """A fresh interpreter: none of the runner's socket layer, its own resolver."""
        code = (
            "import socket,sys\n"
            f"c=socket.create_connection(({host!r},{port}),timeout=5)\n"
            f"c.sendall(b'GET / HTTP/1.0\\r\\nHost: {host}\\r\\n\\r\\n')\n"
            "print(c.recv(4096).decode())\n"
        )

        async def fetch() -> str:
            done = await asyncio.to_thread(
                subprocess.run, [sys.executable, "-I", "-c", code], capture_output=True, timeout=20
            )
            if done.returncode:
                raise OSError(done.stderr.decode().strip().splitlines()[-1])
            return done.stdout.decode()

        return await _outcome(fetch)

    @Tool(
        "fetch_child",
        description="在子进程里用 curl 或 urllib 请求（走 HTTP_PROXY）",
        parameters={
            "url": URL["url"],
            "program": {
                "type": "string",
                "description": "curl、curl-tunnel 或 python",
                "required": True,
            },
        },
    )
    async def with_child(self, url: str, program: str, **kwargs: Any) -> dict[str, Any]:
        """A program with its own network code, which knows only the proxy variables."""
        commands = {
            "curl": ["curl", "-sSf", "--max-time", "10", url],
            "curl-tunnel": ["curl", "-sSf", "--max-time", "10", "--proxytunnel", url],
            "python": [
                sys.executable,
                "-I",
                "-c",
                "import sys, urllib.request\n"
                "print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())",
                url,
            ],
        }

        async def fetch() -> str:
            done = await asyncio.to_thread(
                subprocess.run, commands[program], capture_output=True, timeout=30
            )
            if done.returncode:
                raise OSError(done.stderr.decode().strip()[-300:] or f"exit {done.returncode}")
            return done.stdout.decode()

        return await _outcome(fetch)

    @Tool("resolve", description="解析主机名", parameters={"host": ADDRESS["host"]})
    async def resolve(self, host: str, **kwargs: Any) -> dict[str, Any]:
        async def fetch() -> str:
            found = await asyncio.get_running_loop().getaddrinfo(host, 80)
            return json.dumps(sorted({f[4][0] for f in found}))

        return await _outcome(fetch)


def _read_all(connection: socket.socket) -> str:
    chunks = []
    while chunk := connection.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks).decode()


def create_plugin() -> NetClientPlugin:
    return NetClientPlugin()
