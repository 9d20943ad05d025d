"""plughost: a multi-process plugin host for LLM tools.

Embed it with :class:`PluginHost`; run it with ``plughost serve``. Plugins run
in supervised runner processes; every tool, from plugins, built-ins or MCP
servers, is routed through one :class:`ToolRegistry`.

The package is laid out by concept; each subpackage's docstring says what lives
there and what it may import::

    tools/     ToolRegistry, providers, argument validation, definitions, history
    search/    tool_search: BM25 index, catalog, discovery, strategies
    mcp/       MCP servers as a tool source; the registry served over MCP
    plugins/   plugin folders, manifests, components, the plugin tool provider
    runners/   the host's runner processes, their channel, supervision, capabilities
    remote/    runners on other machines: their sessions, credentials, pools
    dispatch/  commands, events, hook chains and plugin APIs, run in their runners
    web/       the operator's console: a live web page, /metrics (``serve --web``)
    cli/       the ``plughost`` command
    host.py    PluginHost, the one façade an embedder needs; beside it, its parts:
               startup.py (fork server and sandbox plan), host_capabilities.py
               (what every host answers plugins), status.py (PluginStatus rows)

The names below are the public API. Each is imported on first use, so
``import plughost`` costs nothing and an embedder who never touches MCP or
tool search never imports the MCP SDK or jieba.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plughost.chat import ChatSession
    from plughost.dispatch.apis import ApiOutcome
    from plughost.dispatch.commands import CommandOutcome
    from plughost.dispatch.events import EventOutcome
    from plughost.dispatch.hooks import HookOutcome, HookSpec
    from plughost.events import EventBus, EventKind, LifecycleEvent
    from plughost.host import PluginHost, PluginStatus
    from plughost.mcp.config import MCPConfig, MCPServerConfig
    from plughost.mcp.provider import MCPToolProvider
    from plughost.mcp.server import serve_http, serve_stdio
    from plughost.plugins.component_info import PluginComponent
    from plughost.plugins.components import ComponentRegistry, ToolComponent
    from plughost.plugins.provider import PluginToolProvider
    from plughost.plugins.query import ComponentQueryService
    from plughost.runners.capabilities import CapabilityCall, CapabilityHandler, CapabilityRouter
    from plughost.search.service import ToolSearchService
    from plughost.settings import HostSettings, RunnerSettings, ToolSearchSettings, WebSettings
    from plughost.tools.batching import run_tool_batch
    from plughost.tools.builtin import BuiltinTool, BuiltinToolProvider
    from plughost.tools.compaction import compact_tool_results
    from plughost.tools.history import ResultLimiter, to_anthropic_turn, to_openai_turn
    from plughost.tools.model_calls import (
        ModelToolCalls,
        from_anthropic_message,
        from_openai_message,
        to_anthropic_message,
        to_openai_message,
    )
    from plughost.tools.progress import Progress
    from plughost.tools.provider import ToolProvider
    from plughost.tools.registry import ToolRegistry
    from plughost_sdk import (
        EventType,
        ToolExecutionContext,
        ToolExecutionResult,
        ToolInvocation,
        ToolSpec,
    )

__version__ = "0.1.0"

# Every public name is imported from its module on first access (PEP 562): the CLI
# and an embedder that needs one part do not pay for the others (pyzmq, the JSON
# Schema validator, jieba, the MCP SDK).
_LAZY = {
    "ApiOutcome": "plughost.dispatch.apis",
    "BuiltinTool": "plughost.tools.builtin",
    "BuiltinToolProvider": "plughost.tools.builtin",
    "CapabilityCall": "plughost.runners.capabilities",
    "CapabilityHandler": "plughost.runners.capabilities",
    "CapabilityRouter": "plughost.runners.capabilities",
    "ChatSession": "plughost.chat",
    "CommandOutcome": "plughost.dispatch.commands",
    "ComponentQueryService": "plughost.plugins.query",
    "ComponentRegistry": "plughost.plugins.components",
    "EventBus": "plughost.events",
    "EventKind": "plughost.events",
    "EventOutcome": "plughost.dispatch.events",
    "EventType": "plughost_sdk",
    "HookOutcome": "plughost.dispatch.hooks",
    "HookSpec": "plughost.dispatch.hooks",
    "HostSettings": "plughost.settings",
    "LifecycleEvent": "plughost.events",
    "MCPConfig": "plughost.mcp.config",
    "MCPServerConfig": "plughost.mcp.config",
    "MCPToolProvider": "plughost.mcp.provider",
    "ModelToolCalls": "plughost.tools.model_calls",
    "PluginComponent": "plughost.plugins.component_info",
    "PluginHost": "plughost.host",
    "PluginStatus": "plughost.host",
    "PluginToolProvider": "plughost.plugins.provider",
    "Progress": "plughost.tools.progress",
    "ResultLimiter": "plughost.tools.history",
    "RunnerSettings": "plughost.settings",
    "ToolComponent": "plughost.plugins.components",
    "ToolExecutionContext": "plughost_sdk",
    "ToolExecutionResult": "plughost_sdk",
    "ToolInvocation": "plughost_sdk",
    "ToolProvider": "plughost.tools.provider",
    "ToolRegistry": "plughost.tools.registry",
    "ToolSearchService": "plughost.search.service",
    "ToolSearchSettings": "plughost.settings",
    "ToolSpec": "plughost_sdk",
    "WebSettings": "plughost.settings",
    "compact_tool_results": "plughost.tools.compaction",
    "from_anthropic_message": "plughost.tools.model_calls",
    "from_openai_message": "plughost.tools.model_calls",
    "run_tool_batch": "plughost.tools.batching",
    "serve_http": "plughost.mcp.server",
    "serve_stdio": "plughost.mcp.server",
    "to_anthropic_message": "plughost.tools.model_calls",
    "to_anthropic_turn": "plughost.tools.history",
    "to_openai_message": "plughost.tools.model_calls",
    "to_openai_turn": "plughost.tools.history",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'plughost' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
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
