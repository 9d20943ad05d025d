"""The bearer token that guards ``plughost serve --mcp-http``.

The MCP HTTP server runs tools with the host's rights for whoever connects,
and a loopback address only keeps other machines out, not the machine's other
users (nor, before runners were sandboxed, its plugins). So every HTTP
request must carry ``Authorization: Bearer <token>``. The token lives in a
file only the host's user can read (mode 0600): the operator may provide one,
otherwise the first start generates it, saves it and prints it once.

What does not live here: serving (:func:`plughost.mcp.server.serve_http`).
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from pathlib import Path

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["MIN_TOKEN_LENGTH", "load_or_create_token", "require_bearer"]

MIN_TOKEN_LENGTH = 16


def load_or_create_token(path: Path) -> tuple[str, bool]:
    """Read the token in ``path``, or generate one there (mode 0600) if there is none.

    Returns:
        The token, and whether it was created just now (and so is to be shown once).

    Raises:
        ValueError: the file is readable by other users, or its token is too short.
        OSError: the file cannot be read or created.
    """
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read(path), False
    token = secrets.token_urlsafe(32)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    return token, True


def _read(path: Path) -> str:
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ValueError(
            f"{path} holds the MCP bearer token but other users can read it "
            f"(mode {stat.S_IMODE(mode):o}); run: chmod 600 {path}"
        )
    token = path.read_text(encoding="utf-8").strip()
    if len(token) < MIN_TOKEN_LENGTH:
        raise ValueError(
            f"the MCP bearer token in {path} is shorter than {MIN_TOKEN_LENGTH} characters; "
            "use a long random one, or delete the file to have one generated"
        )
    return token


def require_bearer(app: ASGIApp, token: str) -> ASGIApp:
    """Wrap ``app`` so that an HTTP request without ``Authorization: Bearer <token>`` gets 401.

    Every connection is checked, whatever its kind: a WebSocket handshake (which
    uvicorn serves when a WebSocket library is installed) without the token is
    closed before the app sees it. Only the server's own lifespan events pass.
    """
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await app(scope, receive, send)
            return
        given = next((v for k, v in scope.get("headers", ()) if k == b"authorization"), b"")
        if hmac.compare_digest(given, expected):
            await app(scope, receive, send)
        elif scope["type"] == "http":
            await _unauthorized(send)
        else:  # a WebSocket handshake: closing it before accepting answers HTTP 403
            await send({"type": "websocket.close", "code": 1008})

    return guarded


async def _unauthorized(send: Send) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"www-authenticate", b'Bearer realm="plughost"'),
                (b"content-type", b"text/plain; charset=utf-8"),
            ],
        }
    )
    body = b"this MCP server needs an 'Authorization: Bearer <token>' header\n"
    await send({"type": "http.response.body", "body": body})
