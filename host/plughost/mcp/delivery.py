"""Whether a request may have reached an upstream MCP server: the one fact that decides a retry.

A call that found its connection lost is sent again only when it provably never
left this process (the write to a dead server's stdin failed, the HTTP
connection was refused) or when the server said it never ran it (it did not
know the session). Everything else may have run upstream, so sending it again
could run it twice: it fails with :class:`OutcomeUnknownError` instead.

How the fact is learnt: :func:`tracking` puts a fresh :class:`Delivery` in a
context variable around one request; the transports mark it from inside the
SDK's send path, which runs in the caller's context (the stdio writer of
:mod:`plughost.mcp.stdio` directly, the streamable HTTP client's POST through
the context it copies from the sender), using :func:`mark_sent`. The
:class:`TrackingHTTPTransport` wraps httpx's transport: a request is marked
sent unless the connection could not even be opened. A transport that does not
mark anything (SSE posts from its own task) leaves the request marked sent
from the start, so the default is the safe one.

What does not live here: deciding to reconnect (:mod:`plughost.mcp.client`).
"""

from __future__ import annotations

import contextvars
import json
from dataclasses import dataclass

import httpx2

from plughost_sdk.errors import PlugHostError

__all__ = [
    "Delivery",
    "OutcomeUnknownError",
    "Refusal",
    "TrackingHTTPTransport",
    "mark_sent",
    "tracking",
]

_current: contextvars.ContextVar[Delivery | None] = contextvars.ContextVar(
    "plughost_mcp_delivery", default=None
)


class OutcomeUnknownError(PlugHostError):
    """The connection died after the request may have reached the server: it may have run."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """An HTTP error status the server answered a request with, and its own words."""

    status: int
    message: str

    @property
    def lost_session(self) -> bool:
        """Whether the server said it does not know the session (404, or 400 naming it).

        The specification says 404; some servers (server-everything) answer 400
        "No valid session ID provided". Either way the request was not run.
        """
        return self.status == 404 or (self.status == 400 and "session" in self.message.lower())


@dataclass(slots=True)
class Delivery:
    """What is known of one request's way to the server.

    Attributes:
        tracked: A transport marks this request (else it counts as sent from the start).
        sent: Some bytes of it may have reached the server.
        refusal: The HTTP error the server answered with, if it did.
    """

    tracked: bool
    sent: bool = False
    refusal: Refusal | None = None

    @property
    def may_have_run(self) -> bool:
        """Whether the server may have started the request."""
        return self.sent or not self.tracked


class tracking:  # noqa: N801 - used as a function: ``with tracking(tracked=...) as sent``
    """Track the requests sent from inside this block (by this task and tasks it starts).

    A class rather than a generator-based context manager: it is entered once per
    upstream call, and this costs a fraction of a generator's set-up.
    """

    __slots__ = ("_delivery", "_token")

    def __init__(self, *, tracked: bool) -> None:
        self._delivery = Delivery(tracked=tracked)
        self._token: contextvars.Token[Delivery | None] | None = None

    def __enter__(self) -> Delivery:
        self._token = _current.set(self._delivery)
        return self._delivery

    def __exit__(self, *exc_info: object) -> None:
        if self._token is not None:
            _current.reset(self._token)


def mark_sent() -> None:
    """Record that the current request may have reached the server (called by transports)."""
    delivery = _current.get()
    if delivery is not None:
        delivery.sent = True


def _mark_refused(status: int, message: str) -> None:
    delivery = _current.get()
    if delivery is not None:
        delivery.refusal = Refusal(status, message)


class TrackingHTTPTransport(httpx2.AsyncBaseTransport):
    """httpx's transport, marking each POST sent unless its connection could not be opened.

    An error status on a POST is recorded with the server's own message (the
    JSON-RPC error's ``message``, else the body's text): the SDK replaces a body
    it cannot parse with "Server returned an error response", and the server's
    words are what an operator needs.
    """

    def __init__(self, inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self._inner = inner or httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            response = await self._inner.handle_async_request(request)
        except (httpx2.ConnectError, httpx2.ConnectTimeout):
            raise  # nothing was written: the connection never opened
        except BaseException:
            if request.method == "POST":
                mark_sent()
            raise
        if request.method != "POST":
            return response
        mark_sent()
        if response.status_code < 400:
            return response
        body = await response.aread()
        _mark_refused(response.status_code, _server_message(body, response.status_code))
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            content=body,
            request=request,
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


def _server_message(body: bytes, status: int) -> str:
    """The server's own words in an error response: JSON-RPC ``error.message``, or the text."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
    text = body.decode("utf-8", "replace").strip()
    return text[:300] if text else f"HTTP {status}"
