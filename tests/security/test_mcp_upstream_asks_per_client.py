"""What an upstream asks mid-call reaches only the client whose call it can be about.

A real ``plughost serve --mcp-http`` has the recording upstream
(tests/mcp_servers/forwarding_server.py), whose ``ask_in_pairs(topic)`` waits until
two of its calls are in progress and then asks its client's model about the
topic. The protocol does not say which call a server's request is about, so
plughost, the upstream's one client, cannot tell whose it is: when the two calls
come from two clients of serve, neither client may be shown the other's topic
(the upstream is refused, and says so in its answer); when both come from one
client, that client is asked both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types

from tests.mcp_servers.harness import (
    Peer,
    plughost_client,
    plughost_serve_http,
    recording_upstream_config,
)

DEADLINE = 60
TOOL = "mcp_fwd_ask_in_pairs"


def text_of(result: types.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def test_two_clients_calls_are_never_shown_each_others_questions(tmp_path: Path) -> None:
    config, _ = recording_upstream_config(tmp_path)  # a session the server may ask through
    alice, bob = Peer(), Peer()
    results: dict[str, Any] = {}

    async def call(name: str, client: Any, topic: str) -> None:
        results[name] = await client.call_tool(TOOL, {"topic": topic})

    with plughost_serve_http(tmp_path / "token", "--config", str(config)) as served:
        with anyio.fail_after(DEADLINE):
            async with (
                plughost_client(config, served, sampling_callback=alice.sampling) as a,
                plughost_client(config, served, sampling_callback=bob.sampling) as b,
            ):
                async with anyio.create_task_group() as group:  # one call each
                    group.start_soon(call, "alice", a, "alice's secret")
                    group.start_soon(call, "bob", b, "bob's secret")
                async with anyio.create_task_group() as group:  # both of alice's
                    group.start_soon(call, "alice 1", a, "alice's first")
                    group.start_soon(call, "alice 2", a, "alice's second")

    for name in ("alice", "bob"):
        said = text_of(results[name])
        assert said.startswith("refused: plughost cannot tell whom to ask for sampling"), said
        assert "calls from 2 clients are in progress to server 'fwd'" in said
    assert [text_of(results[name]) for name in ("alice 1", "alice 2")] == ["four", "four"]
    assert sorted(alice.sampled) == ["alice's first", "alice's second"]
    assert bob.sampled == []
