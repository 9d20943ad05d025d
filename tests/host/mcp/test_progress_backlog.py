"""Progress reports a client has yet to take wait in bounded memory.

RegistryMCPServer.run_call relays a tool's progress to the client in order; a
client that does not read (its stdout pipe full, its SSE stream not read) must
not make the host keep every report a tool (a plugin, an upstream server) sends.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio

from plughost.mcp import progress_backlog
from plughost.mcp.registry_server import RegistryMCPServer
from plughost.tools import progress
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import ToolExecutionResult, ToolInvocation, ToolSpec

SENT = 20_000


class Chatty:
    """One tool that reports progress ``SENT`` times, then answers."""

    provider_name = "chatty"
    provider_type = "builtin"

    async def list_tools(self, context: Any = None) -> list[ToolSpec]:
        return [ToolSpec(name="chatty", description="Reports a lot.")]

    async def invoke(self, invocation: ToolInvocation, context: Any = None) -> ToolExecutionResult:
        for n in range(1, SENT + 1):
            progress.report(n, SENT)
        return ToolExecutionResult(tool_name=invocation.tool_name, content="done")

    async def close(self) -> None:
        pass


class Link:
    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        yield

    def log(self, level: int, logger: str, message: str) -> None:
        return None

    async def generate(self, request: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError

    async def elicit(self, asker: str, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError


async def test_a_client_that_falls_behind_gets_the_newest_reports_in_order_then_the_result() -> (
    None
):
    registry = ToolRegistry()
    registry.register_provider(Chatty())
    bridge = RegistryMCPServer(registry)
    reading = asyncio.Event()
    got: list[float] = []

    async def report(report: progress.Progress) -> None:
        await reading.wait()  # the client reads nothing until the tool has sent everything
        got.append(report.progress)

    async with bridge.running(), anyio.create_task_group() as tg:
        results: list[ToolExecutionResult] = []

        async def call() -> None:
            results.append(await bridge.run_call("chatty", {}, "1", Link(), report))

        tg.start_soon(call)
        with anyio.fail_after(10):
            await anyio.wait_all_tasks_blocked()  # every report is sent; none is taken
            reading.set()

    assert results[0].success
    assert got == sorted(got) and got[-1] == SENT  # in order, and the last one always
    assert len(got) <= progress_backlog.PENDING_REPORTS + 1  # the one taken, and those kept
