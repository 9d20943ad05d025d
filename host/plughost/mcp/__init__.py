"""MCP both ways: external MCP servers as a tool source, and the registry served over MCP.

Lives here: server configuration (``config``), one upstream session with its
restart policy (``session``, ``client``, ``status``), the ``MCPToolProvider``
(``provider``) with the subscriptions it holds upstream (``upstream_subscriptions``),
content conversion between MCP and plughost results (``content``) and the
stdio/HTTP server (``server``, ``stdio_server``) with its orderly end (``shutdown``).

May import: ``plughost.tools`` and the leaf modules. This is the only package that
imports the ``mcp`` SDK, and nothing below the CLI imports this package eagerly, so
an embedder who never uses MCP never pays for importing it.
"""
