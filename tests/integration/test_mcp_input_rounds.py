"""A 2026-07-28 client answers a plugin's sampling and elicitation through input_required rounds.

The official SDK 2.x client (``mode="auto"`` negotiates 2026-07-28) drives
``plughost serve`` over stdio and streamable HTTP: the plugin's call stays
parked in its runner between the client's requests, and the client's own
sampling and elicitation callbacks answer it. Also: a parked call the client
never resumes is cancelled in its runner, and a forged, replayed or foreign
``requestState`` is refused with the reason.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
import pytest_asyncio
from mcp.shared.exceptions import MCPError

from plughost.cli.serve_config import ServeSettings
from plughost.mcp.input_rounds import DEFAULT_INPUT_TIMEOUT, DEFAULT_MAX_PARKED
from tests.mcp_servers.harness import Peer, plughost_client, plughost_serve_http
from tests.mcp_servers.shared_client import SharedClient
from tests.waiting import wait_until

# The module's event loop, for the tests of the shared stdio client: it lives on that loop.
uses_shared = pytest.mark.asyncio(loop_scope="module")

ROOT = Path(__file__).resolve().parents[2]
ASKER = ROOT / "tests" / "plugins" / "asker"
FAST_TIMEOUT = 1.5


def write_config(
    directory: Path, input_timeout: float | None = None, max_parked: int | None = None
) -> Path:
    data = directory / "data"
    lines = [
        "[host]",
        f"plugin_dirs = [{json.dumps(str(ASKER))}]",
        f"data_dir = {json.dumps(str(data))}",
        "",
        "[serve]",
    ]
    if input_timeout is not None:
        lines.append(f"mcp_input_timeout = {input_timeout}")
    if max_parked is not None:
        lines.append(f"mcp_max_parked_calls = {max_parked}")
    path = directory / "plughost.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_config(tmp_path_factory.mktemp("rounds"))


@pytest.fixture(scope="module")
def http_server(config: Path) -> Iterator[tuple[str, str]]:
    with plughost_serve_http(config.parent / "token", "--config", str(config)) as served:
        yield served


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_stdio(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[SharedClient]:
    """One 2026-07-28 stdio client (and serve) for the stdio tests that only need a session.

    Its serve parks one call at most, for the test of that cap; every test leaves no
    call parked behind it, so none depends on another's order or outcome.
    """
    capped = write_config(tmp_path_factory.mktemp("capped"), max_parked=1)
    names = ["sampling_callback", "elicitation_callback"]
    shared = SharedClient(capped, mode="auto", callbacks=names)
    try:
        yield shared
    finally:
        await shared.aclose()


def text_of(result: types.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, types.TextContent))


def served_by(transport: str, request: pytest.FixtureRequest) -> tuple[str, str] | None:
    return request.getfixturevalue("http_server") if transport == "http" else None


@contextlib.asynccontextmanager
async def session(
    transport: str, config: Path, request: pytest.FixtureRequest, shared: SharedClient, peer: Peer
) -> AsyncIterator[Any]:
    """A session of its own over HTTP, the shared one over stdio; ``peer`` answers it."""
    callbacks = {"sampling_callback": peer.sampling, "elicitation_callback": peer.elicitation}
    if transport == "stdio":
        yield await shared.attach(**callbacks)
        return
    served = served_by(transport, request)
    async with plughost_client(config, served, mode="auto", **callbacks) as client:
        yield client


@uses_shared
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_2026_client_answers_a_plugins_sampling_and_elicitation(
    transport: str, config: Path, request: pytest.FixtureRequest, shared_stdio: SharedClient
) -> None:
    peer = Peer()
    async with session(transport, config, request, shared_stdio, peer) as client:
        negotiated = client.protocol_version
        sampled = await client.call_tool("ask_model", {"text": "a name?"})
        elicited = await client.call_tool("ask_user", {"text": "your name?"})
        twice = await client.call_tool("ask_twice", {})
        both = await client.call_tool("ask_both", {})

    assert negotiated == "2026-07-28"
    assert text_of(sampled) == "model said four", text_of(sampled)
    assert text_of(elicited) == "user accept: ada", text_of(elicited)
    # A second request of the same call comes as a second input_required round.
    assert text_of(twice) == "model four, user ada", text_of(twice)
    assert "plugin tests.asker asks (tool ask_twice): is four fine?" in peer.asked
    # Two requests made at once (asyncio.gather) are both answered, in one round or two.
    assert text_of(both) == "model four, user ada", text_of(both)
    assert peer.sampled == ["a name?", "suggest a name", "suggest a name"]


async def test_the_round_trip_is_an_input_required_result_with_an_opaque_state(
    config: Path, request: pytest.FixtureRequest
) -> None:
    async with plughost_client(
        config, served_by("http", request), mode="auto", elicitation_callback=Peer().elicitation
    ) as client:
        first = await client.session.call_tool(
            "ask_user", {"text": "who?"}, allow_input_required=True
        )
        assert isinstance(first, types.InputRequiredResult)
        assert first.input_requests is not None
        [(key, asked)] = first.input_requests.items()
        assert isinstance(asked, types.ElicitRequest)
        assert key == "elicitation/create#1"
        state = first.request_state
        assert state is not None and len(state) >= 40
        answer = types.ElicitResult(action="accept", content={"username": "lin"})
        done = await client.session.call_tool(
            "ask_user",
            {"text": "who?"},
            input_responses={key: answer},
            request_state=state,
            allow_input_required=True,
        )
        # The state is single use: a replay finds nothing.
        with pytest.raises(MCPError, match="unknown, already used, or expired"):
            await client.session.call_tool(
                "ask_user",
                {"text": "who?"},
                input_responses={key: answer},
                request_state=state,
                allow_input_required=True,
            )

    assert isinstance(done, types.CallToolResult)
    assert text_of(done) == "user accept: lin"


async def test_a_forged_or_foreign_state_is_refused_and_the_parked_call_survives_it(
    config: Path, request: pytest.FixtureRequest
) -> None:
    async with plughost_client(
        config, served_by("http", request), mode="auto", elicitation_callback=Peer().elicitation
    ) as client:
        with pytest.raises(MCPError, match="unknown, already used, or expired"):
            await client.session.call_tool(
                "ask_user", {"text": "x"}, request_state="forged", allow_input_required=True
            )
        first = await client.session.call_tool(
            "ask_user", {"text": "mine"}, allow_input_required=True
        )
        assert isinstance(first, types.InputRequiredResult)
        assert first.input_requests is not None
        [key] = first.input_requests
        answer = {key: types.ElicitResult(action="accept", content={"username": "mo"})}
        # The state presented for another call (other arguments, another tool) is refused...
        for name, arguments in (("ask_user", {"text": "theirs"}), ("ask_model", {"text": "mine"})):
            with pytest.raises(MCPError, match="belongs to a call of another tool"):
                await client.session.call_tool(
                    name,
                    arguments,
                    input_responses=answer,
                    request_state=first.request_state,
                    allow_input_required=True,
                )
        # ...and the call it names still waits for its own retry.
        done = await client.session.call_tool(
            "ask_user",
            {"text": "mine"},
            input_responses=answer,
            request_state=first.request_state,
            allow_input_required=True,
        )

    assert isinstance(done, types.CallToolResult)
    assert text_of(done) == "user accept: mo"


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_parked_call_never_resumed_is_cancelled_in_its_runner(
    transport: str, tmp_path: Path
) -> None:
    config = write_config(tmp_path, input_timeout=FAST_TIMEOUT)
    peer = Peer()
    if transport == "http":
        with plughost_serve_http(tmp_path / "token", "--config", str(config)) as served:
            await park_and_abandon(config, served, peer, tmp_path)
    else:
        await park_and_abandon(config, None, peer, tmp_path)


async def park_and_abandon(
    config: Path, served: tuple[str, str] | None, peer: Peer, tmp_path: Path
) -> None:
    async with plughost_client(
        config, served, mode="auto", elicitation_callback=peer.elicitation
    ) as client:
        first = await client.session.call_tool("ask_and_note", {}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        assert first.input_requests is not None

        def note() -> str:
            found = list((tmp_path / "data").rglob("asked.txt"))
            return found[0].read_text(encoding="utf-8") if found else ""

        await wait_until(
            lambda: "cancelled" in note(), timeout=FAST_TIMEOUT + 15, what="the call cancelled"
        )
        [key] = first.input_requests
        with pytest.raises(MCPError, match="expired"):
            await client.session.call_tool(
                "ask_and_note",
                {},
                input_responses={key: types.ElicitResult(action="accept", content={})},
                request_state=first.request_state,
                allow_input_required=True,
            )
        # The server goes on serving: the same tool, answered at once, completes.
        after = await client.call_tool("ask_and_note", {})

    assert text_of(after) == "user ada"


async def test_a_2026_client_that_offers_neither_is_told_so_and_never_asked(
    config: Path, request: pytest.FixtureRequest
) -> None:
    peer = Peer()
    served = served_by("http", request)
    async with plughost_client(config, served, mode="auto") as client:
        plain = (
            await client.call_tool("ask_model", {"text": "?"}),
            await client.call_tool("ask_user", {"text": "?"}),
        )
        # A requestState from such a client is refused too, never ignored.
        with pytest.raises(MCPError, match="unknown, already used, or expired"):
            await client.session.call_tool(
                "ask_model", {"text": "?"}, request_state="forged", allow_input_required=True
            )
    # Offering one of the two: the other is still refused, the call never parks for it.
    async with plughost_client(
        config, served, mode="auto", elicitation_callback=peer.elicitation
    ) as client:
        half = await client.call_tool("ask_model", {"text": "?"})

    assert all(result.is_error for result in (*plain, half))
    assert "did not offer sampling" in text_of(plain[0])
    assert "did not offer elicitation" in text_of(plain[1])
    assert "did not offer sampling" in text_of(half)
    assert peer.asked == []


def test_a_parked_call_waits_300_seconds_by_default() -> None:
    assert ServeSettings().mcp_input_timeout == DEFAULT_INPUT_TIMEOUT == 300.0


def test_at_most_256_calls_are_parked_by_default() -> None:
    assert ServeSettings().mcp_max_parked_calls == DEFAULT_MAX_PARKED == 256


@uses_shared
async def test_past_the_parked_calls_cap_a_plugins_question_is_refused_to_it(
    shared_stdio: SharedClient,
) -> None:
    client = await shared_stdio.attach(
        sampling_callback=Peer().sampling, elicitation_callback=Peer().elicitation
    )
    first = await client.session.call_tool("ask_user", {"text": "first"}, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult)
    assert first.input_requests is not None
    [key] = first.input_requests
    retry: dict[str, Any] = {
        "input_responses": {key: types.ElicitResult(action="accept", content={"username": "q"})},
        "request_state": first.request_state,
        "allow_input_required": True,
    }
    done = None
    try:
        # The one parking place is taken: the next call's question never reaches the
        # client; the plugin's ctx.elicit raises with the reason and the call ends.
        second = await client.session.call_tool(
            "ask_user", {"text": "second"}, allow_input_required=True
        )
        assert isinstance(second, types.CallToolResult)
        assert second.is_error
        assert "mcp_max_parked_calls" in text_of(second), text_of(second)
        # The parked call is untouched and completes on its retry, which frees the place.
        done = await client.session.call_tool("ask_user", {"text": "first"}, **retry)
        again = await client.call_tool("ask_user", {"text": "third"})
    finally:
        if done is None:  # failed with the call parked: free the shared serve's one place
            with contextlib.suppress(MCPError):
                await client.session.call_tool("ask_user", {"text": "first"}, **retry)

    assert isinstance(done, types.CallToolResult)
    assert text_of(done) == "user accept: q"
    assert text_of(again) == "user accept: ada"


async def test_a_2026_client_that_cancels_its_request_cancels_the_call(
    config: Path, request: pytest.FixtureRequest
) -> None:
    def note() -> str:
        found = list((config.parent / "data").rglob("linger.txt"))
        return found[0].read_text(encoding="utf-8") if found else ""

    peer = Peer()
    served = served_by("http", request)
    async with plughost_client(
        config, served, mode="auto", elicitation_callback=peer.elicitation
    ) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "linger_then_ask", {})
            await wait_until(lambda: "started" in note(), timeout=20, what="the call started")
            tg.cancel_scope.cancel()
        await wait_until(lambda: "cancelled" in note(), timeout=10, what="the call cancelled")

    assert peer.asked == []
