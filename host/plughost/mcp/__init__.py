"""MCP both ways: external MCP servers as a tool source, and the registry served over MCP.

Lives here: server configuration (``config``), one upstream session with its
restart policy (``session``; ``client``, what any task asks of a connection;
``client_owner``, the owner task that connects, serves and retries; ``status``),
the ``MCPToolProvider`` (``provider``, which holds a server's tools to a
plugin's bounds, ``tool_bounds``) with the subscriptions it holds upstream
(``upstream_subscriptions``), content conversion between MCP and plughost results
(``content``), what a client's user is shown when a plugin or a server asks
(``asking``), the registry as MCP handlers (``registry_server``), served from the
catalogue of its last tool list while the host starts (``catalogue``,
``warm_start``, ``warm_content``), its stdio upstreams started before the SDK is
imported, from the memo of their last launch (``early_launch``, driven through
``adopted_process``; the catalogue and the memo are files of the user's own,
``own_file``; a stdio server's stderr is logged by ``server_stderr``), and the
stdio/HTTP transports that serve it (``server``, ``stdio_server``) with its
orderly end (``shutdown``), and uvicorn embedded in the host's event loop
(``uvicorn_embed``, shared with ``plughost.web``). Calls answered beside the SDK's
sessions: a stdio client's (``forwarding``, asking that client through
``client_relay``) and a stdio upstream's (``upstream_tap``),
both over ``stream_filters``; an HTTP request answered as JSON or SSE
(``quick_answers``, resumable through ``event_store``); a call's progress waiting
for its client (``progress_backlog``).

May import: ``plughost.tools`` and the leaf modules. This is the only package that
imports the ``mcp`` SDK, and nothing below the CLI imports this package eagerly, so
an embedder who never uses MCP never pays for importing it. ``uvicorn_embed``
imports no ``mcp``, so the console can use it without the SDK.
"""
