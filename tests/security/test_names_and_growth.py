"""A plugin's names never take the host's or a neighbour's, and it cannot grow host state.

Real runners and a real PluginHost with the default configuration. What an
operator would see is asserted: the refusal, the plugin named, and the host's
tool and the neighbours unaffected.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from prometheus_client.parser import text_string_to_metric_families

from plughost.cli.checker import check_plugins
from plughost.cli.serve import register_host_tools
from plughost.cli.serve_config import ServeConfig
from plughost.dispatch.dynamic_apis import MAX_DYNAMIC_APIS, MAX_OFFLINE_APIS
from plughost.events import EventKind, LifecycleEvent
from plughost.host import PluginHost
from plughost.search.service import TOOL_SEARCH_DESCRIPTION
from plughost.settings import HostSettings, WebSettings
from plughost.tools.builtin import BuiltinTool, BuiltinToolProvider
from plughost.web import WebConsole
from plughost_sdk.models import ToolExecutionContext, ToolExecutionResult, ToolInvocation, ToolSpec
from tests.conftest import TEST_PLUGINS
from tests.fault_injection import copy_plugin

NAMES = TEST_PLUGINS / "hostile_names"
GROWTH = TEST_PLUGINS / "hostile_growth"
HOSTILE_ID = "tests.hostile_names"
GROWTH_ID = "tests.hostile_growth"
CAUGHT = "caught by hostile_names"
TOOL_SEARCH_VARIANTS = ["tool_search", "Tool_Search", "tool-search", "tooI_search", "t00lSearch"]


def _settings(tmp_path: Path) -> HostSettings:
    """The default configuration, with this test's own data and temp directories."""
    return HostSettings(data_dir=tmp_path / "data", temp_dir=tmp_path / "temp")


def _names_plugin(plugins: Path, plugin_id: str, *names: str) -> Path:
    folder = copy_plugin(NAMES, plugins / plugin_id.rsplit(".", 1)[-1], plugin_id)
    (folder / "names.txt").write_text("\n".join(names) + "\n")
    return folder


def _copy(plugins: Path, source: Path) -> Path:
    return Path(shutil.copytree(source, plugins / source.name))


@asynccontextmanager
async def _host(tmp_path: Path, plugins: Path) -> AsyncIterator[tuple[PluginHost, list[Any]]]:
    """A started host over ``plugins`` and the events it emitted, from the very start."""
    host = PluginHost([plugins], settings=_settings(tmp_path))
    events: list[LifecycleEvent] = []
    host.events.add_callback(events.append)
    try:
        await host.start()
        yield host, events
    finally:
        await host.aclose()


def _conflicts(events: list[LifecycleEvent], plugin_id: str) -> list[LifecycleEvent]:
    return [
        e for e in events if e.kind is EventKind.TOOL_NAME_CONFLICT and e.plugin_id == plugin_id
    ]


async def _listed(host: PluginHost) -> dict[str, str]:
    """Every tool the model is offered: name -> provider."""
    return {spec.name: spec.provider_name for spec in await host.tools.list_tools()}


async def _assert_search_is_the_hosts(host: PluginHost, variant: str) -> None:
    listed = await _listed(host)
    search = await host.invoke("tool_search", {"query": "echo"})
    trusted = await host.invoke("tool_search", {"query": "echo"}, trusted=True)
    select = await host.invoke("tool_search", {"query": f"select:{variant}"})

    assert listed["tool_search"] == "tool_search"  # the host's provider, not the plugin
    assert variant == "tool_search" or variant not in listed
    for result in (search, trusted):
        assert result.success, result.error_message
        assert CAUGHT not in result.content
        assert set(result.structured_content) >= {"query", "matches", "total_found"}
    assert select.structured_content["matches"] == []
    assert select.structured_content["not_found"] == [variant]
    if variant != "tool_search":
        for trust in (False, True):
            called = await host.invoke(variant, {"query": "x"}, trusted=trust)
            assert called.error_code == "tool_not_found", called.content


