"""Run one model turn's tool calls: safe neighbours together, everything else alone.

A model often asks for several calls at once. Reading two files or searching
twice has no side effects, so those calls can overlap; sending a message,
writing a file or running a command must not overlap anything, and must
keep the order the model chose. The rule, per call in order:

- a call is *concurrency-safe* when its tool is ``read_only`` and not
  ``exclusive`` (both read from ``ToolSpec.metadata``);
- each run of consecutive safe calls runs concurrently;
- every other call runs alone, after the calls before it finished and
  before the calls after it start.

Results come back in call order. An unknown tool is never safe, so it gets a
``tool_not_found`` result in its turn. One failing call does not touch the
others: :meth:`ToolRegistry.invoke` returns failures as results.

What does not live here: executing a call (the registry) and timeouts (each
provider owns its own deadline).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import (
    ToolExecutionContext,
    ToolExecutionResult,
    ToolInvocation,
    ToolSpec,
)

__all__ = [
    "ConcurrencyPolicy",
    "default_concurrency_policy",
    "partition_calls",
    "run_tool_batch",
]

ConcurrencyPolicy = Callable[[ToolSpec | None], bool]
"""Decides from a tool's spec (None: unknown tool) whether its call may overlap others."""


def default_concurrency_policy(spec: ToolSpec | None) -> bool:
    """The default policy: ``read_only`` is True and ``exclusive`` is not True."""
    if spec is None:
        return False
    return spec.metadata.get("read_only") is True and spec.metadata.get("exclusive") is not True


def partition_calls(safe: Sequence[bool]) -> list[range]:
    """Split call positions into groups: runs of safe calls, and each unsafe call alone.

    Args:
        safe: For each call in order, whether it is concurrency-safe.

    Returns:
        Consecutive index ranges covering every call exactly once.
    """
    groups: list[range] = []
    start = 0
    for index, is_safe in enumerate(safe):
        run_continues = is_safe and index > start and safe[index - 1]
        if index > start and not run_continues:
            groups.append(range(start, index))
            start = index
    if safe:
        groups.append(range(start, len(safe)))
    return groups


async def run_tool_batch(
    registry: ToolRegistry,
    invocations: Sequence[ToolInvocation],
    context: ToolExecutionContext | None = None,
    *,
    is_concurrency_safe: ConcurrencyPolicy | None = None,
) -> list[ToolExecutionResult]:
    """Run one turn's calls through ``registry`` and return their results in call order.

    Args:
        registry: Routes each call.
        invocations: The calls, in the order the model made them.
        context: The conversation every call runs in.
        is_concurrency_safe: Overrides the default policy (module docstring).

    Returns:
        One result per invocation, at the same position.
    """
    policy = is_concurrency_safe or default_concurrency_policy
    availability = context.availability() if context is not None else None
    specs = [await registry.get_tool_spec(call.tool_name, availability) for call in invocations]
    results: list[ToolExecutionResult] = []
    for group in partition_calls([policy(spec) for spec in specs]):
        calls = [invocations[index] for index in group]
        if len(calls) == 1:
            results.append(await registry.invoke(calls[0], context))
            continue
        async with asyncio.TaskGroup() as tasks:
            running = [tasks.create_task(registry.invoke(call, context)) for call in calls]
        results.extend(task.result() for task in running)
    return results
