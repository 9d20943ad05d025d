"""Benchmark hot reload: from a file save to the first call answered by the new version.

A plugin whose one tool answers with its version is watched (``host.watch()``)
while clients call it continuously. Each round saves a new version of
``plugin.py`` and times, from the moment the save returns, until a client
first gets an answer from the new version; the next round starts once the
reload has finished (old runner drained and stopped). Every call of the run
is checked: a failed call is counted, whatever its cause.

The stages come from the host's lifecycle events: save -> reload started (the
watcher noticed), -> new runner spawned, -> new runner ready, -> first call
answered by it.

It writes the section ``reload`` of docs/benchmarks.md.

Two load levels are measured, each with its own host: a paced load (each
client pauses between calls) and a saturating one (back to back, which on a
small machine leaves the new runner little CPU to start with).

Usage: .venv/bin/python scripts/bench_reload.py [--reloads N] [--clients N] [--pause-ms MS]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

import benchlib

from plughost.events import EventKind, LifecycleEvent
from plughost.host import PluginHost
from plughost.settings import HostSettings

PLUGIN_ID = "bench.versioned"
TARGET_P50_MS = 300.0
TARGET_FAILED = 0

MANIFEST = {
    "manifest_version": 2,
    "id": PLUGIN_ID,
    "version": "1.0.0",
    "name": "versioned",
    "description": "answers with its version",
    "author": {"name": "plughost benchmarks"},
    "license": "MIT",
}


def plugin_source(version: str) -> str:
    return textwrap.dedent(
        f"""
        from typing import Any

        from plughost_sdk import Plugin, Tool

        VERSION = {version!r}


        class Versioned(Plugin):
            @Tool("version", brief_description="Which version answers", read_only=True)
            async def version(self, **kwargs: Any) -> dict[str, Any]:
                return {{"content": VERSION}}


        def create_plugin() -> Versioned:
            return Versioned()
        """
    )


@dataclass
class Round:
    """Timestamps (perf_counter seconds) of one reload."""

    version: str
    saved: float
    marks: dict[str, float] = field(default_factory=dict)
    answered: asyncio.Event = field(default_factory=asyncio.Event)

    def ms(self, start: str, end: str) -> float:
        return (self.marks[end] - (self.saved if start == "saved" else self.marks[start])) * 1000


@dataclass
class Load:
    """Clients calling the tool back to back, recording what answered."""

    host: PluginHost
    pause: float
    calls: int = 0
    failures: collections.Counter[str] = field(default_factory=collections.Counter)
    current: Round | None = None
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def client(self) -> None:
        while not self.stop.is_set():
            result = await self.host.invoke("version", {})
            self.calls += 1
            if not result.success:
                self.failures[f"{result.error_code}: {result.error_message[:80]}"] += 1
            now = time.perf_counter()
            current = self.current
            fresh = current is not None and result.content == current.version
            if current is not None and fresh and "answered" not in current.marks:
                current.marks["answered"] = now
                current.answered.set()
            if self.pause:
                await asyncio.sleep(self.pause)  # pacing the load, not waiting for state


class StageClock:
    """Stamps the current round when the host reports each reload stage."""

    def __init__(self) -> None:
        self.current: Round | None = None
        self.candidate: str | None = None

    def __call__(self, event: LifecycleEvent) -> None:
        current, now = self.current, time.perf_counter()
        if current is None:
            return
        if event.kind is EventKind.RELOAD_STARTED and event.plugin_id == PLUGIN_ID:
            current.marks.setdefault("started", now)
        elif event.kind is EventKind.RUNNER_SPAWNED and "started" in current.marks:
            self.candidate = event.runner_id
            current.marks.setdefault("spawned", now)
        elif event.kind is EventKind.RUNNER_READY and event.runner_id == self.candidate:
            current.marks.setdefault("ready", now)
        elif event.kind is EventKind.PLUGIN_LOADED and "ready" in current.marks:
            current.marks.setdefault("adopted", now)
        elif event.kind is EventKind.RELOAD_SUCCEEDED and event.plugin_id == PLUGIN_ID:
            current.marks.setdefault("succeeded", now)
        elif event.kind is EventKind.RELOAD_FAILED and event.plugin_id == PLUGIN_ID:
            current.marks.setdefault("failed", now)


async def watch_is_live(host: PluginHost, root: Path) -> None:
    """Touch a probe file until the watcher reports it: saves from then on are seen."""
    probe = root / ".plughost-probe"
    await asyncio.sleep(0)  # one yield: the watch task's first step creates its watcher
    watcher = host.watcher
    if watcher is None:
        raise RuntimeError("host.watch() did not create its watcher")
    async with asyncio.timeout(30):
        for n in range(100_000):
            probe.write_text(str(n))
            try:
                async with asyncio.timeout(0.2):
                    await watcher.active.wait()
                return
            except TimeoutError:
                continue


async def one_reload(host: PluginHost, folder: Path, round_: Round, load: Load) -> None:
    """Save the new version, then wait until it answered and the reload finished."""
    succeeded = asyncio.ensure_future(
        host.events.wait_for(
            lambda e: (
                e.kind in (EventKind.RELOAD_SUCCEEDED, EventKind.RELOAD_FAILED)
                and e.plugin_id == PLUGIN_ID
            ),
            timeout=60,
        )
    )
    load.current = round_
    (folder / "plugin.py").write_text(plugin_source(round_.version))
    round_.saved = time.perf_counter()
    try:
        event = await succeeded
        if event.kind is EventKind.RELOAD_FAILED:
            raise RuntimeError(f"reload to {round_.version} failed: {event.message}")
        async with asyncio.timeout(30):
            await round_.answered.wait()
    finally:
        succeeded.cancel()


@dataclass
class Phase:
    """One load level and the reloads timed under it."""

    name: str
    pause_ms: float
    rounds: list[Round] = field(default_factory=list)
    load: Load | None = None
    seconds: float = 0.0

    def describe(self, clients: int) -> str:
        pacing = f", {self.pause_ms:g} ms pause" if self.pause_ms else " back to back"
        rate = self.load.calls / self.seconds if self.load and self.seconds else 0.0
        return f"{self.name}: {clients} clients{pacing}, ≈{rate:,.0f} calls/s"


async def run_phase(phase: Phase, args: argparse.Namespace) -> None:
    """Start a host over a fresh plugin folder and time ``args.reloads`` reloads under load."""
    with tempfile.TemporaryDirectory(prefix="plughost-bench-reload-") as tmp:
        root = Path(tmp)
        folder = root / "plugins" / "versioned"
        folder.mkdir(parents=True)
        (folder / "_manifest.json").write_text(json.dumps(MANIFEST))
        (folder / "plugin.py").write_text(plugin_source("v0"))
        settings = HostSettings(data_dir=root / "data", temp_dir=root / "temp")
        async with PluginHost([root / "plugins"], settings=settings) as host:
            clock = StageClock()
            host.events.add_callback(clock)
            load = phase.load = Load(host, phase.pause_ms / 1000)
            async with asyncio.TaskGroup() as group:
                watch = group.create_task(host.watch())
                await watch_is_live(host, root / "plugins")
                started = time.perf_counter()
                clients = [group.create_task(load.client()) for _ in range(args.clients)]
                for n in range(1, args.reloads + 1):
                    round_ = Round(version=f"v{n}", saved=0.0)
                    clock.current = round_
                    await one_reload(host, folder, round_, load)
                    phase.rounds.append(round_)
                load.stop.set()
                await asyncio.gather(*clients)
                phase.seconds = time.perf_counter() - started
                watch.cancel()


STAGES = [
    ("save → reload started (the watcher noticed)", "saved", "started"),
    ("reload started → new runner spawned", "started", "spawned"),
    ("new runner spawned → ready", "spawned", "ready"),
    ("ready → serving (the tools swapped over)", "ready", "adopted"),
    ("serving → first call answered by it", "adopted", "answered"),
]


def cell(phase: Phase, start: str, end: str) -> str:
    values = [r.ms(start, end) for r in phase.rounds]
    return f"{benchlib.median(values):.0f} / {benchlib.percentile(values, 99):.0f} ms"


def verdicts(phase: Phase) -> list[str]:
    p50 = benchlib.median([r.ms("saved", "answered") for r in phase.rounds])
    failed = sum(phase.load.failures.values()) if phase.load else 0
    over = f"**missed**: {p50 - TARGET_P50_MS:.0f} ms over ({p50 / TARGET_P50_MS:.2f}×)"
    failures = "; ".join(
        f"{n} × {what}" for what, n in (phase.load.failures if phase.load else {}).items()
    )
    return [
        f"| save → first new answer p50 ≤ {TARGET_P50_MS:.0f} ms ({phase.name}) | {p50:.0f} ms | "
        + ("met" if p50 <= TARGET_P50_MS else over)
        + " |",
        f"| failed calls = {TARGET_FAILED} ({phase.name}) | {failed} of "
        f"{phase.load.calls if phase.load else 0:,} | "
        + ("met" if failed == TARGET_FAILED else f"**missed**: {failed} failed ({failures})")
        + " |",
    ]


def report(phases: list[Phase], args: argparse.Namespace, command: str) -> str:
    header = " | ".join(phase.describe(args.clients) for phase in phases)
    rows = [
        "| **save → first call answered by the new version** | "
        + " | ".join(f"**{cell(phase, 'saved', 'answered')}**" for phase in phases)
        + " |",
        *(
            f"| {label} | " + " | ".join(cell(phase, a, b) for phase in phases) + " |"
            for label, a, b in STAGES
        ),
    ]
    lines = [
        "## Hot reload",
        "",
        f"Command: `{command}`",
        "",
        benchlib.machine_line(),
        "",
        f"{args.reloads} reloads per load level of a one-tool plugin, each a save of "
        "`plugin.py` in a folder watched by `host.watch()`, while clients call the tool "
        "continuously; the next save waits until the reload finished (old runner drained and "
        "stopped). Stages come from the host's lifecycle events. p50 / p99:",
        "",
        f"| stage | {header} |",
        "|---|" + "---|" * len(phases),
        *rows,
        "",
        "| target | measured | result |",
        "|---|---|---|",
        *(line for phase in phases for line in verdicts(phase)),
        "",
        *notes(phases),
    ]
    return "\n".join(lines)


def notes(phases: list[Phase]) -> list[str]:
    """Where the time goes, from this run's stages."""

    def p50(phase: Phase, start: str, end: str) -> float:
        return benchlib.median([r.ms(start, end) for r in phase.rounds])

    lines = [
        f"- The watcher reports a change once no file event came for `step_ms` (50 ms by "
        f"default in `host.watch()`): {p50(phases[0], 'saved', 'started'):.0f} ms here.",
        "- Spawn to ready is the new runner's fork from the fork server, its handshake and "
        "the plugin's import and `on_load`: "
        + ", ".join(
            f"{p50(phase, 'spawned', 'ready'):.0f} ms under {phase.name}" for phase in phases
        )
        + "; a load that keeps both cores busy slows it down.",
    ]
    return ["Where the time goes:", "", *lines]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reloads", type=int, default=25, help="reloads to time (at least 20)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent calling clients")
    parser.add_argument(
        "--pause-ms", type=float, default=2.0, help="pause between calls in the paced phase"
    )
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    phases = [Phase("paced load", args.pause_ms), Phase("saturating load", 0.0)]
    for phase in phases:
        asyncio.run(run_phase(phase, args))
    command = " ".join([".venv/bin/python scripts/bench_reload.py", *sys.argv[1:]])
    markdown = report(phases, args, command)
    print(markdown)
    if not args.no_write:
        benchlib.write_section("reload", markdown)


if __name__ == "__main__":
    main()
