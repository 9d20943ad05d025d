"""One MCP session, as the connection's owner task uses it: open it, list it, read its errors.

- :func:`open_client` enters the official SDK's :class:`mcp.Client` over the
  configured transport (stdio, SSE or streamable HTTP);
- :func:`fetch_catalog` lists what the server offers, page by page;
- :func:`is_connection_lost` and :func:`describe_error` read the exceptions the
  SDK and its transports raise (often inside exception groups).

What does not live here: who owns a session and when it is opened or closed
(:mod:`plughost.mcp.client`).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client, MCPError
from mcp.client.session import MessageHandlerFnT
from mcp.client.sse import sse_client
from mcp.client.stdio import get_default_environment
from mcp.client.streamable_http import streamable_http_client

from plughost.mcp import early_launch
from plughost.mcp.adopted_process import AdoptedProcess
from plughost.mcp.config import MCPServerConfig
from plughost.mcp.delivery import TrackingHTTPTransport
from plughost.mcp.sandbox import LaunchPlan, SandboxState, read_report, sandboxed
from plughost.mcp.stdio import stdio_transport
from plughost.mcp.upstream_tap import UpstreamTap

__all__ = [
    "Catalog",
    "describe_error",
    "fetch_catalog",
    "is_connection_lost",
    "open_client",
    "tracks_delivery",
]

log = logging.getLogger(__name__)

_PAGE_CAP = 100
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
_LOST_MESSAGES = ("connection closed", "session terminated", "session not found")


@dataclass(frozen=True, slots=True)
class Catalog:
    """What a server offers: its tools, and resources and prompts when exposed."""

    tools: tuple[types.Tool, ...] = ()
    resources: tuple[types.Resource, ...] = ()
    prompts: tuple[types.Prompt, ...] = ()
    templates: tuple[types.ResourceTemplate, ...] = ()
    completions: bool = False  # the server answers completion/complete

    @property
    def size(self) -> int:
        """How many entries the catalog holds."""
        return len(self.tools) + len(self.resources) + len(self.prompts)


@contextlib.asynccontextmanager
async def open_client(
    config: MCPServerConfig,
    message_handler: MessageHandlerFnT,
    on_exit: Callable[[str], None],
    *,
    callbacks: Mapping[str, Any] | None = None,
    name: str = "server",
    sandbox: SandboxState | None = None,
    tap: UpstreamTap | None = None,
) -> AsyncIterator[Client]:
    """Enter a client session with the server; to be entered and exited by one task.

    Args:
        config: How to reach the server.
        message_handler: Receives the server's notifications and transport errors.
        on_exit: Called with the reason when a stdio server's process ends by itself.
        callbacks: ``mcp.Client``'s ``sampling_callback``, ``elicitation_callback`` and
            ``list_roots_callback``; each one given is advertised as a capability.
        name: The server's name (its data directory under ``data/mcp``).
        sandbox: Filled with what a stdio server's sandbox turned out to be.
        tap: Wraps a stdio server's transport, so gateway calls can be forwarded beside
            the session (:mod:`plughost.mcp.upstream_tap`).
    """
    async with contextlib.AsyncExitStack() as stack:
        server: Any
        kind = config.resolved_transport
        plan: LaunchPlan | None = None
        adopted: AdoptedProcess | None = None
        if kind == "stdio":
            state = sandbox if sandbox is not None else SandboxState()
            plan = await stack.enter_async_context(sandboxed(name, config, state))
            launch = _launch_of(plan, config)
            adopted = await _adopt(name, plan, launch)
            server = stdio_transport(
                plan.argv[0],
                plan.argv[1:],
                env=plan.env,
                cwd=config.cwd,
                on_exit=on_exit,
                pass_fds=(plan.passed,),
                adopted=adopted,
                name=name,
            )
            if tap is not None:
                server = tap.wrap(server)
        elif kind == "sse":
            server = sse_client(
                config.url or "",
                headers=dict(config.headers) or None,
                timeout=config.connect_timeout,
            )
        else:
            http = httpx2.AsyncClient(
                headers=dict(config.headers),
                timeout=_HTTP_TIMEOUT,
                transport=TrackingHTTPTransport(),
            )
            await stack.enter_async_context(http)
            server = streamable_http_client(config.url or "", http_client=http)
        client = Client(
            server,
            mode=config.protocol,
            message_handler=message_handler,
            client_info=types.Implementation(name="plughost", version=_version()),
            cache=None,
            # 2026-07-28 servers log only for requests that opt in; plughost passes a
            # call's logs on to its own client (plughost.mcp.upstream_requests).
            log_level="info",
            **dict(callbacks or {}),
        )
        entered = await stack.enter_async_context(client)
        if plan is not None:  # the server answered: the launcher reported before its exec
            read_report(plan.report, state)
            if adopted is None:
                early_launch.remember(name, *launch)
        yield entered


def _launch_of(
    plan: LaunchPlan, config: MCPServerConfig
) -> tuple[list[str], dict[str, str], str | None]:
    """The launch as :mod:`plughost.mcp.early_launch` keeps it: no descriptor number in it."""
    argv = list(plan.argv)
    if "--report-fd" in argv:
        argv[argv.index("--report-fd") + 1] = "{report}"
    return argv, get_default_environment() | plan.env, config.cwd


async def _adopt(
    name: str, plan: LaunchPlan, launch: tuple[list[str], dict[str, str], str | None]
) -> AdoptedProcess | None:
    """The server's process started early with this very launch, if there is one."""
    early = early_launch.claim(name, *launch)
    if early is None:
        return None
    try:
        adopted = await AdoptedProcess.adopt(early.process)
    except OSError as exc:  # no pidfd (a kernel before 5.3): start it as always
        log.info("mcp server started early not adopted server=%s reason=%s", name, exc)
        early_launch.end(early)
        return None
    # The launcher reports on the early pipe: read it where the plan's reader looks.
    os.dup2(early.report, plan.report, inheritable=False)
    os.close(early.report)
    log.info("mcp server started early adopted server=%s pid=%d", name, early.process.pid)
    return adopted


