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
    "CommandOutcome",
    "ComponentQueryService",
    "ComponentRegistry",
    "EventBus",
    "EventKind",
    "EventOutcome",
    "HookOutcome",
    "HookSpec",
    "HostSettings",
    "LifecycleEvent",
    "MCPConfig",
    "MCPServerConfig",
    "MCPToolProvider",
    "PluginComponent",
    "PluginHost",
    "PluginStatus",
    "PluginToolProvider",
    "Progress",
    "RunnerSettings",
    "ToolComponent",
    "ToolProvider",
    "ToolRegistry",
    "ToolSearchService",
    "__version__",
    "run_tool_batch",
    "serve_http",
    "serve_stdio",
]


def test_plughost_exports_exactly_the_pinned_names() -> None:
    assert sorted(plughost.__all__) == PUBLIC_NAMES


def test_every_exported_name_resolves() -> None:
    missing = [name for name in plughost.__all__ if not hasattr(plughost, name)]
    assert missing == []
