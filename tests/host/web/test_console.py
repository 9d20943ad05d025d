"""WebConsole over a real host: the JSON API, actions, try-a-tool, /metrics and the live stream."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

import plughost.web.snapshot as snapshot
from plughost.events import EventKind, LifecycleEvent
from plughost.host import PluginHost, PluginStatus
from plughost.runners.supervisor import RunnerState
from plughost.settings import WebSettings
from plughost.web import WebConsole
from plughost.web.stats import CallStats
from plughost_sdk.models import ToolInvocation
from tests.conftest import TEST_PLUGINS, HostFactory, fast_settings
from tests.fault_injection import copy_plugin
from tests.waiting import wait_until

BREAKABLE = TEST_PLUGINS / "breakable"

TOKEN = "console-test-token-0123456789"


@asynccontextmanager
async def _console(make_host: HostFactory) -> AsyncIterator[tuple[PluginHost, httpx2.AsyncClient]]:
    async with make_host([TEST_PLUGINS / "echo"]) as host:
        settings = WebSettings(address="127.0.0.1:0", token=TOKEN)
        async with (
            WebConsole(host, settings) as console,
            httpx2.AsyncClient(base_url=console.url.rstrip("/"), timeout=10) as client,
        ):
            yield host, client


def _auth() -> dict[str, str]:
    return {"authorization": f"Bearer {TOKEN}"}


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


async def _metrics(
    client: httpx2.AsyncClient,
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return _samples(response.text)


async def test_metrics_parse_and_count_calls_errors_and_latency(make_host: HostFactory) -> None:
    async with _console(make_host) as (host, client):
        before = await _metrics(client)
        await host.invoke("echo", {"text": "a"})
        await host.invoke("echo", {"text": "b"})
        await host.invoke("fail", {"message": "no"})
        after = await _metrics(client)

    calls = ("plughost_tool_calls_total", (("source", "tests.echo"), ("tool", "echo")))
    errors = ("plughost_tool_errors_total", (("code", "tool_error"), ("tool", "fail")))
    latency = ("plughost_tool_call_seconds_count", (("tool", "echo"),))
    assert before.get(calls, 0) == 0
    assert after[calls] == 2
    assert after[errors] == 1
    assert after[latency] == 2
    memory = after[("plughost_runner_memory_bytes", (("runner", "runner-tests-echo"),))]
    assert memory > 1_000_000
    assert after[("plughost_runner_up", (("runner", "runner-tests-echo"),))] == 1
    assert after[("plughost_plugins", (("state", "loaded"),))] == 1


async def test_try_a_tool_shows_the_validation_error_the_model_would_see(
    make_host: HostFactory,
) -> None:
    async with _console(make_host) as (host, client):
        response = await client.post(
            "/api/call", json={"tool": "echo", "arguments": '{"text": '}, headers=_auth()
        )
        direct = await host.tools.invoke(ToolInvocation(tool_name="echo", arguments='{"text": '))

    answer = response.json()["result"]
    assert answer["success"] is False
    assert answer["error_code"] == direct.error_code == "invalid_arguments"
    assert answer["error_message"] == direct.error_message
    assert answer["content"] == direct.content


async def test_try_a_tool_returns_media_as_data_urls_and_the_history_messages(
    make_host: HostFactory,
) -> None:
    async with _console(make_host) as (_, client):
        response = await client.post("/api/call", json={"tool": "image"}, headers=_auth())

    answer = response.json()
    (item,) = answer["items"]
    assert item["type"] == "image"
    assert item["data_url"].startswith("data:image/png;base64,iVBOR")
    tool_message, media_message = answer["history"]["openai"]
    assert tool_message["role"] == "tool"
    assert tool_message["tool_call_id"] == answer["call_id"]
    assert media_message["content"][1]["type"] == "image_url"


async def test_disabling_a_plugin_hides_its_tools_until_it_is_enabled(
    make_host: HostFactory,
) -> None:
    async with _console(make_host) as (host, client):
        without_token = await client.post("/api/plugins/tests.echo/disable")
        untouched = await host.invoke("echo", {"text": "x"})
        await client.post("/api/plugins/tests.echo/disable", headers=_auth())
        hidden = await host.invoke("echo", {"text": "x"})
        listed = (await client.get("/api/tools")).json()["tools"]
        overview = (await client.get("/api/overview")).json()
        await client.post("/api/plugins/tests.echo/enable", headers=_auth())
        back = await host.invoke("echo", {"text": "x"})

    assert without_token.status_code == 401
    assert untouched.success
    assert hidden.error_code == "tool_not_found"
    assert {t["name"]: t["enabled"] for t in listed}["echo"] is False
    assert overview["plugins"][0]["enabled"] is False
    assert back.success


async def test_a_tool_disabled_in_one_session_stays_enabled_elsewhere(
    make_host: HostFactory,
) -> None:
    async with _console(make_host) as (_, client):
        body = {"full_name": "tests.echo.echo", "enabled": False, "session_id": "s1"}
        await client.post("/api/tools/enabled", json=body, headers=_auth())
        in_s1 = (await client.get("/api/tools?session=s1")).json()["tools"]
        in_s2 = (await client.get("/api/tools?session=s2")).json()["tools"]

    assert {t["name"]: t["enabled_in_session"] for t in in_s1}["echo"] is False
    assert {t["name"]: t["enabled_in_session"] for t in in_s2}["echo"] is True


async def test_overview_shows_runner_figures_and_calls_per_minute(make_host: HostFactory) -> None:
    async with _console(make_host) as (host, client):
        await host.invoke("echo", {"text": "x"})
        (plugin,) = (await client.get("/api/overview")).json()["plugins"]

    runner = plugin["runner"]
    assert plugin["state"] == "loaded"
    assert plugin["pid"] == runner["pid"] == host.runner_for("tests.echo").pid  # type: ignore[union-attr]
    assert runner["memory_bytes"] > 1_000_000
    assert runner["uptime_s"] >= 0
    assert runner["restarts"] == 0
    assert plugin["calls"]["calls_per_minute"] == 1
    assert plugin["calls"]["p50_ms"] > 0


async def test_an_embedders_monitor_events_appear_in_the_feed(make_host: HostFactory) -> None:
    async with _console(make_host) as (host, client):
        host.monitor.session_started("s1", "group chat")
        host.monitor.planner_finished("s1", cycle_id="c1", seconds=1.5, prompt_tokens=120)
        entries = (await client.get("/api/feed?limit=2")).json()["entries"]

    assert [e["kind"] for e in entries] == ["session.start", "planner.finalized"]
    assert all(e["source"] == "monitor" for e in entries)
    assert entries[1]["details"] == {
        "session_id": "s1",
        "cycle_id": "c1",
        "seconds": 1.5,
        "prompt_tokens": 120,
    }


async def test_the_stream_sends_an_overview_then_each_new_feed_entry(
    make_host: HostFactory,
) -> None:
    async with _console(make_host) as (host, client), client.stream("GET", "/api/stream") as sse:
        events = _sse_events(sse.aiter_lines())
        first = await anext(events)
        host.monitor.cycle_started("s1", cycle_id="c9", round_index=1, max_rounds=3)
        kind, data = await anext(events)
        while kind != "feed" or data["source"] != "monitor":
            kind, data = await anext(events)

    assert first[0] == "overview"
    assert first[1]["plugins"][0]["plugin_id"] == "tests.echo"
    assert data["kind"] == "cycle.start"
    assert data["details"]["cycle_id"] == "c9"


async def _sse_events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str, Any]]:
    kind = ""
    async for line in lines:
        if line.startswith("event: "):
            kind = line[len("event: ") :]
        elif line.startswith("data: "):
            yield kind, json.loads(line[len("data: ") :])


async def test_a_non_loopback_address_is_refused_unless_allowed(tmp_path: Path) -> None:
    host = PluginHost([])

    with pytest.raises(ValueError, match="not a loopback"):
        WebConsole(host, WebSettings(address="0.0.0.0:0"))
    assert WebConsole(host, WebSettings(address="0.0.0.0:0", allow_remote=True)).bind_host


async def test_commands_handlers_and_hooks_are_listed_and_can_be_switched_off(
    make_host: HostFactory,
) -> None:
    async with (
        make_host([TEST_PLUGINS / "chat"]) as host,
        WebConsole(host, WebSettings(address="127.0.0.1:0", token=TOKEN)) as console,
        httpx2.AsyncClient(base_url=console.url.rstrip("/")) as client,
    ):
        before = (await client.get("/api/tools")).json()["components"]
        key = "COMMAND:tests.chat.weather"
        body = {"key": key, "enabled": False}
        refused = await client.post("/api/components/enabled", json=body)
        await client.post("/api/components/enabled", json=body, headers=_auth())
        after = (await client.get("/api/tools")).json()["components"]

    kinds = {c["kind"] for c in before}
    assert {"COMMAND", "EVENT_HANDLER", "HOOK_HANDLER"} <= kinds
    assert {c["key"]: c["enabled"] for c in before}[key] is True
    assert refused.status_code == 401
    assert {c["key"]: c["enabled"] for c in after}[key] is False


async def test_the_console_reads_its_settings_from_the_host_and_detaches_when_it_stops(
    make_host: HostFactory, tmp_path: Path
) -> None:
    web = WebSettings(address="127.0.0.1:0", token=TOKEN)
    settings = fast_settings(tmp_path).model_copy(update={"web": web})
    async with make_host([TEST_PLUGINS / "echo"], settings) as host:
        async with WebConsole(host) as console:
            assert console.login_url.endswith(f"/#token={TOKEN}")
            await host.invoke("echo", {"text": "counted"})
        await host.invoke("echo", {"text": "not counted"})
        logging.getLogger("plughost.plugin.tests.echo").warning("not in the feed")
        host.monitor.session_started("after")

    assert console.stats.summary("tests.echo")["calls_per_minute"] == 1
    assert not [e for e in console.feed.recent() if e.kind == "session.start"]
    assert not [e for e in console.feed.recent() if e.message == "not in the feed"]
    assert TOKEN not in host.redactor.redact(f"token={TOKEN}")


async def test_reload_from_the_console_starts_a_new_runner(make_host: HostFactory) -> None:
    async with _console(make_host) as (host, client):
        old_pid = host.runner_for("tests.echo").pid  # type: ignore[union-attr]
        answer = (await client.post("/api/plugins/tests.echo/reload", headers=_auth())).json()
        (plugin,) = (await client.get("/api/overview")).json()["plugins"]

    assert answer == {"plugin_id": "tests.echo", "reloaded": True}
    assert plugin["state"] == "loaded"
    assert plugin["pid"] != old_pid


async def test_a_plugin_being_reloaded_and_one_whose_runner_gave_up_say_so(
    make_host: HostFactory, tmp_path: Path
) -> None:
    looping = copy_plugin(BREAKABLE, tmp_path / "loop", "tests.loop", fault="crash_after_load")
    async with (
        make_host([TEST_PLUGINS / "echo", looping], max_restarts=0) as host,
        WebConsole(host, WebSettings(address="127.0.0.1:0")) as console,
    ):
        await wait_until(lambda: _gave_up(host, "tests.loop"), timeout=15, what="give-up")
        start = LifecycleEvent(EventKind.RELOAD_STARTED, "", plugin_id="tests.echo")
        host.events.emit(start)
        during = {p["plugin_id"]: p for p in snapshot.plugins(host, console.stats, console.tracker)}
        host.events.emit(LifecycleEvent(EventKind.RELOAD_SUCCEEDED, "", plugin_id="tests.echo"))
        after = {p["plugin_id"]: p for p in snapshot.plugins(host, console.stats, console.tracker)}

    assert during["tests.echo"]["state"] == "reloading"
    assert after["tests.echo"]["state"] == "loaded"
    assert after["tests.loop"]["state"] == "gave up"
    assert after["tests.loop"]["problems"][0]["stage"] == "crashed"


def _gave_up(host: PluginHost, plugin_id: str) -> bool:
    runner = host.runner_for(plugin_id)
    return runner is not None and runner.state is RunnerState.FAILED


def test_fields_a_newer_status_row_carries_are_passed_to_the_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class GuardedStatus(PluginStatus):
        protections: tuple[str, ...] = ()

    host = PluginHost([])
    row = GuardedStatus("p", "1.0", "/p", "failed", None, None, (), protections=("seccomp",))
    monkeypatch.setattr(host, "status", lambda: [row])

    (plugin,) = snapshot.plugins(host, CallStats(), snapshot.EventTracker(60))

    assert plugin["protections"] == ("seccomp",)
    assert plugin["runner"] is None
