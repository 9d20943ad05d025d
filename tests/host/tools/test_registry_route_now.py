"""ToolRegistry.route_now: a plain call routed without awaiting, as invoke would route it.

The direct lane of ``plughost serve`` (``plughost.mcp.direct_lane``) runs what
``route_now`` gives it and counts the call with ``call_began``/``call_ended``;
anything ``route_now`` declines goes to ``invoke``, which gives the answer.
"""

from __future__ import annotations

from typing import Any

from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import ToolExecutionContext, ToolExecutionResult, ToolSpec
from tests.host.tools.test_registry import SCHEMA, FakeProvider, _call, _spec

MCP = ToolExecutionContext(platform="mcp").availability()
DEFAULTED: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "default": 3}},
    "required": ["city"],
}


async def _registry(*specs: ToolSpec) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register_provider(FakeProvider("fake", list(specs)))
    await registry.invoke(_call("weather", city="Oslo"), ToolExecutionContext(platform="mcp"))
    return registry  # the view for MCP callers is built by the first call


async def test_route_now_gives_the_route_and_the_cast_and_defaulted_values() -> None:
    registry = await _registry(_spec("weather", parameters_schema=DEFAULTED))

    routed = registry.route_now("weather", {"city": "Oslo", "days": "5"}, MCP)
    defaulted = registry.route_now("weather", {"city": "Oslo"}, MCP)

    assert routed is not None and routed[0].spec.name == "weather"
    assert routed[1] == {"city": "Oslo", "days": 5}
    assert defaulted is not None and defaulted[1] == {"city": "Oslo", "days": 3}


async def test_route_now_leaves_to_invoke_what_only_invoke_can_answer() -> None:
    registry = await _registry(_spec("weather"), _spec("secret", metadata={"visibility": "hidden"}))

    assert registry.route_now("nowhere", {}, MCP) is None  # invoke: not found, with names
    assert registry.route_now("weather", {"days": 2}, MCP) is None  # invoke: the errors
    assert registry.route_now("secret", {"city": "Oslo"}, MCP) is None  # invoke: refusal
    other = ToolExecutionContext(platform="qq").availability()
    assert registry.route_now("weather", {"city": "Oslo"}, other) is None  # no view built
    registry.begin_shutdown()
    assert registry.route_now("weather", {"city": "Oslo"}, MCP) is None  # invoke: shutting down


async def test_a_call_counted_by_call_began_is_in_flight_and_observed_when_it_ends() -> None:
    registry = await _registry(_spec("weather", parameters_schema=SCHEMA))
    seen: list[tuple[str | None, str, float]] = []
    registry.add_call_observer(
        lambda spec, result, seconds: seen.append((spec and spec.name, result.tool_name, seconds))
    )
    routed = registry.route_now("weather", {"city": "Oslo"}, MCP)
    assert routed is not None

    registry.call_began()
    in_flight = registry.inflight
    idle_while_running = await registry.wait_idle(0)
    registry.call_ended(routed[0].spec, ToolExecutionResult(tool_name="weather", content="ok"), 0.5)
    registry.call_began()
    registry.call_ended(routed[0].spec, None, 0.1)  # cancelled: not observed

    assert in_flight == 1 and idle_while_running is False
    assert registry.inflight == 0 and await registry.wait_idle(0)
    assert seen == [("weather", "weather", 0.5)]


async def test_route_now_sees_a_tool_set_change_at_once_for_the_context_it_routed_before() -> None:
    # The view cache remembers the context object it last served by identity; a change of
    # the tool set must still reach that very object at once, and an equal context built
    # anew finds the same view as the remembered one.
    registry = await _registry(_spec("weather"))
    same = ToolExecutionContext(platform="mcp").availability()

    before = registry.route_now("weather", {"city": "Oslo"}, MCP)
    again = registry.route_now("weather", {"city": "Oslo"}, MCP)
    equal = registry.route_now("weather", {"city": "Oslo"}, same)
    registry.notify_changed("fake")
    after = registry.route_now("weather", {"city": "Oslo"}, MCP)

    assert same is not MCP and same == MCP
    assert before is not None and again is not None and equal is not None
    assert before[0] is again[0] is equal[0]
    assert after is None  # no view for the new tool set yet: invoke builds it
    await registry.invoke(_call("weather", city="Oslo"), ToolExecutionContext(platform="mcp"))
    rebuilt = registry.route_now("weather", {"city": "Oslo"}, MCP)
    assert rebuilt is not None and rebuilt[0] is not before[0]
