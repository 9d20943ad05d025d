"""One ``plughost serve --mcp-stdio`` for a whole test file, each test on upstreams of its own.

Starting serve and its upstreams costs seconds, so the gateway tests that leave
serve running share one: the file lists every upstream its tests need, each test
calls only its own (its own events folder, its own restarts) and reads only the
serve log lines of its own tools (:meth:`Gateway.ways`), so no test depends on
which ran before it or how it ended. A test that stops serve itself starts its own.

The official client's session lives in a task of its own (:func:`held`): a
module-scoped fixture is set up and torn down in different tasks, and the
client's task groups must be left in the task that entered them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.mcp_servers.harness import HERE, PUBLISHED

T = TypeVar("T")

TAKEN = "mcp call answered beside the session tool="
LANE = "lane=direct"
RECORDING = HERE / "forwarding_server.py"
EVERYTHING = PUBLISHED / "node" / "node_modules" / ".bin" / "mcp-server-everything"
NO_EVERYTHING = "node and server-everything are needed: run scripts/install_test_mcp_servers.sh"
START_TIMEOUT = 90.0  # serve, its upstreams and the client's handshake, on a busy machine
# Every upstream of the file starts at once, each importing the SDK: on a busy machine
# that takes longer than the default connect_timeout, which no test here is about.
CONNECT_TIMEOUT = 60


def everything_available() -> bool:
    """Whether server-everything (npm) and node are installed for these tests."""
    return EVERYTHING.exists() and shutil.which("node") is not None


def everything_upstream() -> str:
    """The ``[mcp.servers.everything]`` table: server-everything over stdio."""
    table = f'[mcp.servers.everything]\ncommand = "node"\nargs = [{json.dumps(str(EVERYTHING))}]\n'
    return table + _options({"connect_timeout": CONNECT_TIMEOUT})


def stdio_upstream(name: str, script: Path, *args: object, **options: object) -> str:
    """The ``[mcp.servers.NAME]`` table of a Python stdio upstream running ``script ARGS``."""
    argv = ", ".join(json.dumps(str(arg)) for arg in (script, *args))
    table = f"[mcp.servers.{name}]\ncommand = {json.dumps(sys.executable)}\nargs = [{argv}]\n"
    return table + _options({"connect_timeout": CONNECT_TIMEOUT, **options})


def _options(options: dict[str, object]) -> str:
    return "".join(f"{key} = {json.dumps(value)}\n" for key, value in options.items())


@dataclass(frozen=True, slots=True)
class Gateway:
    """A running serve's client, its log, and the events folder of each recording upstream."""

    client: Client
    log: Path
    root: Path

    def events(self, server: str) -> list[str]:
        """The ``<event> <label>`` lines the recording upstream ``server`` wrote so far."""
        path = self.root / server / "events"
        return path.read_text().splitlines() if path.exists() else []

    def ways(self, *servers: str) -> list[tuple[str, bool]]:
        """Each call to a tool of ``servers`` answered beside the server session, in order:
        its tool, and whether on the direct lane."""
        prefixes = tuple(f"mcp_{server}_" for server in servers)
        lines = self.log.read_text().splitlines()
        found = [
            (line.split(TAKEN, 1)[1].split()[0], line.endswith(LANE))
            for line in lines
            if TAKEN in line
        ]
        return [way for way in found if way[0].startswith(prefixes)]

    def taken(self, *servers: str) -> list[str]:
        """The tools of :meth:`ways`."""
        return [tool for tool, _ in self.ways(*servers)]


def recording_upstream(root: Path, name: str, **options: object) -> str:
    """The table of a recording upstream (``forwarding_server.py``) with its own events folder."""
    folder = root / name
    folder.mkdir()
    return stdio_upstream(name, RECORDING, folder, **options)


@contextlib.asynccontextmanager
async def serve_client(config: Path, log: Path) -> AsyncIterator[Client]:
    """Run ``plughost -vv serve --mcp-stdio`` on ``config``, its stderr to ``log``; its client."""
    args = ["-m", "plughost", "-vv", "serve", "--no-watch", "--config", str(config)]
    target = StdioServerParameters(command=sys.executable, args=[*args, "--mcp-stdio"])
    with log.open("w") as errlog:
        async with Client(stdio_client(target, errlog=errlog), mode="legacy", cache=None) as c:
            yield c


@contextlib.asynccontextmanager
async def shared_gateway(root: Path, tables: list[str]) -> AsyncIterator[Gateway]:
    """A serve in ``root`` with the upstreams ``tables`` configure, held for many tests."""
    config = root / "plughost.toml"
    config.write_text(f"[host]\ndata_dir = {json.dumps(str(root / 'data'))}\n" + "".join(tables))
    log = root / "serve.log"
    async with held(serve_client(config, log), timeout=START_TIMEOUT) as client:
        yield Gateway(client, log, root)


@contextlib.asynccontextmanager
async def held(context: AbstractAsyncContextManager[T], *, timeout: float) -> AsyncIterator[T]:
    """Enter ``context`` in a task of its own, yield what it gave, and exit it there at the end.

    Raises:
        TimeoutError: ``context`` was not entered within ``timeout`` seconds.
    """
    opened: asyncio.Future[T] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()

    async def keep() -> None:
        try:
            async with context as value:
                opened.set_result(value)
                await stop.wait()
        except Exception as exc:
            if not opened.done():
                opened.set_exception(exc)
            raise
        finally:
            opened.cancel()  # a no-op once it has its value or its error

    task = asyncio.create_task(keep())
    try:
        async with asyncio.timeout(timeout):
            value = await asyncio.shield(opened)
        yield value
    finally:
        stop.set()
        if not opened.done():
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
