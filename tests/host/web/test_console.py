"""WebConsole over hosts of their own: settings, components, states, detaching, refusals."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import httpx2
import pytest

import plughost.web.snapshot as snapshot
from plughost.events import EventKind, LifecycleEvent
from plughost.host import PluginHost, PluginStatus
from plughost.runners.supervisor import RunnerState
from plughost.settings import WebSettings
from plughost.web import WebConsole
from plughost.web.stats import CallStats
from tests.conftest import TEST_PLUGINS, HostFactory, fast_settings
from tests.fault_injection import copy_plugin
from tests.waiting import wait_until

BREAKABLE = TEST_PLUGINS / "breakable"

TOKEN = "console-test-token-0123456789"


def _auth() -> dict[str, str]:
    return {"authorization": f"Bearer {TOKEN}"}


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
        before = (await client.get("/api/tools", headers=_auth())).json()["components"]
        key = "COMMAND:tests.chat.weather"
        body = {"key": key, "enabled": False}
        refused = await client.post("/api/components/enabled", json=body)
        await client.post("/api/components/enabled", json=body, headers=_auth())
        after = (await client.get("/api/tools", headers=_auth())).json()["components"]

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
