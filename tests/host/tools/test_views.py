"""Tests for the registry's view cache: calls that arrive together share one listing."""

from __future__ import annotations

import asyncio
from typing import Any

from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import (
    ToolAvailabilityContext,
    ToolExecutionContext,
    ToolExecutionResult,
    ToolInvocation,
    ToolSpec,
)

DEADLINE_S = 5.0


class GatedProvider:
    """Lists its tools only once its gate opens, counting how often it was asked."""

    provider_type = "fake"

    def __init__(self, name: str, tools: list[str]) -> None:
        self.provider_name = name
        self.tools = list(tools)
        self.gate = asyncio.Event()
        self.asked = asyncio.Event()
        self.list_count = 0
        self.fail = False

    async def list_tools(self, context: ToolAvailabilityContext | None = None) -> list[ToolSpec]:
        self.list_count += 1
        self.asked.set()
        await self.gate.wait()
        if self.fail:
            raise RuntimeError("down")
        return [ToolSpec(name=n, description=f"The {n} tool.") for n in self.tools]

    async def invoke(
        self, invocation: ToolInvocation, context: ToolExecutionContext | None = None
    ) -> ToolExecutionResult:
        return ToolExecutionResult(tool_name=invocation.tool_name, success=True, content="ok")

    async def close(self) -> None:
        return None


def _call(name: str, **arguments: Any) -> ToolInvocation:
    return ToolInvocation(tool_name=name, arguments=arguments)


def _registry(tools: list[str]) -> tuple[ToolRegistry, GatedProvider]:
    registry = ToolRegistry()
    provider = GatedProvider("p", tools)
    registry.register_provider(provider)
    return registry, provider


def _calls(registry: ToolRegistry, name: str, count: int) -> list[asyncio.Future[Any]]:
    return [asyncio.ensure_future(registry.invoke(_call(name))) for _ in range(count)]


async def test_calls_that_arrive_together_share_one_listing_and_all_run() -> None:
    registry, provider = _registry([f"t{i}" for i in range(20)])
    async with asyncio.timeout(DEADLINE_S):
        calls = [asyncio.ensure_future(registry.invoke(_call(f"t{i}"))) for i in range(20)]
        await provider.asked.wait()
        provider.gate.set()
        results = await asyncio.gather(*calls)
    assert [r.success for r in results] == [True] * 20
    assert provider.list_count == 1


async def test_calls_sharing_a_build_whose_caller_is_cancelled_still_get_their_tool() -> None:
    registry, provider = _registry(["t"])
    async with asyncio.timeout(DEADLINE_S):
        [first] = _calls(registry, "t", 1)
        await provider.asked.wait()
        waiters = _calls(registry, "t", 3)
        first.cancel()
        provider.gate.set()
        results = await asyncio.gather(*waiters)
    assert first.cancelled()
    assert [r.success for r in results] == [True] * 3
    assert provider.list_count == 2  # the cancelled build, then one more the waiters shared


async def test_a_shared_listing_that_failed_is_not_kept_and_the_next_call_lists_again() -> None:
    registry, broken = _registry(["lost"])
    broken.fail = True
    async with asyncio.timeout(DEADLINE_S):
        calls = _calls(registry, "lost", 3)
        await broken.asked.wait()
        broken.gate.set()
        results = await asyncio.gather(*calls)
        assert [r.error_code for r in results] == ["tool_not_found"] * 3
        assert broken.list_count == 1
        broken.fail = False
        result = await registry.invoke(_call("lost"))
    assert result.success
    assert broken.list_count == 2


async def test_a_call_after_the_tool_set_changed_does_not_join_an_older_build() -> None:
    registry, provider = _registry(["old"])
    async with asyncio.timeout(DEADLINE_S):
        [before] = _calls(registry, "old", 1)
        await provider.asked.wait()
        provider.tools = ["new"]
        registry.notify_changed("p")
        [after] = _calls(registry, "new", 1)
        provider.gate.set()
        results = await asyncio.gather(before, after)
    assert results[1].success
    assert provider.list_count == 2
    assert [s.name for s in await registry.list_tools()] == ["new"]
