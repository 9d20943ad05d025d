"""A server that says its list changed after every listing is relisted at a bounded pace.

``tests/mcp_servers/noisy_server.py``, a real process, flaps once its ``flap``
tool is called: each ``tools/list`` answers another list and is followed by
``notifications/tools/list_changed``. Unpaced, plughost relisted it and told its
registry's listeners (every MCP client of ``plughost serve``) about 50 times a
second for as long as the server liked. The test shortens the pause to keep quick.
"""

from __future__ import annotations

import itertools
import sys

import anyio
import pytest

from plughost.mcp import client_owner
from plughost.mcp.config import MCPServerConfig
from plughost.mcp.provider import MCPToolProvider
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import ToolInvocation
from tests.mcp_servers.harness import HERE

PAUSE = 0.2
CHANGES = 5


async def test_a_server_that_flaps_is_relisted_at_most_once_a_pause(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(client_owner, "REFRESH_PAUSE", PAUSE)
    config = MCPServerConfig(command=sys.executable, args=[str(HERE / "noisy_server.py")])
    provider = MCPToolProvider({"noisy": config})
    registry = ToolRegistry()
    registry.register_provider(provider)
    seen: list[float] = []
    enough = anyio.Event()

    def changed(provider_name: str) -> None:
        seen.append(anyio.current_time())
        if len(seen) >= CHANGES:
            enough.set()

    try:
        await registry.list_tools()  # connected
        registry.add_listener(changed)
        await provider.invoke(ToolInvocation(tool_name="mcp_noisy_flap", arguments={}))
        with anyio.fail_after(30):
            await enough.wait()
        names = {spec.name for spec in await registry.list_tools()}
    finally:
        await provider.close()

    # Each change is a relist the host began; a pause lies between the starts of two.
    gaps = [later - earlier for earlier, later in itertools.pairwise(seen)]
    assert min(gaps) >= PAUSE * 0.9  # what the owner task enforces, not a measured speed
    assert names & {"mcp_noisy_flap_0", "mcp_noisy_flap_1"}  # the list did follow the server
