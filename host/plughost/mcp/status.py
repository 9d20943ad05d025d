"""What an upstream MCP connection reports: its state, a status snapshot, the unavailable error.

Kept apart from :mod:`plughost.mcp.client`, which re-exports these names, so that
the connection's machinery reads on its own.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from plughost.mcp.config import TransportKind
from plughost_sdk.errors import PlugHostError

__all__ = ["ServerState", "ServerStatus", "ServerUnavailableError"]


class ServerState(enum.StrEnum):
    """Where a connection is in its lifecycle."""

    IDLE = "idle"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    DISCONNECTED = "disconnected"
    FAILED = "failed"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """A snapshot of one server's connection, for operators.

    Attributes:
        state: The lifecycle state.
        transport: ``stdio``, ``sse`` or ``streamable_http``.
        reason: Why it failed or was lost; empty when all is well.
        tools: What its clients can use of the server's last listing: the tools
            ``enabled_tools`` picks that no bound refused (``refused``), and the
            resources and prompts re-served (all it offered, until it is listed).
        failures: Connect failures in a row (0 once connected).
        retry_in: Seconds until the next connect attempt (FAILED only).
        protocol_version: The MCP protocol version negotiated at the last connect.
        sandbox: The protections a stdio server's process runs under (empty for HTTP).
        network: The destinations a stdio server may reach (its network grants).
        denied: Connections its sandbox refused since plughost started it.
        refused: Why each tool of its last listing over a bound was refused
            (:mod:`plughost.mcp.tool_bounds`).
    """

    state: ServerState
    transport: TransportKind
    reason: str = ""
    tools: int = 0
    failures: int = 0
    retry_in: float | None = None
    protocol_version: str | None = None
    sandbox: tuple[str, ...] = ()
    network: tuple[str, ...] = ()
    denied: int = 0
    refused: tuple[str, ...] = ()


class ServerUnavailableError(PlugHostError):
    """The MCP server could not be reached; the message says why."""