@pytest.mark.parametrize("variant", TOOL_SEARCH_VARIANTS)
async def test_a_plugin_tool_named_like_tool_search_never_takes_the_hosts_search(
    tmp_path: Path, variant: str
) -> None:
    plugins = tmp_path / "plugins"
    _names_plugin(plugins, HOSTILE_ID, variant)
    _copy(plugins, TEST_PLUGINS / "echo")
    async with _host(tmp_path, plugins) as (host, events):
        # Whatever plughost serve does, in its order: the built-in after the plugins...
        register_host_tools(host, ServeConfig())
        await _assert_search_is_the_hosts(host, variant)
        # ...or before them...
        builtin = host.tools.get_provider("tool_search")
        assert builtin is not None
        host.tools.register_provider(builtin, before="plugins")
        await _assert_search_is_the_hosts(host, variant)
        # ...or not there at all: the name stays the host's.
        host.tools.unregister_provider("tool_search")
        listed = await _listed(host)
        absent = await host.invoke(variant, {"query": "x"})
        echo = await host.invoke("echo", {"text": "still here"})

    assert variant not in listed and "tool_search" not in listed
    assert absent.error_code == "tool_not_found" and CAUGHT not in absent.content
    assert echo.content == "still here"
    (conflict, *_) = _conflicts(events, HOSTILE_ID)
    assert f"tool {variant} of plugin {HOSTILE_ID} is refused" in conflict.message
    assert "tool_search" in conflict.message and "rename the tool" in conflict.message
    assert conflict.details["held"] == "tool_search"


class _McpLike:
    """A provider of the host's own kind (as an MCP server's is), listing one tool."""

    provider_name = "mcp"
    provider_type = "mcp"

    async def list_tools(self, context: object = None) -> list[ToolSpec]:
        return [ToolSpec(name="mcp_files_read", description="Read a file")]

    async def invoke(
        self, invocation: ToolInvocation, context: object = None
    ) -> ToolExecutionResult:
        return ToolExecutionResult(tool_name=invocation.tool_name, content="read by the server")

    async def close(self) -> None:
        return None


async def _reply(arguments: dict[str, Any], context: ToolExecutionContext) -> str:
    return "the bot replied"


async def test_names_the_hosts_providers_hold_are_refused_to_plugins_listed_or_not(
    tmp_path: Path,
) -> None:
    plugins = tmp_path / "plugins"
    _names_plugin(plugins, HOSTILE_ID, "Reply", "MCP-files-read", "weather")
    async with _host(tmp_path, plugins) as (host, events):
        # "reply" is off in this configuration, so not listed: still the host's name.
        reply = BuiltinTool(
            spec=ToolSpec(name="reply", description="Reply to the user"),
            handler=_reply,
            enabled_when=lambda config: bool(config.get("replying")),
        )
        host.tools.register_provider(BuiltinToolProvider([reply]))
        host.tools.register_provider(_McpLike())
        listed = await _listed(host)
        calls = {
            name: await host.invoke(name, {"query": "x"}) for name in ("Reply", "MCP-files-read")
        }
        server = await host.invoke("mcp_files_read", {})
        weather = await host.invoke("weather", {"city": "Oslo"})

    assert "Reply" not in listed and "reply" not in listed
    assert "MCP-files-read" not in listed and listed["mcp_files_read"] == "mcp"
    assert all(call.error_code == "tool_not_found" for call in calls.values())
    assert server.content == "read by the server"
    assert weather.content == f"{CAUGHT} as weather"  # its other tools serve as before
    held = {e.details["tool"]: e.details["held"] for e in _conflicts(events, HOSTILE_ID)}
    assert held == {"Reply": "reply", "MCP-files-read": "mcp_files_read"}


async def test_plughost_serve_answers_tool_search_itself_and_reports_the_plugin(
    tmp_path: Path,
) -> None:
    plugins = tmp_path / "plugins"
    _names_plugin(plugins, HOSTILE_ID, "tool_search", "weather")
    _copy(plugins, TEST_PLUGINS / "echo")
    args = ["-m", "plughost", "serve", "--plugins", str(plugins), "--no-watch"]
    args += ["--log-format", "json", "--mcp-stdio"]
    server = StdioServerParameters(command=sys.executable, args=args, cwd=str(tmp_path))
    errors = tmp_path / "serve.stderr"
    with errors.open("w") as errlog:
        async with Client(stdio_client(server, errlog=errlog), cache=None) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            searched = await client.call_tool("tool_search", {"query": "echo text"})
            weather = await client.call_tool("weather", {"city": "Oslo"})
    lines = [json.loads(line) for line in errors.read_text().splitlines() if line.startswith("{")]
    reports = [line for line in lines if line.get("event") == "tool.name_conflict"]

    assert tools["tool_search"].description == TOOL_SEARCH_DESCRIPTION
    text = json.dumps([block.model_dump() for block in searched.content])
    assert not searched.is_error and CAUGHT not in text and "matches" in text
    assert CAUGHT in json.dumps([block.model_dump() for block in weather.content])
    (report,) = reports
    assert report["plugin_id"] == HOSTILE_ID and report["details"]["tool"] == "tool_search"
    assert f"tool tool_search of plugin {HOSTILE_ID} is refused" in report["message"]


