"""Gateway calls through ``plughost serve --mcp-stdio`` are forwarded beside both SDK sessions.

A real ``plughost serve`` process (debug logs on) fronts upstreams over stdio:
``tests/mcp_servers/forwarding_server.py``, which shows the id a call reached it
under, records its starts, ends and cancellations and can forge responses or die
mid-call, and (in the first test) server-everything (npm). The official MCP client
drives it. The serve process says in its log which calls it answered beside its
server session, and the upstream shows which it received beside plughost's client
session (an id of plughost's own, ``plughost-...``); what the client gets is
compared with what it gets directly.

One serve runs for the whole file (:mod:`tests.integration.shared_gateway`): each
test has upstreams of its own in it, and reads only its own events and log lines.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
import pytest_asyncio
from mcp import Client, StdioServerParameters

from tests.integration.shared_gateway import (
    EVERYTHING,
    LANE,
    NO_EVERYTHING,
    TAKEN,
    Gateway,
    everything_available,
    everything_upstream,
    recording_upstream,
    serve_client,
    shared_gateway,
)
from tests.mcp_servers.harness import recording_upstream_config
from tests.waiting import wait_until

pytestmark = pytest.mark.asyncio(loop_scope="module")  # the loop the shared serve's client is on


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    """A configuration with the recording upstream only (``fwd``)."""
    config, folder = recording_upstream_config(tmp_path)  # the tap serves handshake-era ones
    return {"config": config, "events": folder / "events", "log": tmp_path / "serve.log"}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    """One serve for the file; each test's upstreams are its own (none kills serve itself)."""
    root = tmp_path_factory.mktemp("gateway")
    tables = [
        recording_upstream(root, "fwd", protocol="legacy"),  # forwarded calls
        recording_upstream(root, "modern"),  # the same, connected with the 2026-07-28 protocol
        recording_upstream(root, "cut", protocol="legacy"),  # cancelled calls
        recording_upstream(root, "dies", protocol="legacy"),  # dies mid-call
        recording_upstream(root, "late", protocol="legacy", tool_timeout=1),  # past its timeout
    ]
    if everything_available():
        tables.append(everything_upstream())
    async with shared_gateway(root, tables) as shared:
        yield shared


def served(places: dict[str, Path]) -> AbstractAsyncContextManager[Client]:
    """A serve of the test's own on ``places``' configuration (for a test that stops it)."""
    return serve_client(places["config"], places["log"])


def ways(places: dict[str, Path]) -> list[tuple[str, bool]]:
    """Each call answered beside the server session: its tool, and whether on the direct lane."""
    lines = places["log"].read_text().splitlines()
    return [
        (line.split(TAKEN, 1)[1].split()[0], line.endswith(LANE)) for line in lines if TAKEN in line
    ]


async def call(
    client: Client, tool: str, arguments: dict[str, Any], lane: bool
) -> types.CallToolResult:
    """Call ``tool``; unless on the ``lane``, with a progress token, which keeps it off it."""
    if lane:
        return await client.call_tool(tool, arguments)
    return await client.call_tool(tool, arguments, progress_callback=_ignored)


async def _ignored(done: float, total: float | None, message: str | None) -> None:
    return None


# Each fault is tried on the direct lane (a plain call) and in a task (a progress token).
PATHS = (("c", True), ("k", False))


def events(places: dict[str, Path]) -> list[str]:
    path = places["events"]
    return path.read_text().splitlines() if path.exists() else []


def as_json(result: types.CallToolResult) -> Any:
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


EVERYTHING_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("echo", {"message": "forwarded"}),
    ("get-tiny-image", {}),
    ("get-annotated-message", {"messageType": "error", "includeImage": True}),
    ("get-structured-content", {"location": "New York"}),
    ("get-sum", {"a": 1}),  # refused by the registry's argument check: never forwarded
]


async def test_gateway_calls_are_forwarded_and_answer_as_the_direct_call(
    gateway: Gateway,
) -> None:
    if not everything_available():
        pytest.skip(NO_EVERYTHING)
    direct = StdioServerParameters(command="node", args=[str(EVERYTHING)])
    async with Client(direct, mode="legacy", cache=None) as client:
        expected = [as_json(await client.call_tool(t, a)) for t, a in EVERYTHING_CALLS[:4]]
    reports: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        reports.append((done, total, message))

    client = gateway.client
    got = [as_json(await client.call_tool(f"mcp_everything_{t}", a)) for t, a in EVERYTHING_CALLS]
    seen = await client.call_tool("mcp_fwd_request_id", {})
    session = await client.call_tool("mcp_modern_request_id", {})
    waited = await client.call_tool(
        "mcp_fwd_wait", {"label": "p", "steps": 3}, progress_callback=progress
    )
    forged, unissued, later = await forge_responses(client)

    assert got[:4] == expected
    assert got[4]["isError"] is True and "b" in got[4]["content"][0]["text"]
    assert json.loads(seen.content[0].text).startswith("plughost-")  # not the SDK's numbering
    assert str(json.loads(session.content[0].text)).isdigit()  # the SDK session's numbering
    assert waited.content[0].text == "waited p"
    assert reports == [(n + 1.0, 3.0, f"step {n + 1} of 3") for n in range(3)]
    assert forged.content[0].text == "real"
    assert later == unissued  # each answered by the server itself, not by the forgery
    assert gateway.taken("everything", "fwd", "modern") == [
        *(f"mcp_everything_{t}" for t, _ in EVERYTHING_CALLS),
        "mcp_fwd_request_id",
        "mcp_modern_request_id",
        "mcp_fwd_wait",
        *["mcp_fwd_request_id", "mcp_fwd_forge", "mcp_fwd_request_id", "mcp_fwd_request_id"],
    ]


