"""Tests for run_tool_batch: safe calls overlap, others run alone, results keep call order."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from plughost.tools.batching import default_concurrency_policy, partition_calls, run_tool_batch
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import (
    ToolAvailabilityContext,
    ToolExecutionContext,
    ToolExecutionResult,
    ToolInvocation,
    ToolSpec,
)

Handler = Callable[[], Awaitable[str]]
HANDSHAKE_TIMEOUT = 2.0


class ScriptedProvider:
    """Runs a scripted coroutine per tool name and records starts and ends."""

    provider_name = "scripted"
    provider_type = "fake"

    def __init__(self, specs: list[ToolSpec], handlers: dict[str, Handler]) -> None:
        self.specs = specs
        self.handlers = handlers
        self.log: list[str] = []

    async def list_tools(self, context: ToolAvailabilityContext | None = None) -> list[ToolSpec]:
        return self.specs

    async def invoke(
        self, invocation: ToolInvocation, context: ToolExecutionContext | None = None
    ) -> ToolExecutionResult:
        name = invocation.call_id
        self.log.append(f"start {name}")
        try:
            content = await self.handlers[invocation.tool_name]()
        finally:
            self.log.append(f"end {name}")
        return ToolExecutionResult(tool_name=invocation.tool_name, content=content)

    async def close(self) -> None:
        return None


def _spec(name: str, **metadata: Any) -> ToolSpec:
    return ToolSpec(name=name, metadata=metadata)


def _call(tool: str, call_id: str) -> ToolInvocation:
    return ToolInvocation(tool_name=tool, call_id=call_id)


def _registry(provider: ScriptedProvider) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register_provider(provider)
    return registry


def _handshake(mine: asyncio.Event, theirs: asyncio.Event, reply: str) -> Handler:
    """A handler that finishes only if the other call runs at the same time."""

    async def handler() -> str:
        mine.set()
        async with asyncio.timeout(HANDSHAKE_TIMEOUT):
            await theirs.wait()
        return reply

    return handler


async def _yielding() -> str:
    # Yield to the loop a few times: any call running concurrently would interleave here.
    for _ in range(5):
        await asyncio.sleep(0)
    return "done"


async def test_two_read_only_calls_run_at_the_same_time() -> None:
    a, b = asyncio.Event(), asyncio.Event()
    provider = ScriptedProvider(
        [_spec("read_a", read_only=True), _spec("read_b", read_only=True)],
        {"read_a": _handshake(a, b, "A"), "read_b": _handshake(b, a, "B")},
    )
    results = await run_tool_batch(
        _registry(provider), [_call("read_a", "1"), _call("read_b", "2")]
    )
    assert [(r.success, r.content) for r in results] == [(True, "A"), (True, "B")]


async def test_calls_that_are_not_read_only_never_overlap() -> None:
    provider = ScriptedProvider(
        [_spec("write"), _spec("send", read_only=False)],
        {"write": _yielding, "send": _yielding},
    )
    calls = [_call("write", "1"), _call("send", "2"), _call("write", "3")]
    await run_tool_batch(_registry(provider), calls)
    assert provider.log == ["start 1", "end 1", "start 2", "end 2", "start 3", "end 3"]


async def test_exclusive_read_only_calls_run_alone() -> None:
    provider = ScriptedProvider(
        [_spec("read", read_only=True), _spec("exec", read_only=True, exclusive=True)],
        {"read": _yielding, "exec": _yielding},
    )
    calls = [_call("exec", "1"), _call("read", "2"), _call("exec", "3")]
    await run_tool_batch(_registry(provider), calls)
    assert provider.log == ["start 1", "end 1", "start 2", "end 2", "start 3", "end 3"]


async def test_an_unsafe_call_waits_for_the_safe_run_before_it_and_blocks_the_one_after() -> None:
    a, b = asyncio.Event(), asyncio.Event()
    provider = ScriptedProvider(
        [_spec("read_a", read_only=True), _spec("read_b", read_only=True), _spec("write")],
        {"read_a": _handshake(a, b, "A"), "read_b": _handshake(b, a, "B"), "write": _yielding},
    )
    calls = [_call("read_a", "1"), _call("read_b", "2"), _call("write", "3"), _call("read_a", "4")]
    results = await run_tool_batch(_registry(provider), calls)
    assert provider.log[:2] == ["start 1", "start 2"]
    assert sorted(provider.log[2:4]) == ["end 1", "end 2"]
    assert provider.log[4:] == ["start 3", "end 3", "start 4", "end 4"]
    assert [r.content for r in results] == ["A", "B", "done", "A"]  # events are still set


async def test_results_keep_call_order_when_a_later_call_finishes_first() -> None:
    release_first = asyncio.Event()

    async def slow() -> str:
        async with asyncio.timeout(HANDSHAKE_TIMEOUT):
            await release_first.wait()
        return "slow"

    async def fast() -> str:
        release_first.set()
        return "fast"

    provider = ScriptedProvider(
        [_spec("slow", read_only=True), _spec("fast", read_only=True)],
        {"slow": slow, "fast": fast},
    )
    results = await run_tool_batch(_registry(provider), [_call("slow", "1"), _call("fast", "2")])
    assert provider.log.index("end 2") < provider.log.index("end 1")
    assert [r.content for r in results] == ["slow", "fast"]


async def test_one_failing_call_does_not_affect_the_others() -> None:
    async def broken() -> str:
        raise RuntimeError("disk on fire")

    provider = ScriptedProvider(
        [_spec("broken", read_only=True), _spec("fine", read_only=True)],
        {"broken": broken, "fine": _yielding},
    )
    results = await run_tool_batch(
        _registry(provider), [_call("broken", "1"), _call("fine", "2"), _call("broken", "3")]
    )
    assert [r.success for r in results] == [False, True, False]
    assert results[0].error_code == "provider_error"
    assert results[1].content == "done"


async def test_an_unknown_tool_gets_a_not_found_result_in_its_place() -> None:
    provider = ScriptedProvider([_spec("read", read_only=True)], {"read": _yielding})
    results = await run_tool_batch(
        _registry(provider), [_call("read", "1"), _call("nope", "2"), _call("read", "3")]
    )
    assert [r.error_code for r in results] == [None, "tool_not_found", None]
    assert [r.tool_name for r in results] == ["read", "nope", "read"]


async def test_a_custom_policy_can_let_any_calls_overlap() -> None:
    a, b = asyncio.Event(), asyncio.Event()
    provider = ScriptedProvider(
        [_spec("write_a"), _spec("write_b")],
        {"write_a": _handshake(a, b, "A"), "write_b": _handshake(b, a, "B")},
    )
    results = await run_tool_batch(
        _registry(provider),
        [_call("write_a", "1"), _call("write_b", "2")],
        is_concurrency_safe=lambda spec: spec is not None,
    )
    assert [r.content for r in results] == ["A", "B"]


async def test_run_tool_batch_returns_nothing_for_no_calls() -> None:
    provider = ScriptedProvider([], {})
    assert await run_tool_batch(_registry(provider), []) == []


def test_default_policy_needs_read_only_and_not_exclusive() -> None:
    assert default_concurrency_policy(_spec("t", read_only=True))
    assert not default_concurrency_policy(_spec("t", read_only=True, exclusive=True))
    assert not default_concurrency_policy(_spec("t", read_only="yes"))
    assert not default_concurrency_policy(_spec("t"))
    assert not default_concurrency_policy(None)


def test_partition_calls_groups_runs_of_safe_calls_and_isolates_the_rest() -> None:
    groups = partition_calls([True, True, False, True, True, True, False, False, True])
    assert [list(g) for g in groups] == [[0, 1], [2], [3, 4, 5], [6], [7], [8]]
    assert partition_calls([]) == []
