"""plughost: a multi-process plugin host for LLM tools.

Embed it with :class:`PluginHost`; run it with ``plughost serve``. Plugins run
in supervised runner processes; every tool, from plugins, built-ins or MCP
servers, is routed through one :class:`ToolRegistry`.
"""

__version__ = "0.1.0"
