"""Who may use the console: whoever holds its token, from anywhere; the page itself is open.

An ASGI layer in front of the app, in this order:

1. On a loopback address, a request must name a loopback host in its ``Host``
   header, so a web page that rebinds its own DNS name to 127.0.0.1 cannot
   read the console from an operator's browser.
2. The page itself (``/`` and ``/static/``) holds no data and is open to all.
3. Everything else needs the token, from every client, loopback included:
   reads (``/api/...``, the event stream, ``/metrics``) and actions alike. A
   client on the host's loopback is not necessarily an operator: a plugin
   whose network reaches the loopback (a ``localhost:PORT`` grant, a manifest
   that asks for ports) or another local program would otherwise read every
   plugin's log lines and the chat messages the bot took in. The page
   takes the token from the login URL's fragment and sends it with every
   request.
4. The token travels in an ``Authorization: Bearer`` header (or, for reads
   only, ``?token=`` where a browser API cannot set headers, as
   ``EventSource``), never in a cookie, so another site cannot make a browser
   act on the console.
"""

from __future__ import annotations

import hmac
import json
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Receive, Scope, Send

from plughost.mcp.uvicorn_embed import is_loopback

__all__ = ["ConsoleGuard"]

_OPEN_PATHS = ("/static/",)
_READS = frozenset({"GET", "HEAD"})


class ConsoleGuard:
    """Refuses requests the rules above do not allow, with a JSON reason."""

    def __init__(self, app: ASGIApp, token: str, *, loopback_bind: bool) -> None:
        self._app = app
        self._token = token.encode()
        self._loopback_bind = loopback_bind

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is None:
            await self._app(scope, receive, send)
            return
        status, reason = refusal
        body = json.dumps({"error": reason}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        if status == 401:
            headers.append((b"www-authenticate", b'Bearer realm="plughost"'))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        headers = dict(scope["headers"])
        if self._loopback_bind and not _loopback_host_header(headers.get(b"host", b"")):
            return 403, "the console on a loopback address answers only to a loopback Host header"
        if _open(scope["path"]):
            return None
        if self._has_token(scope, headers):
            return None
        if scope["method"] in _READS:
            return 401, (
                "reading the console needs its token, from this machine too: open the login "
                "URL plughost serve printed (#token=...), or send Authorization: Bearer TOKEN"
            )
        return 401, "actions need the console's token (Authorization: Bearer TOKEN)"

    def _has_token(self, scope: Scope, headers: dict[bytes, bytes]) -> bool:
        given = b""
        authorization = headers.get(b"authorization", b"")
        if authorization[:7].lower() == b"bearer ":
            given = authorization[7:].strip()
        elif scope["method"] in _READS:
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = query.get("token", [""])[0].encode()
        return bool(given) and hmac.compare_digest(given, self._token)


def _open(path: str) -> bool:
    """The page and its static files; a path that climbs out of them is not."""
    return path == "/" or (path.startswith(_OPEN_PATHS) and ".." not in path.split("/"))


def _loopback_host_header(value: bytes) -> bool:
    host = value.decode("latin-1")
    name = host[: host.find("]") + 1] if host.startswith("[") else host.rsplit(":", 1)[0]
    return is_loopback(name)