async def test_plughost_check_reports_a_tool_named_like_the_hosts_as_an_error(
    tmp_path: Path,
) -> None:
    folder = _names_plugin(tmp_path / "plugins", HOSTILE_ID, "tooI_search", "weather")

    report = await check_plugins([folder])

    errors = [p for p in report.errors if p.plugin == HOSTILE_ID]
    assert not report.ok
    assert len(errors) == 1
    assert "'tooI_search'" in errors[0].message and "'tool_search'" in errors[0].message
    assert errors[0].fix == "rename the tool"


async def test_a_look_alike_of_a_neighbours_tool_is_refused_and_the_first_keeps_serving(
    tmp_path: Path,
) -> None:
    plugins = tmp_path / "plugins"
    _names_plugin(plugins, "tests.weather_first", "get_weather")
    lookalikes = ["Get_Weather", "get-weather", "getWeather", "GET_WEATHER", "get_weather"]
    async with _host(tmp_path, plugins) as (host, events):
        before = await host.invoke("get_weather", {"city": "Oslo"})
        late = _names_plugin(plugins, "tests.weather_late", *lookalikes)
        assert await host.reloader.reload_path(late)
        after = await _listed(host)
        calls = {name: await host.invoke(name, {"city": "Oslo"}) for name in lookalikes}
        # A reload of either plugin changes nothing: the first keeps its name.
        assert await host.reload_plugin("tests.weather_late")
        assert await host.reload_plugin("tests.weather_first")
        reloaded = await _listed(host)
        again = await host.invoke("get_weather", {"city": "Oslo"})

    assert before.content == again.content == f"{CAUGHT} as get_weather"
    for listing in (after, reloaded):
        assert "get_weather" in listing
        assert not set(lookalikes[:-1]) & set(listing)
        offered = [name for name in listing if name.startswith("weather_late_")]
        assert len(offered) == len(lookalikes)  # offered under names that say whose
    assert calls["get_weather"].content == f"{CAUGHT} as get_weather"  # the first's own
    for name in lookalikes[:-1]:
        assert calls[name].error_code == "tool_not_found"
    reported = {e.details["tool"]: e for e in _conflicts(events, "tests.weather_late")}
    assert set(reported) == set(lookalikes)
    for name, event in reported.items():
        assert f"tool {name} of plugin tests.weather_late is offered as" in event.message
        assert "plugin tests.weather_first had first" in event.message
        assert "rename the tool in plugin tests.weather_late" in event.message
    assert not _conflicts(events, "tests.weather_first")


async def _publish(host: PluginHost, **arguments: Any) -> dict[str, Any]:
    result = await host.invoke("publish", arguments)
    assert result.success, result.error_message
    answer: dict[str, Any] = result.structured_content["answer"]
    return answer


def _apis_of(host: PluginHost, plugin_id: str) -> list[Any]:
    return [c for c in host.components.components("API") if c.plugin_id == plugin_id]


async def test_dynamic_apis_past_the_bound_are_refused_and_the_registry_stays_bounded(
    tmp_path: Path,
) -> None:
    plugins = tmp_path / "plugins"
    _copy(plugins, GROWTH)
    _copy(plugins, TEST_PLUGINS / "echo")
    async with _host(tmp_path, plugins) as (host, _):
        assert (await _publish(host, count=3, prefix="keep"))["success"]
        flood = await _publish(host, count=100_003, bare=True)
        over = await _publish(host, count=MAX_DYNAMIC_APIS + 1)
        huge = await _publish(host, names=["big"], description_chars=1_000_000)
        long_name = await _publish(host, names=["n" * 1000])
        at_sign = await _publish(host, names=["echo@2"])
        spaced = await _publish(host, names=["two words"])
        after_refusals = len(_apis_of(host, GROWTH_ID))
        kept_through = await host.call_api(f"{GROWTH_ID}.keep2")
        rounds = [await _publish(host, count=MAX_DYNAMIC_APIS, prefix=f"r{r}_") for r in range(6)]
        kept = len(_apis_of(host, GROWTH_ID))
        latest = await host.call_api(f"{GROWTH_ID}.r5_0", x=1)
        dropped = await host.call_api(f"{GROWTH_ID}.r4_0")
        forgotten = await host.call_api(f"{GROWTH_ID}.r0_0")
        echo = await host.invoke("echo", {"text": "neighbour"})

    assert flood["success"] is False
    assert f"plugin {GROWTH_ID} publishes 100,003 dynamic APIs" in flood["error"]
    assert f"over the limit of {MAX_DYNAMIC_APIS} per plugin" in flood["error"]
    assert over["success"] is False and "over the limit" in over["error"]
    assert huge["success"] is False and "its metadata is" in huge["error"]
    assert "shorten the description" in huge["error"]
    assert long_name["success"] is False and "over the limit of 128" in long_name["error"]
    assert at_sign["success"] is False and "'@'" in at_sign["error"]
    assert spaced["success"] is False and "spaces" in spaced["error"]
    assert after_refusals == 3  # every refused set left the previous one as it was
    assert kept_through.success and kept_through.result["api"] == "keep2"
    assert all(r["success"] for r in rounds)
    assert kept == MAX_DYNAMIC_APIS + MAX_OFFLINE_APIS
    assert latest.success and latest.result["answered_by"] == GROWTH_ID
    assert (dropped.error_code, dropped.error) == ("api_offline", "replaced by the next set")
    assert forgotten.error_code == "api_not_found"
    assert echo.content == "neighbour"


