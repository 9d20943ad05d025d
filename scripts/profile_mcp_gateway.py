"""Profile the stdio MCP gateway: CPU per call in ``plughost serve --mcp-stdio``, by stage.

Run as ``.venv/bin/python scripts/profile_mcp_gateway.py``; it replaces the
"mcp-gateway-profile" section of docs/benchmarks.md.

``plughost serve --mcp-stdio`` runs with only an ``[mcp]`` table naming
server-everything (as in scripts/bench_mcp_gateway.py), started through a small
wrapper that turns cProfile on and off on SIGUSR1 and SIGUSR2, with the
thread's CPU clock as its timer (so waiting for the other processes counts for
nothing). The official MCP client calls ``echo`` through it, one call at a time:
first unprofiled, to read the process's CPU time per call from the kernel, then
profiled. Each stage's share is the cumulative CPU time of the functions that
begin it, less the stages nested in it (``STAGES``); what no stage claims is the
event loop, anyio's streams and the SDK's session loop. The shares are scaled to
the unprofiled CPU per call, so they are estimates: cProfile inflates Python
frames more than compiled ones.

To compare with another revision, run this script there with ``--save FILE``
(``PYTHONPATH`` pointed at that revision's packages), then here with
``--baseline FILE``: the section then shows both columns.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pstats
import signal
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import psutil
from benchlib import ROOT, cpu_seconds, load_line, machine_line, write_section

EVERYTHING = ROOT / ".venv-mcp-servers" / "node" / "node_modules" / ".bin" / "mcp-server-everything"
TOOL = "mcp_everything_echo"

WRAPPER = textwrap.dedent(
    """
    import cProfile, runpy, signal, sys, time
    profile, out = cProfile.Profile(time.thread_time), sys.argv[1]
    signal.signal(signal.SIGUSR1, lambda *_: profile.enable())
    signal.signal(signal.SIGUSR2, lambda *_: (profile.disable(), profile.dump_stats(out)))
    sys.argv = ["plughost", *sys.argv[2:]]
    runpy.run_module("plughost", run_name="__main__")
    """
)

# (stage, functions that begin it as "file:function" fragments, stages nested in it). A
# nested "callee<caller" counts only the callee's time when called straight from the caller:
# the pipes' lines reach the lane from the readers' tasks in one revision, from the pipes'
# protocols in another.
STAGES: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [
    (
        "pipes: read, split into lines",
        ("pipe_lines.py:data_received",),
        (
            "direct_lane.py:take_line<pipe_lines.py:_line",
            "upstream_tap.py:take_line<pipe_lines.py:_line",
        ),
    ),
    (
        "client line: read, parse",
        ("stdio_server.py:_read",),
        ("forwarding.py:take", "direct_lane.py:take_line<stdio_server.py:_read"),
    ),
    ("lane: call routed, request written", ("direct_lane.py:take_line",), ()),
    ("call taken: decision, task start", ("forwarding.py:take",), ()),
    (
        "registry: run_call, routing, argument check",
        ("registry_server.py:run_call",),
        ("mcp/provider.py:invoke",),
    ),
    (
        "MCP provider, connection (timeout, delivery)",
        ("mcp/provider.py:invoke",),
        ("upstream_tap.py:forwarded_call",),
    ),
    ("upstream: request written", ("upstream_tap.py:call",), ()),
    (
        "upstream line: read, parse",
        ("mcp/stdio.py:_read_lines",),
        ("upstream_tap.py:take_line<mcp/stdio.py:_read_lines",),
    ),
    ("lane: answer checked, shaped, written", ("upstream_tap.py:take_line",), ()),
    ("upstream result checked", ("upstream_tap.py:forwarded_call",), ("upstream_tap.py:call",)),
    (
        "answer: shaped, handed on",
        ("forwarding.py:_answer",),
        ("registry_server.py:run_call", "stdio_server.py:send"),
    ),
    ("answer: serialized, written", ("stdio_server.py:send",), ()),
]
REST = "event loop, anyio streams, SDK session loop"


def cumulative(stats: dict[Any, Any], fragments: tuple[str, ...]) -> float:
    total = 0.0
    for fragment in fragments:
        callee, _, caller = fragment.partition("<")
        for (filename, _, function), entry in stats.items():
            if not f"{filename}:{function}".endswith(callee):
                continue
            if not caller:
                total += entry[3]
                continue
            for (by_file, _, by_function), by in entry[4].items():
                if f"{by_file}:{by_function}".endswith(caller):
                    total += by[3]
    return total


def stage_shares(stats: dict[Any, Any]) -> dict[str, float]:
    """Each stage's share of the profiled CPU time, in percent."""
    total = sum(entry[2] for entry in stats.values()) or 1.0
    shares = {
        stage: (cumulative(stats, begins) - cumulative(stats, nested)) / total * 100
        for stage, begins, nested in STAGES
    }
    shares[REST] = 100 - sum(shares.values())
    return shares


def loop_turns(stats: dict[Any, Any], calls: int) -> float:
    return float(sum(entry[1] for key, entry in stats.items() if key[2] == "_run_once")) / calls


