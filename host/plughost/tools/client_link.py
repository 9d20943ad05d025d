"""The client behind the call being served, for what a plugin asks of it mid-call.

When ``plughost serve`` runs a call for an MCP client, it sets
:data:`current_client` to a :class:`ClientLink` around
:meth:`~plughost.tools.registry.ToolRegistry.invoke`. The runner channel keeps
the context of every request it sends, so when the plugin's runner answers with
a log record or a capability call tied to that request (``llm.generate``,
``user.elicit``), the host finds the link again and can hand the record or the
request to the client that made the call: as ``notifications/message``,
``sampling/createMessage`` or ``elicitation/create``.

Outside a served call (an embedder calling :meth:`PluginHost.invoke` itself)
there is no link, and those capabilities fall back to whatever the embedder
registered.
"""

from __future__ import annotations

import contextvars
from typing import Any, Protocol

__all__ = ["ClientLink", "ClientRequestError", "current_client"]


class ClientRequestError(Exception):
    """The client cannot answer (it lacks the capability, or refused); the message says which."""


class ClientLink(Protocol):
    """What a plugin call may ask of the client that made it."""

    def log(self, level: int, logger: str, message: str) -> None:
        """Pass a log record of the call to the client (queued; never blocks)."""
        ...

    async def generate(self, request: dict[str, Any]) -> dict[str, Any]:
        """Ask the client's model for a completion (``ctx.llm.generate`` arguments).

        Raises:
            ClientRequestError: the client does not offer sampling, or failed.
        """
        ...

    async def elicit(self, asker: str, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        """Ask the client's user to fill in a form; ``{"action", "content"}``.

        ``asker`` is who asks as the host knows it (``plugin ID``, ``MCP server
        NAME``), never as the asker says: the user is shown it before ``message``.

        Raises:
            ClientRequestError: the client does not offer elicitation, or failed.
        """
        ...


current_client: contextvars.ContextVar[ClientLink | None] = contextvars.ContextVar(
    "plughost_current_client", default=None
)
"""The client of the call being served, if it can be asked anything."""
