"""A plugin's config and command patterns cost the host a bounded amount and hide none of its words.

Real runners and a real host with the default configuration. Loop stalls are
measured as the longest gap of a 5 ms ticker on the host's loop, against a
quiet baseline taken in the same test.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from plughost.events import EventKind, LifecycleEvent
from plughost.host import PluginHost
from tests.conftest import TEST_PLUGINS, HostFactory
from tests.fault_injection import copy_plugin

SECRETS = TEST_PLUGINS / "secret_config"
COMMANDS = TEST_PLUGINS / "hostile_command"
REAL_KEY = "sk-attacker-Zq81x7Lp"
HOST_SECRET = "host-secret-value-42"
WORDS = ["tests.neighbour", "tests.attacker", "failed", "runner", "plugin", "community"]


class LoopWatch:
    """The longest the host's loop went without running a 5 ms ticker, while watched."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._last = 0.0

    @contextlib.asynccontextmanager
    async def watching(self) -> AsyncIterator[None]:
        async def tick() -> None:
            while True:
                await asyncio.sleep(0.005)
                now = time.perf_counter()
                self.longest = max(self.longest, now - self._last)
                self._last = now

        self._last = time.perf_counter()
        ticker = asyncio.create_task(tick())
        try:
            yield
        finally:
            # A block that never let the ticker run stalled the loop all along.
            self.longest = max(self.longest, time.perf_counter() - self._last)
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker


def _plugin(tmp_path: Path, plugin_id: str, config: str) -> Path:
    folder = copy_plugin(SECRETS, tmp_path / "plugins" / plugin_id, plugin_id)
    (folder / "config.toml").write_text(config, encoding="utf-8")
    return folder


def _toml(values: dict[str, str]) -> str:
    return "".join(f"{key} = {json.dumps(value)}\n" for key, value in values.items())


async def _start_and_say(
    make_host: HostFactory, folder: Path, text: str
) -> tuple[float, list[str]]:
    """Start a host over ``folder``, have the plugin say ``text``; the longest stall, the log."""
    watch = LoopWatch()
    said: list[str] = []
    async with watch.watching(), make_host([folder]) as host:
        result = await host.invoke("say", {"text": text})
        said.append(result.content or result.error_message)
    return watch.longest, said


