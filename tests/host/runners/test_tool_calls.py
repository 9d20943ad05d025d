"""Tests for the tools.call capability: grants, depth, deadlines, over an in-memory registry.

Plugin tools here are in-process handlers behind a provider that looks like the
plugin provider to the capability (``plugins``, ``plugin:<id>:<tool>``), so chains
of calls between plugins can run without runner processes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from plughost.runners.capabilities import CapabilityCall, CapabilityRouter
from plughost.runners.channel import RemoteError
from plughost.runners.tool_calls import TOOLS_CALL, ToolCallCapability
from plughost.settings import HostSettings
from plughost.tools.builtin import BuiltinTool, BuiltinToolProvider
from plughost.tools.registry import ToolRegistry
from plughost_sdk import wire
from plughost_sdk.manifest import Manifest
from plughost_sdk.models import (
    ToolAvailabilityContext,
    ToolExecutionContext,
    ToolExecutionResult,
    ToolInvocation,
    ToolSpec,
)

Handler = Callable[[dict[str, Any]], Awaitable[str]]

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"text": {"type": "string"}}}


class FakePlugins:
    """Plugin tools as in-process handlers, listed like the plugin provider lists them."""

    provider_name = "plugins"
    provider_type = "plugin"

    def __init__(self) -> None:
        self.handlers: dict[str, tuple[str, Handler]] = {}

    def add(self, plugin_id: str, tool: str, handler: Handler) -> None:
        self.handlers[tool] = (plugin_id, handler)

    async def list_tools(self, context: ToolAvailabilityContext | None = None) -> list[ToolSpec]:
        return [
            ToolSpec(
                name=tool,
                parameters_schema=SCHEMA,
                provider_name=self.provider_name,
                provider_type=self.provider_type,
                tool_id=f"plugin:{plugin_id}:{tool}",
            )
            for tool, (plugin_id, _) in self.handlers.items()
        ]

    async def invoke(
        self, invocation: ToolInvocation, context: ToolExecutionContext | None = None
    ) -> ToolExecutionResult:
        _, handler = self.handlers[invocation.tool_name]
        assert isinstance(invocation.arguments, dict)
        content = await handler(invocation.arguments)
        return ToolExecutionResult(tool_name=invocation.tool_name, content=content)

    async def close(self) -> None:
        pass


class Rig:
    """A registry with fake plugin tools and one built-in, and the capability over it."""

    def __init__(self) -> None:
        self.settings = HostSettings(call_timeout=10.0)
        self.plugins = FakePlugins()
        self.registry = ToolRegistry()
        self.registry.register_provider(self.plugins)
        self.registry.register_provider(BuiltinToolProvider([_builtin("clock")]))
        self.capability = ToolCallCapability(self.registry, lambda: self.settings)

    async def call(self, caller: str, name: str, **args: Any) -> ToolExecutionResult:
        value = await self.capability(CapabilityCall(caller, TOOLS_CALL, {"name": name, **args}))
        return wire.result_from_wire(value)


def _builtin(name: str) -> BuiltinTool:
    async def handler(arguments: dict[str, Any], context: ToolExecutionContext) -> str:
        return f"{name} ran"

    return BuiltinTool(spec=ToolSpec(name=name), handler=handler)


def _echo(prefix: str) -> Handler:
    async def handler(arguments: dict[str, Any]) -> str:
        return f"{prefix}: {arguments.get('text', '')}"

    return handler


@pytest.fixture
def rig() -> Rig:
    made = Rig()
    made.plugins.add("tests.a", "a_echo", _echo("a"))
    made.plugins.add("tests.b", "b_echo", _echo("b"))
    return made


async def test_a_plugin_calls_its_own_tool_without_a_grant(rig: Rig) -> None:
    result = await rig.call("tests.a", "a_echo", arguments={"text": "hi"})

    assert result.success, result.error_message
    assert result.content == "a: hi"
    assert result.tool_name == "a_echo"


async def test_another_plugins_tool_without_a_grant_is_denied_and_the_error_names_the_fix(
    rig: Rig,
) -> None:
    with pytest.raises(RemoteError) as raised:
        await rig.call("tests.a", "b_echo", arguments={"text": "hi"})

    assert raised.value.code == "capability_denied"
    message = str(raised.value)
    assert "plugin tests.a may not call tool b_echo" in message
    assert "[host.tool_grants]" in message
    assert '"tests.a" = ["b_echo"]' in message


async def test_a_builtin_needs_a_grant_too(rig: Rig) -> None:
    with pytest.raises(RemoteError):
        await rig.call("tests.a", "clock")

    rig.settings.tool_grants["tests.a"] = ["builtin:builtin:*"]

    assert (await rig.call("tests.a", "clock")).content == "clock ran"


@pytest.mark.parametrize("pattern", ["b_echo", "tests.b.*", "plugin:tests.b:b_echo", "*"])
async def test_a_grant_by_name_plugin_tool_id_or_everything_allows_the_call(
    rig: Rig, pattern: str
) -> None:
    rig.settings.tool_grants["tests.a"] = [pattern]

    result = await rig.call("tests.a", "b_echo", arguments={"text": "hi"})

    assert result.content == "b: hi"


async def test_a_grant_for_one_plugin_does_not_reach_a_plugin_whose_id_extends_it(
    rig: Rig,
) -> None:
    rig.plugins.add("tests.b.extra", "extra_echo", _echo("extra"))
    rig.settings.tool_grants["tests.a"] = ["tests.b.*"]

    with pytest.raises(RemoteError):
        await rig.call("tests.a", "extra_echo")


async def test_grants_are_read_again_at_every_call(rig: Rig) -> None:
    rig.settings.tool_grants["tests.a"] = ["b_echo"]
    assert (await rig.call("tests.a", "b_echo")).success

    rig.settings.tool_grants["tests.a"].clear()

    with pytest.raises(RemoteError):
        await rig.call("tests.a", "b_echo")


async def test_a_missing_tool_without_a_grant_is_refused_exactly_like_a_forbidden_one(
    rig: Rig,
) -> None:
    refusals = []
    for name in ("b_echo", "no_such_tool"):
        with pytest.raises(RemoteError) as raised:
            await rig.call("tests.a", name)
        refusals.append((raised.value.code, str(raised.value).replace(name, "NAME")))

    assert refusals[0] == refusals[1]


async def test_a_missing_tool_with_a_grant_is_an_ordinary_tool_not_found(rig: Rig) -> None:
    rig.settings.tool_grants["tests.a"] = ["*"]

    result = await rig.call("tests.a", "b_ecko")

    assert not result.success
    assert result.error_code == "tool_not_found"
    assert "Did you mean: b_echo" in result.error_message


async def test_arguments_are_checked_by_the_registry_and_may_be_json_text(rig: Rig) -> None:
    bad = await rig.call("tests.a", "a_echo", arguments={"text": "hi", "extra": 1})
    good = await rig.call("tests.a", "a_echo", arguments='{"text": "from json"}')

    assert bad.error_code == "invalid_arguments"
    assert "unexpected field 'extra'" in bad.error_message
    assert good.content == "a: from json"


@pytest.mark.parametrize(
    "args",
    [{}, {"name": ""}, {"name": "a_echo", "arguments": [1]}, {"name": "a_echo", "timeout_ms": 0}],
)
async def test_malformed_capability_arguments_are_refused(rig: Rig, args: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"tools\.call"):
        await rig.capability(CapabilityCall("tests.a", TOOLS_CALL, args))


async def test_a_loop_between_two_plugins_is_refused_at_the_depth_limit(rig: Rig) -> None:
    rig.settings.tool_grants = {"tests.a": ["pong"], "tests.b": ["ping"]}
    runs: list[str] = []

    def relay(me: str, other: str) -> Handler:
        async def handler(arguments: dict[str, Any]) -> str:
            runs.append(me)
            try:
                return (await rig.call(f"tests.{me}", other)).content
            except RemoteError as exc:
                return f"refused: {exc}"

        return handler

    rig.plugins.add("tests.a", "ping", relay("a", "pong"))
    rig.plugins.add("tests.b", "pong", relay("b", "ping"))

    result = await rig.registry.invoke(ToolInvocation(tool_name="ping"))

    assert runs == ["a", "b", "a", "b", "a"]  # the first run is the model's call, then 4 nested
    assert result.content.startswith("refused: plugin tests.a may not call tool pong")
    assert "tests.a -> tests.b -> tests.a -> tests.b -> tests.a -> pong" in result.content
    assert "deeper than 4 nested calls" in result.content


async def test_the_depth_limit_is_a_setting(rig: Rig) -> None:
    rig.settings.tool_call_depth = 1
    depth_reached: list[int] = []

    async def recurse(arguments: dict[str, Any]) -> str:
        depth_reached.append(len(depth_reached))
        try:
            return (await rig.call("tests.a", "recurse")).content
        except RemoteError as exc:
            return exc.code

    rig.plugins.add("tests.a", "recurse", recurse)

    result = await rig.registry.invoke(ToolInvocation(tool_name="recurse"))

    assert result.content == "capability_denied"
    assert depth_reached == [0, 1]


async def test_a_call_that_outlives_its_timeout_is_a_timeout_result(rig: Rig) -> None:
    async def hang(arguments: dict[str, Any]) -> str:
        await asyncio.Event().wait()
        return "never"

    rig.plugins.add("tests.a", "hang", hang)

    result = await rig.call("tests.a", "hang", timeout_ms=50)

    assert result.error_code == "timeout"
    assert "did not finish within" in result.error_message


async def test_a_nested_call_never_outlives_the_call_it_is_made_in(rig: Rig) -> None:
    # Runners do not pass cancellation on to the host's capability handler; a shielded
    # task plays that here, so only the inherited deadline can end the inner call.
    inner: list[asyncio.Task[ToolExecutionResult]] = []

    async def hang(arguments: dict[str, Any]) -> str:
        await asyncio.Event().wait()
        return "never"

    async def outer(arguments: dict[str, Any]) -> str:
        task = asyncio.ensure_future(rig.call("tests.a", "hang", timeout_ms=60_000))
        inner.append(task)
        return (await asyncio.shield(task)).content

    rig.plugins.add("tests.a", "hang", hang)
    rig.plugins.add("tests.a", "outer", outer)

    first = await rig.call("tests.a", "outer", timeout_ms=100)
    async with asyncio.timeout(5):
        nested = await inner[0]

    assert first.error_code == "timeout"
    assert nested.error_code == "timeout"


async def test_the_router_passes_a_refusal_through_with_its_code(rig: Rig) -> None:
    router = CapabilityRouter()
    router.register(TOOLS_CALL, rig.capability)
    manifest = Manifest.model_validate(
        {
            "manifest_version": 2,
            "id": "tests.a",
            "version": "1.0.0",
            "name": "a",
            "author": {"name": "tests"},
            "capabilities": ["tools.call"],
        }
    )

    with pytest.raises(RemoteError) as raised:
        await router.dispatch(manifest, TOOLS_CALL, {"name": "b_echo"})

    assert raised.value.code == "capability_denied"
    assert "[host.tool_grants]" in str(raised.value)


async def test_a_granted_call_reaches_a_hidden_tool_that_a_model_cannot_call() -> None:
    made = Rig()
    admin = BuiltinTool(
        spec=ToolSpec(name="admin"), handler=_builtin("admin").handler, visibility="hidden"
    )
    made.registry.register_provider(BuiltinToolProvider([admin], provider_name="admin_tools"))
    made.settings.tool_grants = {"tests.a": ["admin"]}

    granted = await made.call("tests.a", "admin")
    by_model = await made.registry.invoke(ToolInvocation(tool_name="admin"))

    assert granted.success and granted.content == "admin ran"
    assert by_model.error_code == "tool_not_visible"