async def forge_responses(client: Client) -> tuple[types.CallToolResult, list[str], list[str]]:
    """Have the upstream send responses to ids plughost did not issue (yet, or ever).

    Returns:
        The forging call's result, the ids of ours it forged answers for before they
        were issued, and the ids the next two calls then reached the upstream under.
    """
    first = json.loads((await client.call_tool("mcp_fwd_request_id", {})).content[0].text)
    prefix, number = first.rsplit("-", 1)
    # The forging call itself goes under the next id; the two after it are not issued yet.
    unissued = [f"{prefix}-{int(number) + 2}", f"{prefix}-{int(number) + 3}"]
    strangers: list[str | int] = ["plughost-00000000-1", 424242]
    forged = await client.call_tool("mcp_fwd_forge", {"request_ids": unissued + strangers})
    later = []
    for _ in range(2):
        result = await client.call_tool("mcp_fwd_request_id", {})
        later.append(json.loads(result.content[0].text))
    return forged, unissued, later


async def test_a_cancelled_gateway_call_is_cancelled_at_the_upstream_on_either_path(
    gateway: Gateway,
) -> None:
    client = gateway.client
    await client.call_tool("mcp_cut_whoami", {})  # the registry's routes are built
    for label, lane in PATHS:
        with anyio.move_on_after(60):
            async with anyio.create_task_group() as tg:
                arguments = {"label": label, "seconds": 60}
                tg.start_soon(call, client, "mcp_cut_wait", arguments, lane)
                await wait_until(
                    lambda label=label: f"start {label}" in gateway.events("cut"),
                    timeout=30,
                    what="start",
                )
                tg.cancel_scope.cancel()  # the client sends notifications/cancelled
        await wait_until(
            lambda label=label: f"cancelled {label}" in gateway.events("cut"),
            timeout=30,
            what="cancel",
        )
    after = await client.call_tool("mcp_cut_wait", {"label": "d"})

    assert after.content[0].text == "waited d"
    assert not any(f"done {label}" in gateway.events("cut") for label, _ in PATHS)
    assert gateway.taken("cut") == ["mcp_cut_whoami", *["mcp_cut_wait"] * 3]
    assert gateway.ways("cut")[1:3] == [("mcp_cut_wait", lane) for _, lane in PATHS]


async def test_an_upstream_that_dies_mid_call_fails_the_call_and_the_next_call_restarts_it(
    gateway: Gateway,
) -> None:
    client = gateway.client
    answers = [(await client.call_tool("mcp_dies_whoami", {})).content[0].text]
    died = []
    for _, lane in PATHS:
        died.append(await call(client, "mcp_dies_die", {}, lane))
        answers.append((await client.call_tool("mcp_dies_whoami", {})).content[0].text)

    for result in died:
        assert result.is_error is True
        assert result.content[0].text == (
            "MCP server 'dies' lost the connection during 'die': the connection was lost while "
            "the request was with the server (command exited with code 3); it may or may not "
            "have run, so it was not sent again"
        )
    assert len(set(answers)) == 3  # a new process answered after each death
    assert gateway.taken("dies") == ["mcp_dies_whoami", *["mcp_dies_die", "mcp_dies_whoami"] * 2]
    assert [way for way in gateway.ways("dies") if way[0] == "mcp_dies_die"] == [
        ("mcp_dies_die", lane) for _, lane in PATHS
    ]


async def test_a_gateway_call_past_its_tool_timeout_fails_and_is_cancelled_at_the_upstream(
    gateway: Gateway,
) -> None:
    client = gateway.client  # its upstream ``late`` is configured with tool_timeout = 1
    late = []
    await client.call_tool("mcp_late_whoami", {})  # the registry's routes are built
    for label, lane in PATHS:
        late.append(await call(client, "mcp_late_wait", {"label": label, "seconds": 60}, lane))
        await wait_until(
            lambda label=label: f"cancelled {label}" in gateway.events("late"),
            timeout=30,
            what="cancel",
        )
    after = await client.call_tool("mcp_late_wait", {"label": "u"})

    for result in late:
        assert result.is_error is True
        assert result.content[0].text == (
            "MCP server 'late' did not answer 'wait' within 1 s (tool_timeout); "
            "the call was abandoned."
        )
    assert not any(f"done {label}" in gateway.events("late") for label, _ in PATHS)
    assert after.content[0].text == "waited u"
    assert gateway.taken("late") == ["mcp_late_whoami", *["mcp_late_wait"] * 3]
    assert gateway.ways("late")[1:3] == [("mcp_late_wait", lane) for _, lane in PATHS]
