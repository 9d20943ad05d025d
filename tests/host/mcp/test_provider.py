"""MCPToolProvider against real MCP servers in real processes, over stdio, HTTP and SSE."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from plughost.mcp.client import ServerState
from plughost.mcp.config import MCPServerConfig
from plughost.mcp.provider import MCPToolProvider
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import ToolInvocation
from tests.mcp_servers.demo_server import LONG_NAME, PIXEL_PNG
from tests.mcp_servers.harness import (
    DEMO_SERVER,
    ServerProcess,
    free_port,
    pid_alive,
    server_pid,
)
from tests.waiting import wait_until


def demo_stdio(**options: Any) -> MCPServerConfig:
    return MCPServerConfig(command=sys.executable, args=[str(DEMO_SERVER), "stdio"], **options)


DEMO_TAG = "stdio demo-fixture"  # in its command line: the tests find its process by it
DEMO_TOOL_TIMEOUT = 1.0


@pytest.fixture
async def demo() -> AsyncIterator[MCPToolProvider]:
    config = MCPServerConfig(
        command=sys.executable,
        args=[str(DEMO_SERVER), *DEMO_TAG.split()],
        tool_timeout=DEMO_TOOL_TIMEOUT,
    )
    provider = MCPToolProvider({"demo": config})
    try:
        yield provider
    finally:
        await provider.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared() -> AsyncIterator[MCPToolProvider]:
    """One demo server for the tests that only read from it."""
    provider = MCPToolProvider({"demo": demo_stdio()})
    try:
        yield provider
    finally:
        await provider.close()


reads_shared = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def http_server() -> Iterator[ServerProcess]:
    with ServerProcess(DEMO_SERVER, "http") as server:
        yield server


async def call(provider: MCPToolProvider, name: str, **arguments: Any) -> Any:
    return await provider.invoke(ToolInvocation(tool_name=name, arguments=arguments))


@reads_shared
async def test_provider_lists_server_tools_under_prefixed_names_with_ids_and_metadata(
    shared: MCPToolProvider,
) -> None:
    specs = {spec.name: spec for spec in await shared.list_tools()}

    assert {"mcp_demo_echo", "mcp_demo_add", "mcp_demo_pixel", "mcp_demo_fail"} <= set(specs)
    echo = specs["mcp_demo_echo"]
    assert echo.tool_id == "mcp:demo:echo"
    assert echo.provider_type == "mcp"
    assert echo.provider_name == "mcp"
    assert echo.metadata["server"] == "demo"
    assert echo.metadata["original_name"] == "echo"
    assert echo.parameters_schema["properties"]["text"]["type"] == "string"
    assert specs["mcp_demo_add"].metadata["read_only"] is True
    assert "read_only" not in echo.metadata
    assert shared.status()["demo"].state is ServerState.CONNECTED


@reads_shared
async def test_awkward_names_are_sanitized_and_calls_still_use_the_original_names(
    shared: MCPToolProvider,
) -> None:
    by_original = {spec.metadata["original_name"]: spec for spec in await shared.list_tools()}
    long_spec = by_original[LONG_NAME]
    dotted_spec = by_original["ns.lookup"]

    long_result = await call(shared, long_spec.name)
    dotted_result = await call(shared, dotted_spec.name, key="k")

    assert len(long_spec.name) <= 64
    assert re.fullmatch(r"mcp_demo_report_[A-Za-z0-9_]+_[0-9a-f]{8}", long_spec.name)
    assert long_spec.tool_id == f"mcp:demo:{LONG_NAME}"
    assert dotted_spec.name == "mcp_demo_ns_lookup"
    assert long_result.content == "long answer"
    assert dotted_result.content == "value of k"


@reads_shared
async def test_provider_calls_a_tool_under_its_original_name(shared: MCPToolProvider) -> None:
    result = await call(shared, "mcp_demo_echo", text="hello")

    assert result.success, result.error_message
    assert result.content == "echo: hello"
    assert result.tool_name == "mcp_demo_echo"
    assert result.metadata["server"] == "demo"


@reads_shared
async def test_image_result_arrives_as_raw_bytes(shared: MCPToolProvider) -> None:
    result = await call(shared, "mcp_demo_pixel")

    assert result.success, result.error_message
    [item] = result.content_items
    assert item.content_type == "image"
    assert item.mime_type == "image/png"
    assert item.data == PIXEL_PNG


@reads_shared
async def test_is_error_result_becomes_a_failed_tool_error_with_the_text(
    shared: MCPToolProvider,
) -> None:
    result = await call(shared, "mcp_demo_fail", reason="disk on fire")

    assert not result.success
    assert result.error_code == "tool_error"
    assert "disk on fire" in result.error_message


async def test_slow_tool_times_out_naming_the_server_and_the_limit_and_the_next_call_works(
    demo: MCPToolProvider,
) -> None:
    await call(demo, "mcp_demo_echo", text="connected")
    started = time.monotonic()
    await call(demo, "mcp_demo_echo", text="a quick call")
    quick = time.monotonic() - started
    started = time.monotonic()
    result = await call(demo, "mcp_demo_sleep", seconds=30)
    waited = time.monotonic() - started

    # Given up at the tool timeout, not when the 30 s sleep ends.
    assert waited < 3 * DEMO_TOOL_TIMEOUT + quick, f"{waited:.2f} s, a quick call {quick:.3f} s"
    assert not result.success
    assert result.error_code == "timeout"
    assert "'demo'" in result.error_message
    assert "1 s" in result.error_message
    after = await call(demo, "mcp_demo_echo", text="still here")
    assert after.content == "echo: still here"


async def test_stdio_server_killed_mid_session_is_restarted_by_the_next_call(
    demo: MCPToolProvider,
) -> None:
    await call(demo, "mcp_demo_whoami")  # connected
    first = server_pid(DEMO_TAG)  # the host's pid: inside its sandbox it is pid 2
    os.kill(first, signal.SIGKILL)
    await wait_until(lambda: not pid_alive(first), timeout=10, what="the server process died")
    # The end of its output marks the connection lost (a call racing that may instead
    # fail as "may or may not have run": the kernel can take a moment to close its pipe).
    await wait_until(
        lambda: demo.status()["demo"].state is ServerState.DISCONNECTED,
        timeout=10,
        what="the connection is marked lost",
    )

    result = await call(demo, "mcp_demo_whoami")

    assert result.success, result.error_message
    assert server_pid(DEMO_TAG) != first
    assert demo.status()["demo"].state is ServerState.CONNECTED


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_http_server_restarted_on_the_same_port_serves_the_next_call(
    protocol: str, caplog: pytest.LogCaptureFixture
) -> None:
    server = ServerProcess(DEMO_SERVER, "http").start()
    config = MCPServerConfig(url=server.url, tool_timeout=5.0, protocol=protocol)
    provider = MCPToolProvider({"web": config})
    try:
        first = (await call(provider, "mcp_web_whoami")).content
        server.kill()
        server.start()

        result = await call(provider, "mcp_web_whoami")

        assert result.success, result.error_message
        assert result.content != first
        reconnects = [r for r in caplog.records if "reconnecting" in r.getMessage()]
        if protocol == "legacy":  # a stateful session: the new server does not know it
            assert reconnects, "the lost session was noticed and the server reconnected"
    finally:
        await provider.close()
        server.kill()


async def test_unreachable_http_server_fails_with_the_reason_and_recovers_after_backoff() -> None:
    server = ServerProcess(DEMO_SERVER, "http").start()
    config = MCPServerConfig(url=server.url, retry_delay=0.2, connect_timeout=5.0)
    provider = MCPToolProvider({"web": config})
    try:
        assert (await call(provider, "mcp_web_echo", text="a")).success
        server.kill()

        down = await call(provider, "mcp_web_echo", text="b")

        assert down.error_code == "server_unavailable"
        assert "'web'" in down.error_message
        status = provider.status()["web"]
        assert status.state is ServerState.FAILED
        assert status.reason
        again = await call(provider, "mcp_web_echo", text="b")
        assert again.error_code == "server_unavailable", "its tools are known, its server down"
        server.start()
        await wait_until(
            lambda: provider.status()["web"].retry_in == 0, timeout=10, what="backoff over"
        )
        assert (await call(provider, "mcp_web_echo", text="c")).content == "echo: c"
    finally:
        await provider.close()
        server.kill()


async def test_provider_reaches_a_streamable_http_server(http_server: ServerProcess) -> None:
    provider = MCPToolProvider({"web": MCPServerConfig(url=http_server.url)})
    try:
        names = {spec.name for spec in await provider.list_tools()}
        result = await call(provider, "mcp_web_add", a=2, b=3)

        assert "mcp_web_echo" in names
        assert result.content == "5"
        assert provider.status()["web"].transport == "streamable_http"
    finally:
        await provider.close()


async def test_provider_reaches_an_sse_server() -> None:
    with ServerProcess(DEMO_SERVER, "sse") as server:
        provider = MCPToolProvider({"old": MCPServerConfig(url=server.url)})
        try:
            result = await call(provider, "mcp_old_echo", text="over sse")

            assert result.content == "echo: over sse"
            assert provider.status()["old"].transport == "sse"
        finally:
            await provider.close()


async def test_enabled_tools_keeps_the_named_tools_and_warns_about_unknown_names(
    http_server: ServerProcess, caplog: pytest.LogCaptureFixture
) -> None:
    # A provider of its own (the filter is its configuration) on the file's running server.
    config = MCPServerConfig(url=http_server.url, enabled_tools=["echo", "mcp_demo_add", "nope"])
    provider = MCPToolProvider({"demo": config})
    try:
        with caplog.at_level(logging.WARNING, logger="plughost.mcp.provider"):
            names = {spec.name for spec in await provider.list_tools()}
    finally:
        await provider.close()

    assert names == {"mcp_demo_echo", "mcp_demo_add"}
    [warning] = [r for r in caplog.records if "enabled_tools" in r.getMessage()]
    assert "nope" in warning.getMessage()
    assert "whoami" in warning.getMessage()  # the list of available tools


@reads_shared
async def test_resources_and_prompts_become_read_only_tools(shared: MCPToolProvider) -> None:
    specs = {spec.name: spec for spec in await shared.list_tools()}
    resource = specs["mcp_demo_resource_greeting"]
    prompt = specs["mcp_demo_prompt_review"]

    read = await call(shared, "mcp_demo_resource_greeting")
    filled = await call(shared, "mcp_demo_prompt_review", code="x = 1")

    assert resource.metadata["read_only"] is True
    assert resource.metadata["uri"] == "demo://greeting"
    assert prompt.metadata["read_only"] is True
    assert prompt.parameters_schema["required"] == ["code"]
    assert read.content == "hello from a resource"
    assert filled.content == "Please review this code: x = 1"


async def test_resources_and_prompts_are_not_exposed_when_tools_are_filtered(
    http_server: ServerProcess,
) -> None:
    config = MCPServerConfig(url=http_server.url, enabled_tools=["echo"])
    provider = MCPToolProvider({"demo": config})
    try:
        names = {spec.name for spec in await provider.list_tools()}
    finally:
        await provider.close()

    assert names == {"mcp_demo_echo"}


_SILENT = "import sys, time; open(sys.argv[1], 'w').write(repr(time.monotonic())); sys.stdin.read()"
"""A server that never answers, and writes when it started (the clock all processes share)."""


async def test_a_broken_or_silent_server_neither_blocks_nor_hides_the_others(
    tmp_path: Path,
) -> None:
    def silent(name: str) -> MCPServerConfig:
        return MCPServerConfig(
            command=sys.executable,
            args=["-c", _SILENT, str(tmp_path / name)],
            write=[str(tmp_path)],  # a sandboxed server writes only where it is granted
            connect_timeout=1.5,
            retry_delay=30,  # no background retry may turn it back to "connecting" before the check
        )

    missing = MCPServerConfig(command="/nonexistent/mcp-server", retry_delay=30)
    refused = MCPServerConfig(url=f"http://127.0.0.1:{free_port()}/mcp")
    provider = MCPToolProvider(
        {
            "good": demo_stdio(),
            "silent": silent("silent"),
            "mute": silent("mute"),
            "missing": missing,
            "refused": refused,
        }
    )
    try:
        names = {spec.name for spec in await provider.list_tools()}
        status = provider.status()
        unavailable = await call(provider, "mcp_missing_anything")
    finally:
        await provider.close()
    began = [float((tmp_path / name).read_text()) for name in ("silent", "mute")]

    assert "mcp_good_echo" in names
    assert not any(
        name.startswith(("mcp_silent", "mcp_mute", "mcp_missing", "mcp_refused")) for name in names
    )
    # Both silent ones were started before either was given up at its connect timeout:
    # one after another, the second would start only once the first had been given up.
    assert abs(began[0] - began[1]) < 1.5, began
    assert status["good"].state is ServerState.CONNECTED
    assert status["silent"].state is status["mute"].state is ServerState.FAILED
    assert "connect_timeout" in status["silent"].reason
    assert status["missing"].state is ServerState.FAILED
    assert "nonexistent" in status["missing"].reason
    assert status["missing"].retry_in is not None and status["missing"].retry_in > 20
    assert status["refused"].state is ServerState.FAILED
    assert unavailable.error_code == "tool_not_found"


async def test_a_server_that_comes_back_is_reconnected_in_the_background() -> None:
    port = free_port()
    registry = ToolRegistry()
    config = MCPServerConfig(url=f"http://127.0.0.1:{port}/mcp", retry_delay=0.2)
    provider = MCPToolProvider({"late": config})
    registry.register_provider(provider)
    heard: list[str] = []
    registry.add_listener(heard.append)
    server = ServerProcess(DEMO_SERVER, "http", port=port)
    try:
        before = {spec.name for spec in await registry.list_tools()}
        failed = provider.status()["late"]
        server.start()
        await wait_until(
            lambda: provider.status()["late"].state is ServerState.CONNECTED,
            timeout=20,
            what="the server was reconnected without any call",
        )
        after = {spec.name for spec in await registry.list_tools()}
    finally:
        await provider.close()
        server.kill()

    assert failed.state is ServerState.FAILED
    assert "mcp_late_echo" not in before
    assert heard == ["mcp"], "the registry was told once, when the tools appeared"
    assert "mcp_late_echo" in after


async def test_a_failed_server_is_not_retried_before_its_backoff_ends() -> None:
    provider = MCPToolProvider({"missing": MCPServerConfig(command="/nonexistent", retry_delay=30)})
    try:
        await provider.list_tools()
        await provider.list_tools()
        status = provider.status()["missing"]
    finally:
        await provider.close()

    assert status.failures == 1
    assert status.state is ServerState.FAILED


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_list_changed_from_the_server_refreshes_tools_and_notifies_the_registry(
    protocol: str,
) -> None:
    registry = ToolRegistry()
    provider = MCPToolProvider({"demo": demo_stdio(protocol=protocol)})
    registry.register_provider(provider)
    heard: list[str] = []
    registry.add_listener(heard.append)
    try:
        before = {spec.name for spec in await registry.list_tools()}
        added = await registry.invoke(
            ToolInvocation(tool_name="mcp_demo_add_tool", arguments={"name": "fresh"})
        )
        await wait_until(
            lambda: "mcp" in heard, timeout=10, what="the registry heard of the change"
        )
        after = {spec.name for spec in await registry.list_tools()}
        fresh = await registry.invoke(ToolInvocation(tool_name="mcp_demo_fresh"))
        version = provider.status()["demo"].protocol_version
    finally:
        await provider.close()

    assert added.success, added.error_message
    assert "mcp_demo_fresh" not in before
    assert "mcp_demo_fresh" in after
    assert fresh.content == "I am fresh"
    assert (version == "2026-07-28") == (protocol == "auto")


@reads_shared
async def test_registry_checks_arguments_before_they_reach_the_server(
    shared: MCPToolProvider,
) -> None:
    registry = ToolRegistry()  # its own registry over the shared server, which it only reads
    registry.register_provider(shared)

    result = await registry.invoke(ToolInvocation(tool_name="mcp_demo_add", arguments={"a": 1}))

    assert result.error_code == "invalid_arguments"
    assert "b" in result.error_message


async def test_close_stops_the_server_process(demo: MCPToolProvider) -> None:
    await call(demo, "mcp_demo_whoami")  # connected
    pid = server_pid(DEMO_TAG)

    await demo.close()

    await wait_until(lambda: not pid_alive(pid), timeout=10, what="the server process exited")
    owners = [t for t in asyncio.all_tasks() if t.get_name().startswith("mcp-server:")]
    assert owners == [], "every owner task has finished"
    assert demo.status()["demo"].state is ServerState.CLOSED
    after = await call(demo, "mcp_demo_echo", text="x")
    assert after.error_code == "server_unavailable"
    assert "'demo'" in after.error_message
