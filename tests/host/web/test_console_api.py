"""The console's JSON API, actions, try-a-tool, /metrics and live stream, over one real host.

The tests share one host and one console (a module-scoped event loop), so each
one leaves the host as it found it, and counts are compared before and after.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
import pytest_asyncio
from prometheus_client.parser import text_string_to_metric_families

from plughost.host import PluginHost
from plughost.settings import WebSettings
from plughost.web import WebConsole
from plughost_sdk.models import ToolInvocation
from tests.conftest import TEST_PLUGINS, fast_settings

pytestmark = pytest.mark.asyncio(loop_scope="module")

TOKEN = "console-test-token-0123456789"
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@dataclass
class Served:
    host: PluginHost
    client: httpx2.AsyncClient


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    settings = fast_settings(tmp_path_factory.mktemp("console"))
    web = WebSettings(address="127.0.0.1:0", token=TOKEN)
    async with (
        PluginHost([TEST_PLUGINS / "echo"], settings=settings) as host,
        WebConsole(host, web) as console,
        httpx2.AsyncClient(base_url=console.url.rstrip("/"), timeout=10) as client,
    ):
        yield Served(host, client)


def _auth() -> dict[str, str]:
    return {"authorization": f"Bearer {TOKEN}"}


async def _metrics(client: httpx2.AsyncClient) -> Samples:
    response = await client.get("/metrics", headers=_auth())
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    found: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


async def test_metrics_parse_and_count_calls_errors_and_latency(served: Served) -> None:
    host, client = served.host, served.client
    before = await _metrics(client)
    await host.invoke("echo", {"text": "a"})
    await host.invoke("echo", {"text": "b"})
    await host.invoke("fail", {"message": "no"})
    after = await _metrics(client)

    calls = ("plughost_tool_calls_total", (("source", "tests.echo"), ("tool", "echo")))
    errors = ("plughost_tool_errors_total", (("code", "tool_error"), ("tool", "fail")))
    latency = ("plughost_tool_call_seconds_count", (("tool", "echo"),))
    assert after[calls] == before.get(calls, 0) + 2
    assert after[errors] == before.get(errors, 0) + 1
    assert after[latency] == before.get(latency, 0) + 2
    runner = (("runner", host.runner_for("tests.echo").runner_id),)  # type: ignore[union-attr]
    assert after[("plughost_runner_memory_bytes", runner)] > 1_000_000
    assert after[("plughost_runner_up", runner)] == 1
    assert after[("plughost_plugins", (("state", "loaded"),))] == 1


async def test_try_a_tool_shows_the_validation_error_the_model_would_see(
    served: Served,
) -> None:
    host, client = served.host, served.client
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
    served: Served,
) -> None:
    client = served.client
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
    served: Served,
) -> None:
    host, client = served.host, served.client
    without_token = await client.post("/api/plugins/tests.echo/disable")
    untouched = await host.invoke("echo", {"text": "x"})
    await client.post("/api/plugins/tests.echo/disable", headers=_auth())
    hidden = await host.invoke("echo", {"text": "x"})
    listed = (await client.get("/api/tools", headers=_auth())).json()["tools"]
    overview = (await client.get("/api/overview", headers=_auth())).json()
    await client.post("/api/plugins/tests.echo/enable", headers=_auth())
    back = await host.invoke("echo", {"text": "x"})

    assert without_token.status_code == 401
    assert untouched.success
    assert hidden.error_code == "tool_not_found"
    assert {t["name"]: t["enabled"] for t in listed}["echo"] is False
    assert overview["plugins"][0]["enabled"] is False
    assert back.success


async def test_a_tool_disabled_in_one_session_stays_enabled_elsewhere(
    served: Served,
) -> None:
    client = served.client
    body = {"full_name": "tests.echo.echo", "enabled": False, "session_id": "s1"}
    await client.post("/api/tools/enabled", json=body, headers=_auth())
    in_s1 = (await client.get("/api/tools?session=s1", headers=_auth())).json()["tools"]
    in_s2 = (await client.get("/api/tools?session=s2", headers=_auth())).json()["tools"]

    assert {t["name"]: t["enabled_in_session"] for t in in_s1}["echo"] is False
    assert {t["name"]: t["enabled_in_session"] for t in in_s2}["echo"] is True


async def test_overview_names_the_hosts_sandbox_set_each_plugins_protections_come_from(
    served: Served,
) -> None:
    data = (await served.client.get("/api/overview", headers=_auth())).json()

    report = served.host.sandbox
    assert report is not None
    assert data["sandbox"] == {
        "enabled": report.enabled,
        "active": list(report.active),
        "missing": dict(sorted(report.missing.items())),
    }
    (plugin,) = data["plugins"]
    assert set(plugin["sandbox"]) <= set(data["sandbox"]["active"])


async def test_overview_shows_runner_figures_and_calls_per_minute(served: Served) -> None:
    host, client = served.host, served.client
    (before,) = (await client.get("/api/overview", headers=_auth())).json()["plugins"]
    await host.invoke("echo", {"text": "x"})
    (plugin,) = (await client.get("/api/overview", headers=_auth())).json()["plugins"]

    runner = plugin["runner"]
    assert plugin["state"] == "loaded"
    assert plugin["pid"] == runner["pid"] == host.runner_for("tests.echo").pid  # type: ignore[union-attr]
    assert runner["memory_bytes"] > 1_000_000
    assert runner["uptime_s"] >= 0
    assert runner["restarts"] == runner["restarts_recent"] == 0
    assert runner["last_restart"] is None
    assert plugin["calls"]["calls_per_minute"] == before["calls"]["calls_per_minute"] + 1
    assert plugin["calls"]["p50_ms"] > 0


async def test_an_embedders_monitor_events_appear_in_the_feed(served: Served) -> None:
    host, client = served.host, served.client
    host.monitor.session_started("s1", "group chat")
    host.monitor.planner_finished("s1", cycle_id="c1", seconds=1.5, prompt_tokens=120)
    entries = (await client.get("/api/feed?limit=2", headers=_auth())).json()["entries"]

    assert [e["kind"] for e in entries] == ["session.start", "planner.finalized"]
    assert all(e["source"] == "monitor" for e in entries)
    assert entries[1]["details"] == {
        "session_id": "s1",
        "cycle_id": "c1",
        "seconds": 1.5,
        "prompt_tokens": 120,
    }


async def test_the_stream_sends_an_overview_then_each_new_feed_entry(
    served: Served,
) -> None:
    host, client = served.host, served.client
    async with client.stream("GET", "/api/stream", headers=_auth()) as sse:
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


async def test_reload_from_the_console_starts_a_new_runner(served: Served) -> None:
    host, client = served.host, served.client
    old_pid = host.runner_for("tests.echo").pid  # type: ignore[union-attr]
    answer = (await client.post("/api/plugins/tests.echo/reload", headers=_auth())).json()
    (plugin,) = (await client.get("/api/overview", headers=_auth())).json()["plugins"]

    assert answer == {"plugin_id": "tests.echo", "reloaded": True}
    assert plugin["state"] == "loaded"
    assert plugin["pid"] != old_pid
