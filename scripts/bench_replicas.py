"""Benchmark local replicas on a CPU-bound tool: 1 runner vs 2 (``plugin_replicas``).

A pure-Python tool (a loop that holds the GIL for about 40 ms) cannot use a
second core inside one runner; with two replicas the pool spreads the calls
over two processes. Both configurations are measured in interleaved rounds (so
noise from other work on the machine hits both alike) with 8 calls in flight,
and the throughput ratio is reported. On a 2-core machine the ceiling is 2x.

It writes the section ``replicas`` of docs/benchmarks.md.

Usage: .venv/bin/python scripts/bench_replicas.py [--rounds N] [--calls N] [--no-write]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import textwrap
import time
from pathlib import Path

import benchlib
import psutil

from plughost.host import PluginHost
from plughost.settings import HostSettings

PLUGIN_ID = "bench.cpu"
INFLIGHT = 8
WORK = 400_000  # loop iterations per call: about 40 ms of one core

PLUGIN = """
from typing import Any
from plughost_sdk import Plugin, Tool
from plughost_sdk.types import ToolParameterInfo, ToolParamType

class Cpu(Plugin):
    @Tool(
        "spin",
        brief_description="Burn CPU in pure Python",
        parameters=[ToolParameterInfo(name="n", param_type=ToolParamType.INTEGER)],
    )
    def spin(self, n: int, **kwargs: Any) -> str:
        total = 0
        for i in range(n):
            total += i * i % 7
        return str(total)

def create_plugin() -> Cpu:
    return Cpu()
"""


def write_plugin(root: Path) -> None:
    folder = root / "cpu"
    folder.mkdir(parents=True)
    manifest = {
        "manifest_version": 2,
        "id": PLUGIN_ID,
        "version": "1.0.0",
        "name": "cpu",
        "description": "a CPU-bound tool",
        "author": {"name": "bench"},
        "license": "MIT",
    }
    (folder / "_manifest.json").write_text(json.dumps(manifest))
    (folder / "plugin.py").write_text(textwrap.dedent(PLUGIN))


def runner_cpu(host: PluginHost) -> float:
    """CPU seconds (user + system) the host's runner processes, with their trees, have used."""
    return sum(
        benchlib.cpu_seconds(psutil.Process(runner.pid), tree=True)
        for runner in host.runners()
        if runner.pid is not None
    )


async def throughput(host: PluginHost, calls: int) -> tuple[float, float]:
    """Calls per second and cores the runners kept busy, INFLIGHT calls in flight."""
    queue = iter(range(calls))
    cpu = runner_cpu(host)

    async def client() -> None:
        for _ in queue:
            result = await host.invoke("spin", {"n": WORK}, trusted=True)
            if not result.success:
                raise RuntimeError(result.error_message)

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(INFLIGHT)))
    elapsed = time.perf_counter() - started
    return calls / elapsed, (runner_cpu(host) - cpu) / elapsed


Figures = dict[int, list[tuple[float, float]]]


async def measure(rounds: int, calls: int, work: Path) -> Figures:
    root = work / "plugins"
    write_plugin(root)
    figures: Figures = {1: [], 2: []}
    hosts: dict[int, PluginHost] = {}
    try:
        for replicas in (1, 2):
            settings = HostSettings(
                data_dir=work / f"data{replicas}",
                temp_dir=work / f"temp{replicas}",
                plugin_replicas={PLUGIN_ID: replicas},
            )
            host = hosts[replicas] = PluginHost([root], settings=settings)
            await host.start()
            await throughput(host, INFLIGHT)  # warm up
        for _ in range(rounds):
            for replicas in (1, 2):
                figures[replicas].append(await throughput(hosts[replicas], calls))
    finally:
        for host in hosts.values():
            await host.aclose()
    return figures


def report(figures: Figures, rounds: int, calls: int) -> str:
    rate = {n: benchlib.median([r for r, _ in figures[n]]) for n in figures}
    cores = {n: benchlib.median([c for _, c in figures[n]]) for n in figures}
    rows = [
        f"| `plugin_replicas = {n}` | {rate[n]:.1f} | {cores[n]:.2f} | "
        + ", ".join(f"{r:.1f}" for r, _ in figures[n])
        + " |"
        for n in (1, 2)
    ]
    one, two = rate[1], rate[2]
    return "\n".join(
        [
            "## Replicas: a CPU-bound tool on 1 vs 2 runners",
            "",
            "Command: `.venv/bin/python scripts/bench_replicas.py`",
            "",
            benchlib.machine_line(),
            "",
            f"A pure-Python tool that holds the GIL for about 40 ms a call, {calls} calls with "
            f"{INFLIGHT} in flight, {rounds} interleaved rounds per configuration (median):",
            "",
            "| configuration | calls/s (median) | cores busy in runners (median) | calls/s, "
            "every round |",
            "|---|---|---|---|",
            *rows,
            "",
            f"Two replicas answer **{two / one:.2f}x** the calls of one. One runner is one "
            "interpreter, so a CPU-bound tool keeps at most one core busy whatever the load; the "
            "pool puts each call on the member with the fewest calls in flight, so two members "
            f'can keep both cores of this {os.cpu_count()}-CPU machine busy. "Cores busy" is '
            "the runners' CPU time over the wall time: where it stays well under the number of "
            "replicas, other work on the machine had the cores, and the ratio says as much about "
            "the machine as about plughost.",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=48)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-replicas-") as work:
        figures = asyncio.run(measure(args.rounds, args.calls, Path(work)))
    markdown = report(figures, args.rounds, args.calls)
    print(markdown)
    if not args.no_write:
        benchlib.write_section("replicas", markdown)


if __name__ == "__main__":
    main()
