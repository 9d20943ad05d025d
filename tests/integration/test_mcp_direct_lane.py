"""Plain gateway calls through ``plughost serve --mcp-stdio`` go the direct lane and answer alike.

The direct lane (``plughost.mcp.direct_lane``) relays a plain call from the
client's pipe to the upstream's and back within the two readers; a call with a
progress token goes through a task instead. The same calls are made both ways
through one real ``plughost serve`` (the official client, server-everything and
the recording upstream of ``tests/mcp_servers/forwarding_server.py``), and what
the client gets must be the same JSON; the serve log says which way each went.

One serve runs for the tests that leave it running (:mod:`tests.integration.shared_gateway`):
each has upstreams of its own in it and reads only its own log lines. The shutdown
test stops serve, so it starts one of its own.
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import psutil
import pytest
import pytest_asyncio

from tests.integration.shared_gateway import (
    NO_EVERYTHING,
    Gateway,
    everything_available,
    everything_upstream,
    recording_upstream,
    shared_gateway,
    stdio_upstream,
)
from tests.integration.test_mcp_forwarding import (
    PATHS,
    as_json,
    call,
    events,
    places,
    served,
    ways,
)
from tests.mcp_servers.harness import HERE
from tests.processes import command_line
from tests.waiting import wait_until

VANISHING = HERE / "vanishing_server.py"

__all__ = ["places"]  # the fixture, used by name

pytestmark = pytest.mark.asyncio(loop_scope="module")  # the loop the shared serve's client is on


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    """One serve for the tests that leave it running; each test's upstreams are its own."""
    root = tmp_path_factory.mktemp("gateway")
    tables = [
        recording_upstream(root, "fwd", protocol="legacy"),  # plain calls, beside everything
        # one upstream per path: its tool leaves once
        stdio_upstream("gone_c", VANISHING, protocol="legacy"),
        stdio_upstream("gone_k", VANISHING, protocol="legacy"),
        stdio_upstream("odd", VANISHING, protocol="legacy"),  # answers with errors
    ]
    if everything_available():
        tables.append(everything_upstream())
    async with shared_gateway(root, tables) as shared:
        yield shared


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("echo", {"message": "lane"}),
    ("get-tiny-image", {}),
    ("get-annotated-message", {"messageType": "error", "includeImage": True}),
    ("get-structured-content", {"location": "New York"}),
    ("get-resource-links", {"count": 2}),
    ("get-sum", {"a": 1, "b": "2"}),  # "2" is cast to a number, as the registry casts it
]


async def test_plain_calls_take_the_direct_lane_and_answer_as_a_task_answers(
    gateway: Gateway,
) -> None:
    if not everything_available():
        pytest.skip(NO_EVERYTHING)
    client = gateway.client
    await client.call_tool("mcp_fwd_whoami", {})  # the registry's routes are built
    lane = [as_json(await call(client, f"mcp_everything_{t}", a, True)) for t, a in CALLS]
    task = [as_json(await call(client, f"mcp_everything_{t}", a, False)) for t, a in CALLS]
    refused = as_json(await call(client, "mcp_everything_get-sum", {"a": 1}, True))
    defaulted = await call(client, "mcp_fwd_wait", {"label": "d", "seconds": "0"}, True)

    assert lane == task
    assert lane[-1]["content"][0]["text"] == "The sum of 1 and 2 is 3."
    assert [kind for block in lane[2]["content"] for kind in [block["type"]]] == ["text", "image"]
    assert refused["isError"] is True and "b" in refused["content"][0]["text"]
    assert defaulted.content[0].text == "waited d"  # steps filled in with its default
    names = [f"mcp_everything_{t}" for t, _ in CALLS]
    assert gateway.ways("everything", "fwd")[1:] == [
        *((name, True) for name in names),
        *((name, False) for name in names),
        ("mcp_everything_get-sum", False),  # its argument errors are the registry's to give
        ("mcp_fwd_wait", True),
    ]


async def test_a_tool_leaving_its_list_mid_call_answers_alike_on_either_path(
    gateway: Gateway,
) -> None:
    client = gateway.client  # its upstreams gone_c and gone_k: one per path
    for name in ("gone_c_stay", "gone_k_stay"):  # the routes are built
        await client.call_tool(f"mcp_{name}", {})
    lane = await call(client, "mcp_gone_c_vanish", {}, True)
    task = await call(client, "mcp_gone_k_vanish", {}, False)

    # The gateway lists the tools again before the answer: its output schema check must
    # list them once more (awaiting, the lane too) and find the tool gone either way.
    assert as_json(lane) == as_json(task)
    assert task.is_error is False and task.structured_content == {"gone": True}
    assert gateway.ways("gone_c", "gone_k")[2:] == [
        ("mcp_gone_c_vanish", True),
        ("mcp_gone_k_vanish", False),
    ]


async def test_a_shutdown_waits_for_calls_on_either_path_and_delivers_their_answers(
    places: dict[str, Path],
) -> None:
    waited: dict[str, types.CallToolResult] = {}

    async def wait(label: str, lane: bool) -> None:
        arguments = {"label": label, "seconds": 1}
        waited[label] = await call(client, "mcp_fwd_wait", arguments, lane)

    async with served(places) as client:
        await client.call_tool("mcp_fwd_whoami", {})  # the registry's routes are built
        serve = _serve_process(places)
        async with anyio.create_task_group() as tg:
            for label, lane in PATHS:
                tg.start_soon(wait, label, lane)
            await wait_until(
                lambda: all(f"start {label}" in events(places) for label, _ in PATHS),
                timeout=30,
                what="both calls started",
            )
            serve.send_signal(signal.SIGTERM)  # a drain: calls in flight finish, answered

    assert {label: r.content[0].text for label, r in waited.items()} == {
        label: f"waited {label}" for label, _ in PATHS
    }
    assert sorted(ways(places)[1:]) == [("mcp_fwd_wait", False), ("mcp_fwd_wait", True)]


def _serve_process(places: dict[str, Path]) -> psutil.Process:
    config = str(places["config"])
    found = [
        process
        for process in psutil.Process().children(recursive=True)
        if config in command_line(process) and "--mcp-stdio" in command_line(process)
    ]
    assert len(found) == 1, found
    return found[0]


# JSON-RPC errors an upstream may answer a call with; the first two read as a lost connection.
REFUSALS = [
    (types.CONNECTION_CLOSED, "gone away"),
    (types.INTERNAL_ERROR, "Session terminated upstream"),
    (types.INVALID_PARAMS, "no such thing"),
]


async def test_an_upstreams_error_answers_alike_on_either_path(gateway: Gateway) -> None:
    client = gateway.client  # its upstream: odd
    answers: dict[bool, list[Any]] = {True: [], False: []}
    for code, message in REFUSALS:
        for lane in (True, False):
            await client.call_tool("mcp_odd_stay", {})  # connected, and the routes built
            arguments = {"code": code, "message": message}
            answers[lane].append(as_json(await call(client, "mcp_odd_refuse", arguments, lane)))

    assert answers[True] == answers[False]
    assert [a["content"][0]["text"] for a in answers[True]] == [
        "MCP server 'odd' lost the connection during 'refuse': the connection was lost while "
        f"the request was with the server ({message}); it may or may not have run, so it was "
        "not sent again"
        for message in ("gone away", "Session terminated upstream")
    ] + ["MCP server 'odd' refused 'refuse': no such thing"]
    refusals = [way for way in gateway.ways("odd") if way[0] == "mcp_odd_refuse"]
    assert refusals == [("mcp_odd_refuse", lane) for _ in REFUSALS for lane in (True, False)]