async def test_a_plugin_reaches_its_own_api_when_a_neighbour_publishes_the_same_name(
    tmp_path: Path,
) -> None:
    plugins = tmp_path / "plugins"
    _copy(plugins, GROWTH)
    _copy(plugins, TEST_PLUGINS / "api_caller")
    async with _host(tmp_path, plugins) as (host, _):
        for names, version in ((["double"], "1"), (["double"], "2"), (["tests.double"], "1")):
            answer = await _publish(host, names=names, version=version)
            assert answer["success"], answer
            own = await host.invoke("call_api", {"api_name": "double", "args": {"n": 21}})
            versioned = await host.invoke("call_api", {"api_name": "double@2", "args": {"n": 1}})
            assert own.structured_content["answer"] == {"success": True, "result": 42}
            assert GROWTH_ID not in json.dumps(versioned.structured_content)
        assert (await _publish(host, names=["double", "tests.double"]))["success"]
        embedder = await host.call_api("double", n=1)
        public = await host.call_api(f"{GROWTH_ID}.tests.double", n=1)

    assert embedder.error_code == "ambiguous"  # no caller of its own: reported as before
    assert public.success and public.result["answered_by"] == GROWTH_ID


def _series(text: str, name: str) -> list[dict[str, str]]:
    return [
        sample.labels
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name
    ]


async def test_error_codes_and_called_names_keep_the_metrics_series_bounded(
    tmp_path: Path,
) -> None:
    plugins = tmp_path / "plugins"
    _copy(plugins, GROWTH)
    token = "names-and-growth-token-0123456789"
    web = WebSettings(address="127.0.0.1:0", token=token)
    headers = {"authorization": f"Bearer {token}"}
    async with (
        _host(tmp_path, plugins) as (host, _),
        WebConsole(host, web) as console,
        httpx2.AsyncClient(base_url=console.url.rstrip("/"), headers=headers) as http,
    ):
        await host.invoke("fail_with", {"code": "timeout"})
        baseline = (await http.get("/metrics")).text
        for start in range(0, 3000, 100):
            churn: list[asyncio.Future[ToolExecutionResult] | Any] = [
                host.invoke("fail_with", {"code": f"churn_{i}"}) for i in range(start, start + 100)
            ]
            churn += [host.invoke(f"no_such_tool_{i}", {}) for i in range(start, start + 100)]
            await asyncio.gather(*churn)
        churned = (await http.get("/metrics")).text

    errors = _series(churned, "plughost_tool_errors_total")
    codes = {(labels["tool"], labels["code"]): labels for labels in errors}
    assert ("fail_with", "timeout") in codes and ("fail_with", "other") in codes
    assert ("(no such tool)", "tool_not_found") in codes
    assert "churn_" not in churned and "no_such_tool_" not in churned
    for metric in ("plughost_tool_errors_total", "plughost_tool_calls_total"):
        grown = len(_series(churned, metric)) - len(_series(baseline, metric))
        assert grown <= 2, f"{metric} grew by {grown} series"
    other = [
        s.value
        for family in text_string_to_metric_families(churned)
        for s in family.samples
        if s.name == "plughost_tool_errors_total" and s.labels.get("code") == "other"
    ]
    assert other == [3000.0]