async def measure(calls: int, work: Path) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters

    config = work / "up.toml"
    config.write_text(
        f"[host]\ndata_dir = {json.dumps(str(work / 'data'))}\n"
        f'[mcp.servers.everything]\ncommand = "node"\nargs = [{json.dumps(str(EVERYTHING))}]\n'
    )
    wrapper, stats_file = work / "profiled_serve.py", work / "serve.prof"
    wrapper.write_text(WRAPPER, encoding="utf-8")
    serve = ["serve", "--no-watch", "--config", str(config), "--mcp-stdio"]
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(wrapper), str(stats_file), *serve],
        env=dict(os.environ),
    )
    async with Client(params, mode="legacy", cache=None) as client:

        async def run(n: int) -> None:
            for _ in range(n):
                result = await client.call_tool(TOOL, {"message": "hello"})
                if result.is_error:
                    raise SystemExit(f"{TOOL} failed: {result}")

        await run(200)
        process = next(c for c in psutil.Process().children() if "--mcp-stdio" in c.cmdline())
        before, started = cpu_seconds(process), time.perf_counter()
        await run(calls)
        cpu = (cpu_seconds(process) - before) / calls
        wall = (time.perf_counter() - started) / calls
        process.send_signal(signal.SIGUSR1)
        await run(calls)
        process.send_signal(signal.SIGUSR2)
        deadline = time.monotonic() + 30
        while not stats_file.exists() or stats_file.stat().st_size == 0:
            if time.monotonic() > deadline:
                raise SystemExit("the profiled serve process wrote no profile")
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # the dump is written in one go; let it finish
    stats: dict[Any, Any] = pstats.Stats(str(stats_file)).stats  # type: ignore[attr-defined]
    return {
        "cpu_ms": cpu * 1000,
        "wall_ms": wall * 1000,
        "turns": loop_turns(stats, calls),
        "shares": stage_shares(stats),
    }


def table(now: dict[str, Any], before: dict[str, Any] | None) -> list[str]:
    runs = [before, now] if before else [now]
    heads = ["before", "after"] if before else ["now"]
    lines = [f"| measure | {' | '.join(heads)} |", "|---|" + "---|" * len(heads)]
    cells = [f"{run['cpu_ms']:.2f} ms" for run in runs]
    lines.append(f"| CPU per call, plughost's process | {' | '.join(cells)} |")
    cells = [f"{run['wall_ms']:.2f} ms" for run in runs]
    lines.append(f"| wall-clock per call, one at a time | {' | '.join(cells)} |")
    cells = [f"{run['turns']:.1f}" for run in runs]
    lines.append(f"| event-loop iterations per call | {' | '.join(cells)} |")
    for stage in [*(s for s, _, _ in STAGES), REST]:
        cells = [
            f"{run['shares'].get(stage, 0.0):.0f} % "
            f"(~{run['shares'].get(stage, 0.0) / 100 * run['cpu_ms'] * 1000:.0f} µs)"
            for run in runs
        ]
        lines.append(f"| {stage} | {' | '.join(cells)} |")
    return lines


def section(now: dict[str, Any], before: dict[str, Any] | None, command: str) -> str:
    """The benchmarks.md section: how the figures were taken, then the table."""
    calls = now.get("calls", 0)
    return "\n".join(
        [
            "## The stdio MCP gateway, profiled",
            "",
            f"Command: `{command}`\n\n{machine_line()}\n\n{load_line()}\n",
            f"{calls:,} calls of server-everything's `echo` through `plughost serve",
            "--mcp-stdio` (only an `[mcp]` table), one at a time, unprofiled for the CPU time",
            "the kernel reports for plughost's process, then again under cProfile (the",
            "thread's CPU clock) for the shares: each stage is the cumulative time of the",
            "functions that begin it less the stages nested in it (`STAGES` in the script),",
            "and the µs are its share of the unprofiled CPU per call, an estimate, since",
            "cProfile inflates Python frames more than compiled ones. What no stage claims",
            "is the event loop, anyio's streams and the SDK's session loop.",
            "",
            *table(now, before),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--save", type=Path, help="write the figures to this JSON file")
    parser.add_argument("--baseline", type=Path, help="a --save file from another revision")
    parser.add_argument("--no-write", action="store_true", help="do not touch benchmarks.md")
    args = parser.parse_args()
    if not EVERYTHING.exists():
        raise SystemExit("run scripts/install_test_mcp_servers.sh first (server-everything)")
    with tempfile.TemporaryDirectory() as work:
        now = {"calls": args.calls, **asyncio.run(measure(args.calls, Path(work)))}
    if args.save:
        args.save.write_text(json.dumps(now, indent=1), encoding="utf-8")
    before = json.loads(args.baseline.read_text(encoding="utf-8")) if args.baseline else None
    command = " ".join(
        [".venv/bin/python scripts/profile_mcp_gateway.py", f"--calls {args.calls}"]
        + ([f"--baseline {args.baseline}"] if args.baseline else [])
    )
    text = section(now, before, command)
    print(text)
    if not args.no_write:
        write_section("mcp-gateway-profile", text)


if __name__ == "__main__":
    main()
