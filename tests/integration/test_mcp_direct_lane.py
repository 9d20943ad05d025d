"""Plain gateway calls through ``plughost serve --mcp-stdio`` go the direct lane and answer alike.

The direct lane (``plughost.mcp.direct_lane``) relays a plain call from the
client's pipe to the upstream's and back within the two readers; a call with a
progress token goes through a task instead. The same calls are made both ways
through one real ``plughost serve`` (the official client, server-everything and
the recording upstream of ``tests/mcp_servers/forwarding_server.py``), and what
the client gets must be the same JSON; the serve log says which way each went.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.integration.test_mcp_forwarding import (
    as_json,
    call,
    places,
    served,
    ways,
    with_everything,
)

__all__ = ["places", "with_everything"]  # the fixtures, used by name

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("echo", {"message": "lane"}),
    ("get-tiny-image", {}),
    ("get-annotated-message", {"messageType": "error", "includeImage": True}),
    ("get-structured-content", {"location": "New York"}),
    ("get-resource-links", {"count": 2}),
    ("get-sum", {"a": 1, "b": "2"}),  # "2" is cast to a number, as the registry casts it
]


async def test_plain_calls_take_the_direct_lane_and_answer_as_a_task_answers(
    with_everything: dict[str, Path],
) -> None:
    places = with_everything
    async with served(places) as client:
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
    assert ways(places)[1:] == [
        *((name, True) for name in names),
        *((name, False) for name in names),
        ("mcp_everything_get-sum", False),  # its argument errors are the registry's to give
        ("mcp_fwd_wait", True),
    ]
