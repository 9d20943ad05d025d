"""Secrets from plugin configuration and the host environment never reach logs or events."""

from __future__ import annotations

import json
import logging

import pytest

from plughost.events import LifecycleEvent
from tests.conftest import TEST_PLUGINS, HostFactory
from tests.waiting import wait_until

KEY = "sk-live-0123456789abcdef"
HOST_SECRET = "host-secret-value-42"


async def test_plugin_secrets_are_redacted_from_logs_and_events_even_at_debug(
    make_host: HostFactory, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UPSTREAM_API_TOKEN", HOST_SECRET)
    caplog.set_level(logging.DEBUG)
    events: list[LifecycleEvent] = []
    async with make_host([TEST_PLUGINS / "leaky"], log_level="DEBUG") as host:
        host.events.add_callback(events.append)
        assert (await host.invoke("leak", {})).content == "leaked"
        wanted = ("raw stderr", "my key is", "still using")
        await wait_until(
            lambda: all(any(w in r.getMessage() for r in caplog.records) for w in wanted),
            timeout=10,
            what="the plugin's print, log record and raw stderr line",
        )
        await host.invoke("leak_and_die", {})
        await host.events.wait_for(lambda e: e.kind.value == "runner.restarted", timeout=15)
    messages = [r.getMessage() for r in caplog.records]
    assert any("my key is [redacted]" in m for m in messages)
    assert any("still using [redacted]" in m for m in messages)
    assert not [m for m in messages if KEY in m or HOST_SECRET in m]
    crash = [e for e in events if e.kind.value == "runner.crashed"]
    assert crash and "[redacted]" in crash[0].message
    dumped = json.dumps([e.to_dict() for e in events])
    assert KEY not in dumped
