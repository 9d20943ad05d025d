"""Tests for ToolRegistry: ordering, replacement, routing, failures, caching, change tracking."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

import plughost.tools.registry as registry_module
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import (
    ToolAvailabilityContext,
    ToolExecutionContext,
    ToolExecutionResult,
    ToolInvocation,
    ToolSpec,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city"],
}


def _spec(name: str, **fields: Any) -> ToolSpec:
    fields.setdefault("parameters_schema", SCHEMA)
    return ToolSpec(name=name, description=f"The {name} tool.", **fields)


class FakeProvider:
    """An in-memory provider that records what the registry asks of it."""

    provider_type = "fake"

    def __init__(self, name: str, specs: list[ToolSpec] | None = None) -> None:
        self.provider_name = name
        self.specs = list(specs or [])
        self.calls: list[tuple[ToolInvocation, ToolExecutionContext | None]] = []
        self.list_count = 0
        self.closed = False
        self.raise_on_invoke: BaseException | None = None
        self.raise_on_list: Exception | None = None
        self.raise_on_close: Exception | None = None
        self.reply: Any = None

    async def list_tools(self, context: ToolAvailabilityContext | None = None) -> list[ToolSpec]:
        self.list_count += 1
        if self.raise_on_list is not None:
            raise self.raise_on_list
        return list(self.specs)

    async def invoke(
        self, invocation: ToolInvocation, context: ToolExecutionContext | None = None
    ) -> ToolExecutionResult:
        self.calls.append((invocation, context))
        if self.raise_on_invoke is not None:
            raise self.raise_on_invoke
        if self.reply is not None:
            return self.reply  # type: ignore[no-any-return]
        return ToolExecutionResult(
            tool_name=invocation.tool_name, content=f"{self.provider_name} ran"
        )

    async def close(self) -> None:
        self.closed = True
        if self.raise_on_close is not None:
            raise self.raise_on_close


class ScopedProvider(FakeProvider):
    """Lists its tool only in group chats."""

    async def list_tools(self, context: ToolAvailabilityContext | None = None) -> list[ToolSpec]:
        self.list_count += 1
        return list(self.specs) if context is None or context.is_group_chat else []


def _call(name: str, **arguments: Any) -> ToolInvocation:
    return ToolInvocation(tool_name=name, arguments=arguments, call_id="call_1")


async def _names(registry: ToolRegistry, **kwargs: Any) -> list[str]:
    return [spec.name for spec in await registry.list_tools(**kwargs)]


# --- providers and order -----------------------------------------------------------------


async def test_registry_lists_tools_in_provider_registration_order() -> None:
    registry = ToolRegistry()
    registry.register_provider(FakeProvider("b", [_spec("zeta"), _spec("alpha")]))
    registry.register_provider(FakeProvider("a", [_spec("mid")]))
    assert await _names(registry) == ["zeta", "alpha", "mid"]


async def test_registry_replaces_a_provider_with_the_same_name_in_place() -> None:
    registry = ToolRegistry()
    old = FakeProvider("first", [_spec("one")])
    registry.register_provider(old)
    registry.register_provider(FakeProvider("second", [_spec("two")]))
    new = FakeProvider("first", [_spec("one_v2")])
    replaced = registry.register_provider(new)
    assert replaced is old
    assert registry.providers == (new, registry.providers[1])
    assert await _names(registry) == ["one_v2", "two"]


async def test_a_provider_registered_before_another_goes_ahead_of_it_and_wins_its_names() -> None:
    registry = ToolRegistry()
    registry.register_provider(FakeProvider("plugins", [_spec("reply"), _spec("search")]))
    registry.register_provider(FakeProvider("mcp", [_spec("fetch")]))
    registry.register_provider(FakeProvider("builtin", [_spec("reply")]), before="plugins")
    assert [p.provider_name for p in registry.providers] == ["builtin", "plugins", "mcp"]
    assert await _names(registry) == ["reply", "search", "fetch"]
    spec = await registry.get_tool_spec("reply")
    assert spec is not None and spec.provider_name == "builtin"


async def test_a_replacement_moves_only_when_told_where() -> None:
    registry = ToolRegistry()
    for name in ("a", "b", "c"):
        registry.register_provider(FakeProvider(name, [_spec(f"{name}_tool")]))
    registry.register_provider(FakeProvider("c", [_spec("c_v2")]), before="a")
    assert [p.provider_name for p in registry.providers] == ["c", "a", "b"]
    assert await _names(registry) == ["c_v2", "a_tool", "b_tool"]


def test_registering_before_an_unknown_provider_names_the_known_ones() -> None:
    registry = ToolRegistry()
    registry.register_provider(FakeProvider("plugins"))
    with pytest.raises(ValueError, match=r"no other provider .*\(registered: plugins\)"):
        registry.register_provider(FakeProvider("builtin"), before="plugin")
    with pytest.raises(ValueError, match="no other provider"):
        registry.register_provider(FakeProvider("plugins"), before="plugins")
    assert [p.provider_name for p in registry.providers] == ["plugins"]


async def test_unregister_provider_removes_its_tools_and_says_whether_it_existed() -> None:
    registry = ToolRegistry()
    registry.register_provider(FakeProvider("p", [_spec("one")]))
    assert registry.unregister_provider("p") is True
    assert registry.unregister_provider("p") is False
    assert await _names(registry) == []


def test_register_provider_rejects_objects_that_are_not_providers() -> None:
    with pytest.raises(TypeError, match="is not a ToolProvider"):
        ToolRegistry().register_provider(object())  # type: ignore[arg-type]


def test_register_provider_rejects_an_empty_provider_name() -> None:
    with pytest.raises(ValueError, match="non-empty provider_name"):
        ToolRegistry().register_provider(FakeProvider(""))


async def test_registry_keeps_first_tool_when_two_providers_share_a_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = ToolRegistry()
    first = FakeProvider("web", [_spec("search", tool_id="plugin:web:search")])
    second = FakeProvider("docs", [_spec("search", tool_id="mcp:docs:search")])
    registry.register_provider(first)
    registry.register_provider(second)
    with caplog.at_level(logging.WARNING, logger="plughost.tools.registry"):
        assert await _names(registry) == ["search"]
        await registry.list_tools(ToolAvailabilityContext(session_id="other"))
        result = await registry.invoke(_call("search", city="x"))
    assert result.content == "web ran"
    assert second.calls == []
    warnings = [r.getMessage() for r in caplog.records if "duplicate tool name" in r.getMessage()]
    assert len(warnings) == 1
    for source in ("web", "plugin:web:search", "docs", "mcp:docs:search"):
        assert source in warnings[0]


async def test_registry_skips_disabled_tools_so_they_never_shadow_enabled_ones() -> None:
    registry = ToolRegistry()
    registry.register_provider(FakeProvider("a", [_spec("search", enabled=False)]))
    registry.register_provider(FakeProvider("b", [_spec("search")]))
    result = await registry.invoke(_call("search", city="x"))
    assert result.content == "b ran"


async def test_registry_fills_in_provider_fields_and_tool_id_when_missing() -> None:
    registry = ToolRegistry()
    registry.register_provider(FakeProvider("p", [_spec("one")]))
    (spec,) = await registry.list_tools()
    assert (spec.provider_name, spec.provider_type, spec.tool_id) == ("p", "fake", "fake:p:one")


# --- visibility --------------------------------------------------------------------------


async def test_registry_never_lists_hidden_tools_and_runs_them_only_for_trusted_callers() -> None:
    registry = ToolRegistry()
    hidden = _spec("secret", metadata={"visibility": "hidden"})
    provider = FakeProvider("p", [hidden, _spec("shown", metadata={"visibility": "deferred"})])
    registry.register_provider(provider)
    assert await _names(registry) == ["shown"]
    assert [d["function"]["name"] for d in await registry.get_llm_definitions()] == ["shown"]
    assert await registry.get_llm_definitions(names=["secret"]) == []
    assert await _names(registry, include_hidden=True) == ["secret", "shown"]
    assert await registry.has_tool("secret")
    spec = await registry.get_tool_spec("secret")
    assert spec is not None
    assert spec.visibility == "hidden"
    refused = await registry.invoke(_call("secret", city="x"))
    assert refused.error_code == "tool_not_visible"
    assert provider.calls == []
    result = await registry.invoke(_call("secret", city="x"), trusted=True)
    assert result.success
    assert len(provider.calls) == 1
    lenient = ToolRegistry(enforce_visibility=False)
    lenient.register_provider(FakeProvider("p", [hidden]))
    assert (await lenient.invoke(_call("secret", city="x"))).success


# --- invoke ------------------------------------------------------------------------------


async def test_invoke_reports_an_unknown_tool_with_suggestions_it_does_not_run() -> None:
    registry = ToolRegistry()
    provider = FakeProvider("p", [_spec("get_weather"), _spec("get_time"), _spec("send")])
    registry.register_provider(provider)
    result = await registry.invoke(_call("get_wether", city="x"))
    assert not result.success
    assert result.error_code == "tool_not_found"
    assert result.tool_name == "get_wether"
    assert result.error_message.startswith("Tool not found: get_wether. Did you mean: get_weather")
    assert "\nAvailable tools: get_weather, get_time, send." in result.error_message
    assert provider.calls == []


async def test_invoke_lists_at_most_twenty_available_tools() -> None:
    registry = ToolRegistry()
    registry.register_provider(FakeProvider("p", [_spec(f"tool_{i:02d}") for i in range(25)]))
    result = await registry.invoke(_call("zzz"))
    assert "Did you mean" not in result.error_message
    assert result.error_message.endswith("tool_19 (and 5 more).")
    assert "tool_20" not in result.error_message


async def test_invoke_never_suggests_hidden_tools() -> None:
    registry = ToolRegistry()
    registry.register_provider(
        FakeProvider("p", [_spec("secret_tool", metadata={"visibility": "hidden"})])
    )
    result = await registry.invoke(_call("secret_tol"))
    assert "secret_tool" not in result.error_message


async def test_invoke_rejects_invalid_arguments_without_calling_the_provider() -> None:
    registry = ToolRegistry()
    provider = FakeProvider("p", [_spec("get_weather")])
    registry.register_provider(provider)
    result = await registry.invoke(_call("get_weather", cty="Paris", days="many"))
    assert result.error_code == "invalid_arguments"
    assert result.error_message.startswith("Invalid arguments for tool get_weather:\n")
    assert "- missing required field 'city'" in result.error_message
    assert "- unexpected field 'cty' (did you mean 'city'?)" in result.error_message
    assert "- days must be integer, got string 'many'" in result.error_message
    assert provider.calls == []


async def test_invoke_passes_cast_arguments_and_the_context_to_the_provider() -> None:
    registry = ToolRegistry()
    provider = FakeProvider("p", [_spec("get_weather")])
    registry.register_provider(provider)
    context = ToolExecutionContext(session_id="s1")
    await registry.invoke(_call("get_weather", city="Oslo", days="3"), context)
    ((invocation, seen_context),) = provider.calls
    assert invocation.arguments == {"city": "Oslo", "days": 3}
    assert invocation.call_id == "call_1"
    assert seen_context is context


async def test_invoke_parses_json_string_arguments_for_the_provider() -> None:
    registry = ToolRegistry()
    provider = FakeProvider("p", [_spec("get_weather")])
    registry.register_provider(provider)
    invocation = ToolInvocation(tool_name="get_weather", arguments='{"city": "Oslo", "days": "2"}')
    result = await registry.invoke(invocation)
    assert result.success
    assert provider.calls[0][0].arguments == {"city": "Oslo", "days": 2}


async def test_invoke_turns_a_provider_exception_into_a_failed_result(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = ToolRegistry()
    provider = FakeProvider("flaky", [_spec("boom")])
    provider.raise_on_invoke = RuntimeError("socket closed")
    registry.register_provider(provider)
    with caplog.at_level(logging.ERROR, logger="plughost.tools.registry"):
        result = await registry.invoke(_call("boom", city="x"))
    assert result.error_code == "provider_error"
    assert result.error_message == "Tool boom failed in provider flaky: RuntimeError: socket closed"
    assert any(record.exc_info for record in caplog.records)


async def test_invoke_lets_cancellation_propagate() -> None:
    registry = ToolRegistry()
    provider = FakeProvider("p", [_spec("slow")])
    provider.raise_on_invoke = asyncio.CancelledError()
    registry.register_provider(provider)
    with pytest.raises(asyncio.CancelledError):
        await registry.invoke(_call("slow", city="x"))


async def test_invoke_reports_a_provider_that_returns_something_else() -> None:
    registry = ToolRegistry()
    provider = FakeProvider("odd", [_spec("t")])
    provider.reply = "just a string"
    registry.register_provider(provider)
    result = await registry.invoke(_call("t", city="x"))
    assert result.error_code == "provider_error"
    assert "returned a str instead of a ToolExecutionResult" in result.error_message


async def test_invoke_sets_the_invoked_name_on_the_result() -> None:
    registry = ToolRegistry()
    provider = FakeProvider("p", [_spec("visible_name")])
    provider.reply = ToolExecutionResult(tool_name="internal_name", content="ok")
    registry.register_provider(provider)
    result = await registry.invoke(_call("visible_name", city="x"))
    assert result.tool_name == "visible_name"


async def test_invoke_only_finds_tools_available_in_the_calls_context() -> None:
    registry = ToolRegistry()
    registry.register_provider(ScopedProvider("p", [_spec("group_tool")]))
    private = await registry.invoke(_call("group_tool", city="x"), ToolExecutionContext())
    group = await registry.invoke(
        _call("group_tool", city="x"), ToolExecutionContext(is_group_chat=True)
    )
    assert private.error_code == "tool_not_found"
    assert group.success


async def test_invoke_reports_a_broken_tool_schema_as_the_tools_fault() -> None:
    registry = ToolRegistry()
    bad = _spec("bad", parameters_schema={"type": "object", "properties": {"a": {"type": 5}}})
    registry.register_provider(FakeProvider("p", [bad]))
    result = await registry.invoke(_call("bad"))
    assert result.error_code == "invalid_tool_schema"


# --- listing failures and caching --------------------------------------------------------


async def test_a_provider_that_fails_to_list_does_not_hide_the_others() -> None:
    registry = ToolRegistry()
    broken = FakeProvider("broken", [_spec("lost")])
    broken.raise_on_list = RuntimeError("down")
    registry.register_provider(broken)
    registry.register_provider(FakeProvider("ok", [_spec("kept")]))
    assert await _names(registry) == ["kept"]
    broken.raise_on_list = None
    assert await _names(registry) == ["lost", "kept"]


async def test_invoke_reuses_the_cached_view_until_the_tool_set_changes() -> None:
    registry = ToolRegistry()
    provider = FakeProvider("p", [_spec("t")])
    registry.register_provider(provider)
    for _ in range(3):
        await registry.invoke(_call("t", city="x"))
    assert provider.list_count == 1
    registry.notify_changed("p")
    await registry.invoke(_call("t", city="x"))
    assert provider.list_count == 2


async def test_the_view_cache_is_kept_per_availability_context_with_a_bound() -> None:
    registry = ToolRegistry()
    provider = FakeProvider("p", [_spec("t")])
    registry.register_provider(provider)
    contexts = [
        ToolAvailabilityContext(session_id=str(i))
        for i in range(registry_module._VIEW_CACHE_SIZE + 1)
    ]
    for context in contexts:
        await registry.list_tools(context)
    assert provider.list_count == len(contexts)
    await registry.list_tools(contexts[-1])
    assert provider.list_count == len(contexts)
    await registry.list_tools(contexts[0])  # evicted as the least recently used
    assert provider.list_count == len(contexts) + 1


# --- change tracking ---------------------------------------------------------------------


async def test_version_grows_on_register_unregister_and_notify_changed() -> None:
    registry = ToolRegistry()
    versions = [registry.version]
    registry.register_provider(FakeProvider("p"))
    versions.append(registry.version)
    registry.notify_changed("p")
    versions.append(registry.version)
    registry.unregister_provider("p")
    versions.append(registry.version)
    assert versions == sorted(set(versions))
    assert len(versions) == 4


def test_listeners_hear_each_change_and_a_failing_listener_is_contained(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = ToolRegistry()
    heard: list[str] = []

    def broken(name: str) -> None:
        raise RuntimeError("listener bug")

    registry.add_listener(broken)
    registry.add_listener(heard.append)
    with caplog.at_level(logging.ERROR, logger="plughost.tools.registry"):
        registry.register_provider(FakeProvider("p"))
        registry.notify_changed("p")
    registry.remove_listener(heard.append)
    registry.notify_changed("p")
    assert heard == ["p", "p"]
    assert sum("listener failed" in r.getMessage() for r in caplog.records) == 3


def test_register_provider_binds_providers_that_ask_for_the_registry() -> None:
    class Binding(FakeProvider):
        bound: ToolRegistry | None = None

        def bind_registry(self, registry: ToolRegistry) -> None:
            self.bound = registry

    registry = ToolRegistry()
    provider = Binding("p")
    registry.register_provider(provider)
    assert provider.bound is registry


async def test_close_closes_every_provider_even_when_one_fails(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = ToolRegistry()
    providers = [FakeProvider("a"), FakeProvider("b"), FakeProvider("c")]
    providers[0].raise_on_close = RuntimeError("stuck")
    for provider in providers:
        registry.register_provider(provider)
    with caplog.at_level(logging.ERROR, logger="plughost.tools.registry"):
        await registry.close()
    assert [p.closed for p in providers] == [True, True, True]
    assert any("failed to close provider=a" in r.getMessage() for r in caplog.records)


async def test_call_observers_hear_every_call_with_its_spec_result_and_duration() -> None:
    registry = ToolRegistry()
    registry.register_provider(FakeProvider("a", [_spec("weather")]))
    heard: list[tuple[str | None, str, bool]] = []

    def observer(spec: ToolSpec | None, result: ToolExecutionResult, seconds: float) -> None:
        assert seconds >= 0
        heard.append((spec.name if spec else None, result.tool_name, result.success))

    registry.add_call_observer(observer)
    await registry.invoke(ToolInvocation(tool_name="weather", arguments={"city": "Oslo"}))
    await registry.invoke(ToolInvocation(tool_name="weather", arguments={}))
    await registry.invoke(ToolInvocation(tool_name="nope"))
    registry.remove_call_observer(observer)
    await registry.invoke(ToolInvocation(tool_name="weather", arguments={"city": "Oslo"}))

    assert heard == [
        ("weather", "weather", True),
        ("weather", "weather", False),
        (None, "nope", False),
    ]


async def test_a_failing_call_observer_does_not_fail_the_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = ToolRegistry()
    registry.register_provider(FakeProvider("a", [_spec("weather")]))

    def broken(spec: ToolSpec | None, result: ToolExecutionResult, seconds: float) -> None:
        raise RuntimeError("observer bug")

    registry.add_call_observer(broken)
    with caplog.at_level(logging.ERROR):
        result = await registry.invoke(ToolInvocation(tool_name="weather", arguments={"city": "x"}))

    assert result.success
    assert "observer failed" in caplog.text


class StartingProvider(FakeProvider):
    """A provider still starting: its full list never comes, what is ready already routes."""

    def __init__(self, name: str, ready: list[ToolSpec]) -> None:
        super().__init__(name)
        self.ready = ready
        self.never = asyncio.Event()

    async def list_tools(self, context: ToolAvailabilityContext | None = None) -> list[ToolSpec]:
        await self.never.wait()
        return []

    async def list_ready_tools(
        self, context: ToolAvailabilityContext | None = None
    ) -> list[ToolSpec]:
        return list(self.ready)


async def test_a_ready_only_call_routes_over_what_is_ready_without_waiting_for_the_full_list() -> (
    None
):
    registry = ToolRegistry()
    provider = StartingProvider("starting", [_spec("up")])
    registry.register_provider(provider)

    async with asyncio.timeout(10):
        spec = await registry.get_tool_spec("up", ready_only=True)
        result = await registry.invoke(
            ToolInvocation(tool_name="up", arguments={"city": "Oslo"}), ready_only=True
        )
        missing = await registry.get_tool_spec("later", ready_only=True)

    assert spec is not None and spec.provider_name == "starting"
    assert result.success and [call.tool_name for call, _ in provider.calls] == ["up"]
    assert missing is None
