"""plughost: a multi-process plugin host for LLM tools.

Embed it with :class:`PluginHost`; run it with ``plughost serve``. Plugins run
in supervised runner processes; every tool, from plugins, built-ins or MCP
servers, is routed through one :class:`ToolRegistry`.
"""

from plughost.batching import run_tool_batch
from plughost.builtin import BuiltinTool, BuiltinToolProvider
from plughost.capabilities import CapabilityCall, CapabilityHandler, CapabilityRouter
from plughost.components import ComponentRegistry, ToolComponent
from plughost.events import EventBus, EventKind, LifecycleEvent
from plughost.host import PluginHost, PluginStatus
from plughost.mcp_config import MCPConfig, MCPServerConfig
from plughost.mcp_provider import MCPToolProvider
from plughost.mcp_server import serve_http, serve_stdio
from plughost.plugin_provider import PluginToolProvider
from plughost.provider import ToolProvider
from plughost.query import ComponentQueryService
from plughost.registry import ToolRegistry
from plughost.settings import HostSettings, RunnerSettings
from plughost.tool_search import ToolSearchService

__version__ = "0.1.0"

__all__ = [
    "BuiltinTool",
    "BuiltinToolProvider",
    "CapabilityCall",
    "CapabilityHandler",
    "CapabilityRouter",
    "ComponentQueryService",
    "ComponentRegistry",
    "EventBus",
    "EventKind",
    "HostSettings",
    "LifecycleEvent",
    "MCPConfig",
    "MCPServerConfig",
    "MCPToolProvider",
    "PluginHost",
    "PluginStatus",
    "PluginToolProvider",
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
