"""The public names of plughost: pinned, so a change to them is a deliberate one."""

from __future__ import annotations

import plughost

PUBLIC_NAMES = [
    "ApiOutcome",
    "BuiltinTool",
    "BuiltinToolProvider",
    "CapabilityCall",
    "CapabilityHandler",
    "CapabilityRouter",
    "ChatSession",
    "CommandOutcome",
    "ComponentQueryService",
    "ComponentRegistry",
    "EventBus",
    "EventKind",
    "EventOutcome",
    "EventType",
    "HookOutcome",
    "HookSpec",
    "HostSettings",
    "LifecycleEvent",
    "MCPConfig",
    "MCPServerConfig",
    "MCPToolProvider",
    "ModelToolCalls",
    "PluginComponent",
    "PluginHost",
    "PluginStatus",
    "PluginToolProvider",
    "Progress",
    "ResultLimiter",
    "RunnerSettings",
    "ToolComponent",
    "ToolExecutionContext",
    "ToolExecutionResult",
    "ToolInvocation",
    "ToolProvider",
    "ToolRegistry",
    "ToolSearchService",
    "ToolSearchSettings",
    "ToolSpec",
    "WebSettings",
    "__version__",
    "compact_tool_results",
    "from_anthropic_message",
    "from_openai_message",
    "run_tool_batch",
    "serve_http",
    "serve_stdio",
    "to_anthropic_message",
    "to_anthropic_turn",
    "to_openai_message",
    "to_openai_turn",
]


def test_plughost_exports_exactly_the_pinned_names() -> None:
    assert sorted(plughost.__all__) == PUBLIC_NAMES


def test_every_exported_name_resolves() -> None:
    missing = [name for name in plughost.__all__ if not hasattr(plughost, name)]
    assert missing == []
