"""Reading MCP failures: which ones mean the connection is gone, and how they read."""

from __future__ import annotations

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import MCPError

from plughost.mcp.session import describe_error, is_connection_lost


@pytest.mark.parametrize(
    "error",
    [
        MCPError(types.CONNECTION_CLOSED, "Connection closed"),
        MCPError(types.INVALID_REQUEST, "Session terminated"),
        MCPError(types.INVALID_REQUEST, "Session not found"),
        anyio.ClosedResourceError(),
        anyio.BrokenResourceError(),
        httpx2.ConnectError("All connection attempts failed"),
        ExceptionGroup("transport", [ValueError("noise"), httpx2.ReadError("reset")]),
    ],
)
def test_errors_that_mean_the_connection_is_gone_are_recognized(error: Exception) -> None:
    assert is_connection_lost(error)


@pytest.mark.parametrize(
    "error",
    [
        MCPError(types.INVALID_PARAMS, "Invalid params: missing 'city'"),
        MCPError(types.METHOD_NOT_FOUND, "Unknown tool"),
        TimeoutError(),
        ValueError("bad value"),
    ],
)
def test_answers_and_timeouts_are_not_mistaken_for_a_lost_connection(error: Exception) -> None:
    assert not is_connection_lost(error)


def test_a_grouped_error_is_described_by_its_first_leaf() -> None:
    group = ExceptionGroup("outer", [ExceptionGroup("inner", [OSError("no route")])])

    assert describe_error(group) == "OSError: no route"
    assert describe_error(MCPError(types.CONNECTION_CLOSED, "Connection closed")) == (
        "Connection closed"
    )
