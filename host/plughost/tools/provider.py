"""The ToolProvider protocol: the one seam every tool source plugs into.

Plugin tools, built-in tools and MCP tools each come from a provider; the
:class:`~plughost.tools.registry.ToolRegistry` holds providers in order and routes
calls. A provider translates its own tools into :class:`ToolSpec` and executes
:class:`ToolInvocation`; it knows nothing about other providers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from plughost_sdk.models import (
    ToolAvailabilityContext,
    ToolExecutionContext,
    ToolExecutionResult,
    ToolInvocation,
    ToolSpec,
)

__all__ = ["ChangeListener", "ToolProvider"]

ChangeListener = Callable[[str], None]
"""Called with a provider name whenever that provider's tool set changed."""


@runtime_checkable
class ToolProvider(Protocol):
    """A source of tools.

    Attributes:
        provider_name: Unique within a registry; registering the same name replaces.
        provider_type: ``plugin``, ``builtin`` or ``mcp`` (free-form for embedders).
            A ``plugin`` provider's names never take a name another provider
            keeps (:mod:`plughost.tools.reserved`); a provider may define
            ``held_names() -> Iterable[str]`` for names it keeps even while it
            does not list them, ``held_prefixes() -> Iterable[str]`` for the
            beginnings of every name it may come to list (an MCP server's
            ``mcp_SERVER_``), and ``missing(name) -> ToolExecutionResult | None``
            for why a name it would serve is not there now (an MCP server that is
            down), which a call of that name gets instead of ``tool_not_found``.
    """

    provider_name: str
    provider_type: str

    async def list_tools(self, context: ToolAvailabilityContext | None = None) -> list[ToolSpec]:
        """Return the tools this provider exposes in ``context`` (all if None)."""
        ...

    async def invoke(
        self, invocation: ToolInvocation, context: ToolExecutionContext | None = None
    ) -> ToolExecutionResult:
        """Execute one call; failures are returned as failed results, not raised."""
        ...

    async def close(self) -> None:
        """Release connections, processes and tasks the provider holds."""
        ...
