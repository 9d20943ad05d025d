"""ConsoleGuard: every read and action needs the token, loopback included; the page does not."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from plughost.web.guard import ConsoleGuard

TOKEN = "t" * 32


async def _ok(request: Request) -> PlainTextResponse:
    return PlainTextResponse("ok")


def _client(client_host: str, *, loopback_bind: bool = True, host: str = "127.0.0.1") -> TestClient:
    app = Starlette(
        routes=[
            Route("/", _ok),
            Route("/api/x", _ok, methods=["GET", "POST"]),
            Route("/static/a", _ok),
        ]
    )
    guarded = ConsoleGuard(app, TOKEN, loopback_bind=loopback_bind)
    return TestClient(guarded, base_url=f"http://{host}:8770", client=(client_host, 5000))


def _auth() -> dict[str, str]:
    return {"authorization": f"Bearer {TOKEN}"}


def test_a_loopback_client_needs_the_token_to_read() -> None:
    client = _client("127.0.0.1")

    refused = client.get("/api/x")
    head = client.head("/api/x")
    wrong = client.get("/api/x", headers={"authorization": "Bearer wrong"})
    allowed = client.get("/api/x", headers=_auth())
    in_query = client.get(f"/api/x?token={TOKEN}")

    assert refused.status_code == 401
    assert "token" in refused.json()["error"]
    assert head.status_code == 401
    assert wrong.status_code == 401
    assert allowed.status_code == 200
    assert in_query.status_code == 200


def test_a_path_that_climbs_out_of_static_is_not_open() -> None:
    client = _client("127.0.0.1")

    assert client.get("/static/%2e%2e/api/x").status_code == 401
    assert client.get("//api/x").status_code == 401
    assert client.get("/static/a").status_code == 200


def test_loopback_client_needs_the_token_for_an_action() -> None:
    client = _client("127.0.0.1")

    refused = client.post("/api/x")
    allowed = client.post("/api/x", headers={"authorization": f"Bearer {TOKEN}"})

    assert refused.status_code == 401
    assert "token" in refused.json()["error"]
    assert allowed.status_code == 200


def test_an_action_does_not_accept_the_token_in_the_query() -> None:
    assert _client("127.0.0.1").post(f"/api/x?token={TOKEN}").status_code == 401


def test_remote_client_needs_the_token_to_read() -> None:
    client = _client("192.0.2.7", loopback_bind=False, host="console.example")

    assert client.get("/api/x").status_code == 401
    assert client.get("/api/x", headers={"authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/api/x", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert client.get(f"/api/x?token={TOKEN}").status_code == 200


def test_the_page_itself_is_open_to_a_remote_client() -> None:
    client = _client("192.0.2.7", loopback_bind=False, host="console.example")

    assert client.get("/").status_code == 200
    assert client.get("/static/a").status_code == 200


def test_loopback_console_refuses_a_foreign_host_header() -> None:
    client = _client("127.0.0.1", host="attacker.example")

    response = client.get("/api/x")

    assert response.status_code == 403
    assert "Host" in response.json()["error"]


def test_loopback_console_accepts_localhost_and_ipv6_host_headers() -> None:
    assert _client("127.0.0.1", host="localhost").get("/api/x", headers=_auth()).status_code == 200
    assert _client("::1", host="[::1]").get("/api/x", headers=_auth()).status_code == 200
