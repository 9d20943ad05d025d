"""Tests for built-in tools: filtering, phases, change notification and invocation."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pytest

from plughost.tools.builtin import BuiltinTool, BuiltinToolProvider
from plughost.tools.registry import ToolRegistry
from plughost_sdk.errors import ToolError
from plughost_sdk.models import (
    ToolAvailabilityContext,
    ToolExecutionContext,
    ToolInvocation,
    ToolSpec,
)

GROUP = ToolAvailabilityContext(is_group_chat=True)
PRIVATE = ToolAvailabilityContext(is_group_chat=False)


def _echo_tool(name: str, **fields: Any) -> BuiltinTool:
    async def handler(arguments: dict[str, Any], context: ToolExecutionContext) -> Any:
        return {"content": f"{name} {arguments} {context.session_id}"}

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    return BuiltinTool(
        spec=ToolSpec(name=name, parameters_schema=schema), handler=handler, **fields
    )


async def _names(
    provider: BuiltinToolProvider, context: ToolAvailabilityContext | None = None
) -> list[str]:
    return [spec.name for spec in await provider.list_tools(context)]


async def test_list_tools_marks_specs_with_provider_visibility_and_phase() -> None:
    provider = BuiltinToolProvider(
        [_echo_tool("wait", phase="timing", visibility="deferred")], provider_name="engine"
    )
    (spec,) = await provider.list_tools()
    assert spec.metadata == {"visibility": "deferred", "phase": "timing"}
    assert (spec.provider_name, spec.provider_type) == ("engine", "builtin")
    assert spec.tool_id == "builtin:engine:wait"


async def test_list_tools_keeps_the_order_tools_were_added() -> None:
    provider = BuiltinToolProvider([_echo_tool("b"), _echo_tool("a"), _echo_tool("c")])
    assert await _names(provider) == ["b", "a", "c"]


def test_duplicate_initial_tools_are_rejected() -> None:
    with pytest.raises(ValueError, match="'reply' is given twice"):
        BuiltinToolProvider([_echo_tool("reply"), _echo_tool("reply")])


async def test_enabled_when_filters_tools_by_the_providers_config() -> None:
    def memory_on(config: Mapping[str, Any]) -> bool:
        return bool(config.get("memory"))

    provider = BuiltinToolProvider(
        [_echo_tool("query_memory", enabled_when=memory_on), _echo_tool("reply")],
        config={"memory": False},
    )
    assert await _names(provider) == ["reply"]
    provider.set_config({"memory": True})
    assert await _names(provider) == ["query_memory", "reply"]
    assert provider.config == {"memory": True}


async def test_a_failing_enabled_when_hides_the_tool(caplog: pytest.LogCaptureFixture) -> None:
    def broken(config: Mapping[str, Any]) -> bool:
        raise KeyError("missing")

    provider = BuiltinToolProvider([_echo_tool("odd", enabled_when=broken)])
    with caplog.at_level(logging.ERROR, logger="plughost.tools.builtin"):
        assert await _names(provider) == []
    assert any("enabled_when failed" in r.getMessage() for r in caplog.records)


async def test_chat_scope_limits_tools_to_group_or_private_chats() -> None:
    provider = BuiltinToolProvider(
        [
            _echo_tool("everywhere"),
            _echo_tool("group_only", chat_scope="group"),
            _echo_tool("private_only", chat_scope="private"),
        ]
    )
    assert await _names(provider, GROUP) == ["everywhere", "group_only"]
    assert await _names(provider, PRIVATE) == ["everywhere", "private_only"]
    assert await _names(provider) == ["everywhere", "group_only", "private_only"]


def test_tools_filters_by_phase_with_both_counting_for_each_phase() -> None:
    provider = BuiltinToolProvider(
        [
            _echo_tool("wait", phase="timing"),
            _echo_tool("reply"),
            _echo_tool("stop", phase="both"),
        ]
    )
    assert [t.name for t in provider.tools("timing")] == ["wait", "stop"]
    assert [t.name for t in provider.tools("action")] == ["reply", "stop"]
    assert [t.name for t in provider.tools("both")] == ["stop"]
    assert [t.name for t in provider.tools()] == ["wait", "reply", "stop"]
    with pytest.raises(ValueError, match="unknown phase 'planner'"):
        provider.tools("planner")


async def test_add_replaces_a_tool_in_place_and_notifies_the_registry() -> None:
    provider = BuiltinToolProvider([_echo_tool("reply"), _echo_tool("finish")])
    registry = ToolRegistry()
    registry.register_provider(provider)
    assert [s.name for s in await registry.list_tools()] == ["reply", "finish"]
    version = registry.version
    provider.add(_echo_tool("reply", visibility="hidden"))
    provider.add(_echo_tool("wait"))
    assert registry.version == version + 2
    assert [s.name for s in await registry.list_tools(include_hidden=True)] == [
        "reply",
        "finish",
        "wait",
    ]
    assert [s.name for s in await registry.list_tools()] == ["finish", "wait"]


async def test_remove_drops_a_tool_and_notifies_only_when_it_existed() -> None:
    provider = BuiltinToolProvider([_echo_tool("reply")])
    registry = ToolRegistry()
    registry.register_provider(provider)
    version = registry.version
    assert provider.remove("reply") is True
    assert provider.remove("reply") is False
    assert registry.version == version + 1
    assert await registry.list_tools() == []


async def test_invoke_runs_the_handler_with_arguments_and_context() -> None:
    provider = BuiltinToolProvider([_echo_tool("echo")])
    context = ToolExecutionContext(session_id="s1")
    invocation = ToolInvocation(tool_name="echo", arguments={"n": 1})
    result = await provider.invoke(invocation, context)
    assert result.success
    assert result.content == "echo {'n': 1} s1"
    assert result.tool_name == "echo"


async def test_invoke_without_a_context_builds_one_from_the_invocation() -> None:
    provider = BuiltinToolProvider([_echo_tool("echo")])
    result = await provider.invoke(ToolInvocation(tool_name="echo", session_id="from_call"))
    assert result.content == "echo {} from_call"


async def test_the_invocations_fields_win_over_the_context_through_the_registry_and_directly() -> (
    None
):
    seen: list[ToolExecutionContext] = []

    async def record(arguments: dict[str, Any], context: ToolExecutionContext) -> Any:
        seen.append(context)
        return "ok"

    provider = BuiltinToolProvider([BuiltinTool(spec=ToolSpec(name="record"), handler=record)])
    registry = ToolRegistry()
    registry.register_provider(provider)
    invocation = ToolInvocation(
        tool_name="record", session_id="s-inv", reasoning="why", metadata={"a": 1}
    )
    context = ToolExecutionContext(session_id="s-ctx", stream_id="chat", metadata={"b": 2})
    await registry.invoke(invocation, context)
    await provider.invoke(invocation, context)
    for got in seen:
        assert (got.session_id, got.stream_id, got.reasoning) == ("s-inv", "chat", "why")
        assert got.metadata == {"b": 2, "a": 1}
    assert len(seen) == 2


async def test_invoke_turns_a_tool_error_into_a_message_for_the_model() -> None:
    async def refuse(arguments: dict[str, Any], context: ToolExecutionContext) -> Any:
        raise ToolError("nothing to reply to; call wait instead")

    provider = BuiltinToolProvider([BuiltinTool(spec=ToolSpec(name="reply"), handler=refuse)])
    result = await provider.invoke(ToolInvocation(tool_name="reply"))
    assert result.error_code == "tool_error"
    assert result.error_message == "nothing to reply to; call wait instead"


async def test_invoke_reports_and_logs_a_handler_bug(caplog: pytest.LogCaptureFixture) -> None:
    async def buggy(arguments: dict[str, Any], context: ToolExecutionContext) -> Any:
        raise ZeroDivisionError("division by zero")

    provider = BuiltinToolProvider([BuiltinTool(spec=ToolSpec(name="calc"), handler=buggy)])
    with caplog.at_level(logging.ERROR, logger="plughost.tools.builtin"):
        result = await provider.invoke(ToolInvocation(tool_name="calc"))
    assert result.error_code == "plugin_exception"
    assert result.error_message == "ZeroDivisionError: division by zero"
    assert any(record.exc_info for record in caplog.records)


async def test_invoke_checks_json_string_arguments_when_called_directly() -> None:
    provider = BuiltinToolProvider([_echo_tool("echo")])
    good = await provider.invoke(ToolInvocation(tool_name="echo", arguments='{"n": "2"}'))
    bad = await provider.invoke(ToolInvocation(tool_name="echo", arguments='{"m": 2}'))
    assert good.content == "echo {'n': 2} "
    assert bad.error_code == "invalid_arguments"
    assert "unexpected field 'm'" in bad.error_message


async def test_invoke_reports_an_unknown_tool() -> None:
    result = await BuiltinToolProvider().invoke(ToolInvocation(tool_name="ghost"))
    assert result.error_code == "tool_not_found"
    assert result.error_message.startswith("Tool not found: ghost")


async def test_registry_casts_arguments_before_a_builtin_handler_sees_them() -> None:
    seen: list[dict[str, Any]] = []

    async def handler(arguments: dict[str, Any], context: ToolExecutionContext) -> Any:
        seen.append(arguments)
        return "ok"

    schema = {"type": "object", "properties": {"seconds": {"type": "integer"}}}
    tool = BuiltinTool(spec=ToolSpec(name="wait", parameters_schema=schema), handler=handler)
    registry = ToolRegistry()
    registry.register_provider(BuiltinToolProvider([tool]))
    result = await registry.invoke(ToolInvocation(tool_name="wait", arguments={"seconds": "30"}))
    assert result.content == "ok"
    assert seen == [{"seconds": 30}]


async def test_close_releases_nothing_and_succeeds() -> None:
    provider = BuiltinToolProvider([_echo_tool("reply")])
    await provider.close()
    assert await _names(provider) == ["reply"]
