"""An upstream's output schema and answer cannot hold the host's event loop.

``tests/mcp_servers/noisy_server.py`` (a real process) declares a tool whose
structured content must match ``^(a+)+$`` and answers 40 letters ``a`` and a
``!``: with a backtracking engine, refusing it takes hours, during which nothing
else of the host runs. It is refused at once, both when the call goes beside the
SDK's client session (a handshake-era stdio server) and through it.
"""

from __future__ import annotations

import sys

import anyio
import pytest

from plughost.mcp.config import MCPServerConfig
from plughost.mcp.provider import MCPToolProvider
from plughost_sdk.models import ToolInvocation
from tests.mcp_servers.harness import HERE


@pytest.mark.parametrize("protocol", ["legacy", "auto"])
async def test_a_backtracking_output_pattern_is_refused_without_holding_the_loop(
    protocol: str,
) -> None:
    config = MCPServerConfig(
        command=sys.executable, args=[str(HERE / "noisy_server.py")], protocol=protocol
    )
    provider = MCPToolProvider({"noisy": config})
    try:
        await provider.list_tools()
        # Unchecked, the loop is held in one regex match: this deadline could not even fire,
        # and the test would end at pytest's timeout.
        with anyio.fail_after(60):
            result = await provider.invoke(
                ToolInvocation(tool_name="mcp_noisy_backtrack", arguments={"length": 40})
            )
    finally:
        await provider.close()

    assert result.success is False
    assert "does not match '^(a+)+$'" in (result.error_message or "")
