"""What plughost answers when an upstream MCP server asks its client something.

As a client, plughost advertises ``sampling`` and ``elicitation``, and ``roots``
when the configuration names some, so servers whose tools need them list those
tools. With no roots to give, offering them would only make a server behave
otherwise than for a client that offers none: server-everything, for one, asks
for roots as its input ends and stays until it is signalled, which made every
stop of serve two seconds longer. An upstream's
``sampling/createMessage`` and ``elicitation/create`` are passed on to the client
of the call that reached the server (an MCP client of ``plughost serve``, through
its :class:`~plughost.tools.client_link.ClientLink`): plughost is a gateway, and
the model and the user are on the other side. ``roots/list`` answers the
``[mcp] roots`` of the configuration. The ``notifications/message`` a server logs
during a call go to that call's client too (logger ``mcp.<server>``), at the level
the client asked plughost for, bounded as a plugin's records are: the text is cut
at :data:`MAX_RECORD` characters, and the server's own logger name is put on one
line and cut. A stdio server's records are taken in the order it wrote them, by
the task that read them (:meth:`UpstreamRequests.log`), so a record written
before a call's result reaches the client before that result.

Which call a request belongs to: while a call to a server runs, its caller's
link is recorded for that server; a request from the server goes to the link
of the latest call in progress (a server asks mid-call). The protocol does not
say which call a server's request is about, so that guess is only made among
one client's calls: while calls from more than one client are in progress to
the server (two HTTP clients, or 2026-07-28 calls, each a client of its own, or
an embedder's call beside a client's), its requests are refused with an error
that says why, and its log records are dropped, so that no client is shown what
a server asked about another's call.
With no call in progress, or a caller that is not an MCP client, the server
gets an error that says so.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Sequence
from typing import Any, Final

import mcp_types as types
from mcp.client.session import ClientRequestContext
from mcp_types.jsonrpc import INVALID_REQUEST

from plughost.mcp.asking import clean
from plughost.tools.client_link import ClientLink, ClientRequestError, current_client

__all__ = ["MAX_RECORD", "UpstreamRequests"]

MAX_RECORD = 4000
"""Characters of a server's log record passed on, as of a plugin's (its runner's line)."""
_MAX_LOGGER = 100

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


class UpstreamRequests:
    """The sampling, elicitation and roots callbacks of one provider's connections."""

    def __init__(self, roots: Sequence[str] = ()) -> None:
        self._roots = list(roots)
        self._callers: dict[str, list[ClientLink]] = {}

    def calling(self, server: str) -> contextlib.AbstractContextManager[None]:
        """Record the current caller's link for ``server`` while a call to it runs.

        A call with no link (an embedder's own) is recorded too, as a caller no one
        can ask: the server's request may be about it, so no client is shown it.
        """
        link = current_client.get()
        return _Calling(self._callers.setdefault(server, []), link or _NO_CLIENT)

    def callbacks(self, server: str) -> dict[str, Any]:
        """The ``mcp.Client`` callbacks for ``server``."""

        async def sampling(
            context: ClientRequestContext, params: types.CreateMessageRequestParams
        ) -> types.CreateMessageResult | types.ErrorData:
            link = self._link(server)
            if link is None or isinstance(link, int):
                return _no_caller("sampling", server, link)
            try:
                answer = await link.generate(_generate_args(params))
            except ClientRequestError as exc:
                return types.ErrorData(code=INVALID_REQUEST, message=str(exc))
            return types.CreateMessageResult(
                role="assistant",
                content=types.TextContent(text=str(answer.get("text", ""))),
                model=str(answer.get("model") or "unknown"),
                stop_reason=answer.get("stop_reason"),
            )

        async def elicitation(
            context: ClientRequestContext, params: types.ElicitRequestParams
        ) -> types.ElicitResult | types.ErrorData:
            link = self._link(server)
            if link is None or isinstance(link, int):
                return _no_caller("elicitation", server, link)
            if not isinstance(params, types.ElicitRequestFormParams):
                return types.ErrorData(
                    code=INVALID_REQUEST, message="plughost passes on form elicitation only"
                )
            try:
                asker = f"MCP server {server}"
                reply = await link.elicit(asker, params.message, dict(params.requested_schema))
            except ClientRequestError as exc:
                return types.ErrorData(code=INVALID_REQUEST, message=str(exc))
            return types.ElicitResult(action=reply["action"], content=reply.get("content"))

        async def roots(context: ClientRequestContext) -> types.ListRootsResult:
            return types.ListRootsResult(roots=[types.Root(uri=uri) for uri in self._roots])

        async def logs(params: types.LoggingMessageNotificationParams) -> None:
            self.log(server, params)

        made: dict[str, Any] = {
            "sampling_callback": sampling,
            "elicitation_callback": elicitation,
            "logging_callback": logs,
        }
        if self._roots:  # else offering roots only changes the server (see the module)
            made["list_roots_callback"] = roots
        return made

    def log(self, server: str, params: types.LoggingMessageNotificationParams) -> None:
        """Pass a record ``server`` logged to the client of its latest call, bounded."""
        link = self._link(server)
        if link is None or isinstance(link, int):
            return  # nobody's, or whose is unknown: shown to no one
        data = params.data if isinstance(params.data, str) else json.dumps(params.data)
        own = clean(params.logger, _MAX_LOGGER) if params.logger else ""
        logger = f"mcp.{server}.{own}" if own else f"mcp.{server}"
        link.log(_LEVELS.get(params.level, logging.INFO), logger, data[:MAX_RECORD])

    def _link(self, server: str) -> ClientLink | int | None:
        """The link of the latest call to ``server``; None with no call in progress, or
        the number of clients whose calls are in progress when they are more than one."""
        # Not current_client: the callbacks run in the connection's own task, which may
        # have inherited the link of whichever call happened to start it.
        callers = self._callers.get(server)
        if not callers:
            return None
        latest = callers[-1]
        whose = _client_of(latest)
        if all(_client_of(link) is whose for link in callers):
            return None if latest is _NO_CLIENT else latest
        return len({id(_client_of(link)) for link in callers})


class _NoClient:
    """The link of calls no client made (an embedder's): nobody to ask, one caller."""

    __slots__ = ()

    def log(self, level: int, logger: str, message: str) -> None:
        pass

    async def generate(self, request: dict[str, Any]) -> dict[str, Any]:
        raise ClientRequestError("no client made this call")

    async def elicit(self, asker: str, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        raise ClientRequestError("no client made this call")


_NO_CLIENT: Final = _NoClient()


def _client_of(link: ClientLink) -> object:
    """Who made the call of ``link`` (:attr:`MCPClientLink.client`); else the link alone."""
    return getattr(link, "client", link)


class _Calling:
    """One call's link among its server's callers, while the call runs.

    Entered once per upstream call: a plain class costs less than a generator.
    """

    __slots__ = ("_callers", "_link")

    def __init__(self, callers: list[ClientLink], link: ClientLink) -> None:
        self._callers = callers
        self._link = link

    def __enter__(self) -> None:
        self._callers.append(self._link)

    def __exit__(self, *exc_info: object) -> None:
        self._callers.remove(self._link)


def _generate_args(params: types.CreateMessageRequestParams) -> dict[str, Any]:
    messages = [
        {
            "role": m.role,
            "content": m.content.text if isinstance(m.content, types.TextContent) else "",
        }
        for m in params.messages
    ]
    args: dict[str, Any] = {"messages": messages, "max_tokens": params.max_tokens}
    options = {
        "system_prompt": params.system_prompt,
        "temperature": params.temperature,
        "stop_sequences": params.stop_sequences,
    }
    args.update({key: value for key, value in options.items() if value is not None})
    hints = params.model_preferences.hints if params.model_preferences else None
    if hints and hints[0].name:
        args["model_hint"] = hints[0].name
    return args


def _no_caller(what: str, server: str, clients: int | None) -> types.ErrorData:
    if clients is not None:
        message = (
            f"plughost cannot tell whom to ask for {what}: calls from {clients} clients are "
            f"in progress to server {server!r}, and a request does not say which call it is "
            "about; ask again when only one client's calls are in progress"
        )
    else:
        message = (
            f"plughost has nobody to ask for {what}: the call in progress did not come "
            "from an MCP client (plughost passes sampling and elicitation on to its own client)"
        )
    return types.ErrorData(code=INVALID_REQUEST, message=message)