async def test_hundreds_of_secret_looking_config_values_load_without_stalling_the_loop(
    make_host: HostFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    count = 750
    quiet = _plugin(
        tmp_path, "tests.quiet", _toml({f"name_{i}": f"v-{i:04d}-Qx8z" for i in range(count)})
    )
    hostile = _plugin(
        tmp_path,
        "tests.hoarder",
        _toml({f"api_key_{i}": f"s3cr3t-{i:04d}-Qx8z" for i in range(count)}),
    )

    baseline, _ = await _start_and_say(make_host, quiet, "v-0001-Qx8z")
    stalled, said = await _start_and_say(make_host, hostile, "key s3cr3t-0001-Qx8z here")

    # Learning them one by one recompiled a regex each time: 6 to 11 s of stalled loop.
    assert stalled < 5 * baseline, f"{stalled:.3f} s stalled, {baseline:.3f} s quiet"
    assert said == ["said"]
    lines = [r.getMessage() for r in caplog.records if r.name == "plughost.plugin.tests.hoarder"]
    assert "said: key [redacted] here" in lines
    bounded = [
        r.getMessage() for r in caplog.records if "more secret-looking values" in r.getMessage()
    ]
    assert bounded and bounded[0].startswith("plugin tests.hoarder: config.toml has")
    assert bounded[0].endswith("are not masked in its output")


async def _call(host: PluginHost, plugin_id: str, tool: str, text: str) -> str:
    """Call ``plugin_id``'s own ``tool`` (its neighbour, a copy, has one of the same name)."""
    runner = host.runner_for(plugin_id)
    assert runner is not None, f"{plugin_id} has no runner"
    result = await runner.invoke(plugin_id, tool, {"text": text}, 10.0)
    return str(result.content or result.error_message)


async def _said(
    host: PluginHost, plugin_id: str, text: str, caplog: pytest.LogCaptureFixture
) -> list[str]:
    """What ``plugin_id`` logged (records, prints) once it said ``text``."""
    assert await _call(host, plugin_id, "say", text) == "said"
    logger = f"plughost.plugin.{plugin_id}"
    return [r.getMessage() for r in caplog.records if r.name == logger]


async def test_a_plugins_secrets_equal_to_host_words_mask_none_of_them_and_not_its_neighbour(
    make_host: HostFactory,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("UPSTREAM_API_TOKEN", HOST_SECRET)
    attacker = _plugin(
        tmp_path,
        "tests.attacker",
        _toml(
            {
                "api_key": "tests.neighbour",
                "token": "tests.attacker",
                "secret": "failed",
                "auth": "runner",
                "password": "plugin",
                "session_key": "community",
                "cookie": "runner.crashed",
                "real_key": REAL_KEY,
            }
        ),
    )
    neighbour = _plugin(tmp_path, "tests.neighbour", "")
    text = " ".join([*WORDS, REAL_KEY, HOST_SECRET])
    events: list[LifecycleEvent] = []

    async with make_host([attacker, neighbour]) as host:
        host.events.add_callback(events.append)
        own = await _said(host, "tests.attacker", text, caplog)
        theirs = await _said(host, "tests.neighbour", text, caplog)
        crashed = asyncio.ensure_future(
            host.events.wait_for(
                lambda e: e.kind is EventKind.RUNNER_CRASHED and e.plugin_id == "tests.attacker",
                timeout=15,
            )
        )
        await _call(host, "tests.attacker", "die", text)
        crash = await crashed

    words = " ".join(WORDS)
    assert f"said: {words} [redacted] [redacted]" in own
    assert f"said: {words} {REAL_KEY} [redacted]" in theirs
    assert crash.message.startswith("runner runner-tests-attacker crashed: exited with code 3")
    assert f"dying: {words} [redacted] [redacted]" in crash.message
    assert crash.details["reason"] == crash.message.removeprefix(
        "runner runner-tests-attacker crashed: "
    )
    refused = [r.getMessage() for r in caplog.records if "not masked" in r.getMessage()]
    assert any(
        m.startswith("plugin tests.attacker: the config.toml values under api_key, token, ")
        and "host's own words" in m
        for m in refused
    )
    assert any("too plain to be a secret" in m for m in refused)
    assert not [
        e for e in events if "[redacted]" in e.kind.value or "[redacted]" in (e.plugin_id or "")
    ]


async def test_a_load_failure_masks_the_plugins_secret_and_none_of_the_hosts_words(
    make_host: HostFactory, tmp_path: Path
) -> None:
    folder = _plugin(tmp_path, "tests.attacker", _toml({"fail_token": REAL_KEY, "auth": "failed"}))

    async with make_host([folder]) as host:
        (row,) = [r for r in host.status() if r.plugin_id == "tests.attacker"]
        (event,) = [e for e in host.events.history() if e.kind is EventKind.PLUGIN_FAILED]

    assert row.state == "failed"
    assert "plugin runner failed to log in with [redacted]" in row.error
    assert event.plugin_id == "tests.attacker"
    assert event.message.startswith("plugin tests.attacker (")
    assert "plugin runner failed to log in with [redacted]" in event.message
    assert REAL_KEY not in json.dumps(event.to_dict())


def _commands(tmp_path: Path, patterns: list[str]) -> list[Path]:
    folders = []
    for i, pattern in enumerate(patterns):
        plugin_id = f"tests.hostile_command_{i}"
        folder = copy_plugin(COMMANDS, tmp_path / "plugins" / plugin_id, plugin_id)
        (folder / "pattern.txt").write_text(pattern, encoding="utf-8")
        folders.append(folder)
    return folders


async def _least_stall(rounds: int, send: Callable[[], Awaitable[object]]) -> float:
    """The smallest, over ``rounds``, of the longest stall while ``send`` runs (spikes drop out)."""
    stalls = []
    for _ in range(rounds):
        watch = LoopWatch()
        async with watch.watching():
            await send()
        stalls.append(watch.longest)
    return min(stalls)


BACKTRACKING = [r"^(a+)+$", r"^(a|a)*$", r"^(a|aa)+$", r"^(\w+\s?)*$", r"^(.*a){12}$"]


async def test_backtracking_command_patterns_are_matched_without_stalling_the_loop(
    make_host: HostFactory, tmp_path: Path
) -> None:
    attack = "a" * 26 + "!"  # Python's re: 1.7 s for the first pattern, 4x per extra "a"
    async with make_host(_commands(tmp_path, BACKTRACKING)) as host:
        quiet = await _least_stall(3, lambda: host.dispatch_command("hello there"))
        stalled = await _least_stall(3, lambda: host.dispatch_command(attack))
        longer = await _least_stall(3, lambda: host.dispatch_command("a" * 4000 + "!"))
        matched = await host.dispatch_command("aaaa")
        pong = await host.dispatch_command("/ping 麦麦")
        missed = await host.dispatch_command(attack)
        refused = [e for e in host.events.history() if e.kind is EventKind.COMMAND_REFUSED]

    assert stalled < 5 * quiet and longer < 5 * quiet, (quiet, stalled, longer)
    assert (matched.command, matched.response) == (
        "tests.hostile_command_0.greedy",
        "greedy matched []",
    )
    assert (pong.command, pong.response) == ("tests.hostile_command_0.ping", "pong 麦麦")
    assert not missed.handled
    assert refused == []


UNMATCHABLE = {
    "backreference": r"^(a+)\1$",
    "named backreference": r"^(?P<x>a+)(?P=x)$",
    "lookahead": r"^/greedy(?=\s)",
    "negative lookahead": r"^/greedy(?!x)",
    "lookbehind": r"(?<=/)greedy",
    "atomic group": r"^(?>a+)$",
    "possessive quantifier": r"^a++$",
    "conditional": r"^(a)?(?(1)b|c)$",
    "too large": r"^/greedy (?P<x>\w{40})$",
    "too long": "^/greedy " + "x" * 1100,
}


async def test_command_patterns_re2_cannot_match_are_refused_naming_plugin_command_and_fix(
    make_host: HostFactory, tmp_path: Path
) -> None:
    patterns = list(UNMATCHABLE.values())
    async with make_host(_commands(tmp_path, patterns)) as host:
        refused = {
            e.plugin_id: e for e in host.events.history() if e.kind is EventKind.COMMAND_REFUSED
        }
        quiet = await _least_stall(3, lambda: host.dispatch_command("hello there"))
        stalled = await _least_stall(3, lambda: host.dispatch_command("a" * 26 + "!"))
        attempts = [await host.dispatch_command(t) for t in ("aaaa", "/greedy x", "/greedy  ab")]
        pong = await host.dispatch_command("/ping bob")
        loaded = {row.plugin_id for row in host.status() if row.state != "failed"}

    assert sorted(refused) == [f"tests.hostile_command_{i}" for i in range(len(patterns))]
    for i, (_, event) in enumerate(sorted(refused.items())):
        assert event.message.startswith(
            f"plugin tests.hostile_command_{i}: command greedy never runs"
        )
        assert "rewrite the pattern without them, or give the command aliases" in event.message
        assert event.details["command"] == "greedy"
    assert not [a for a in attempts if a.handled]
    assert (pong.command, pong.response) == ("tests.hostile_command_0.ping", "pong bob")
    assert loaded == set(refused)  # each plugin keeps its other command
    assert stalled < 5 * quiet, (quiet, stalled)


async def test_a_plugin_whose_patterns_are_too_heavy_together_fails_at_load(
    make_host: HostFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    heavy = r"^/greedy (?P<x>\w{10})$"  # about 13,500 RE2 instructions: five are too many
    (folder,) = _commands(tmp_path, ["\n".join([heavy] * 5)])
    caplog.set_level(logging.INFO)
    async with make_host([folder]) as host:
        (row,) = [r for r in host.status() if r.plugin_id == "tests.hostile_command_0"]
        pong = await host.dispatch_command("/ping bob")

    assert row.state == "failed" and "declare" in row.error
    assert "RE2 instructions" in row.error
    assert not pong.handled