def tracks_delivery(config: MCPServerConfig) -> bool:
    """Whether the transport tells a request that never left from one that may have run.

    stdio and streamable HTTP do (:mod:`plughost.mcp.delivery`); SSE posts from a
    task of its own, so any of its requests counts as possibly run.
    """
    return config.resolved_transport != "sse"


async def fetch_catalog(client: Client, config: MCPServerConfig) -> Catalog:
    """List the server's tools, and its resources and prompts when all are exposed."""
    capabilities = client.server_capabilities
    tools: list[types.Tool] = []
    if capabilities.tools is not None:
        cursor: str | None = None
        for _ in range(_PAGE_CAP):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
    if not config.exposes_everything:
        return Catalog(tools=tuple(tools))
    resources: tuple[types.Resource, ...] = ()
    templates: tuple[types.ResourceTemplate, ...] = ()
    prompts: tuple[types.Prompt, ...] = ()
    # Resources and prompts are extras: a server that lists them badly still serves its tools.
    if capabilities.resources is not None:
        try:
            resources = tuple((await client.list_resources()).resources)
            templates = tuple((await client.list_resource_templates()).resource_templates)
        except MCPError as exc:
            log.debug("mcp resources not listed reason=%s", exc.message)
    if capabilities.prompts is not None:
        try:
            prompts = tuple((await client.list_prompts()).prompts)
        except MCPError as exc:
            log.debug("mcp prompts not listed reason=%s", exc.message)
    return Catalog(
        tools=tuple(tools),
        resources=resources,
        prompts=prompts,
        templates=templates,
        completions=capabilities.completions is not None,
    )


def is_connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` means the connection is gone (and a reconnect may help).

    True for "Connection closed" (the process died, the stream ended), "Session
    terminated" / "Session not found" (an HTTP server that forgot the session,
    answered with 404), closed or broken streams and transport errors.
    """
    for leaf in _leaves(exc):
        if isinstance(leaf, MCPError):
            if leaf.code == types.CONNECTION_CLOSED:
                return True
            if any(text in leaf.message.lower() for text in _LOST_MESSAGES):
                return True
        elif isinstance(leaf, httpx2.HTTPStatusError):
            if leaf.response.status_code == 404:
                return True
        elif isinstance(
            leaf,
            anyio.ClosedResourceError
            | anyio.BrokenResourceError
            | anyio.EndOfStream
            | httpx2.TransportError
            | ConnectionError,
        ):
            return True
    return False


def describe_error(exc: BaseException) -> str:
    """A one-line reason for logs and model-facing messages."""
    leaf = next(iter(_leaves(exc)), exc)
    if isinstance(leaf, MCPError):
        return leaf.message
    text = str(leaf)
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _version() -> str:
    try:
        return metadata.version("plughost")
    except metadata.PackageNotFoundError:
        return "0"
