"""Repeat the runner benchmark's two call-path ratios many times in one run: their spread.

scripts/bench_runner.py measures each figure once per run. On a shared virtual
machine the raw round trip it compares against moves by a third from one
minute to the next, so one run's per-call ratio can land anywhere in a wide
band. This script keeps one host (four copies of the echo test plugin), the
four raw peers and the MCP peer up, and repeats bench_runner's own latency
phase (interleaved blocks of 50 trivial calls, raw and host swapping places)
and its throughput phase (1, 16 and 256 in flight, alternating windows) ``--reps``
times. Each repetition gives both ratios against the raw peers measured in it;
the targets are judged on their median, and every repetition is listed.

It writes the section ``call-ratio`` of docs/benchmarks.md.

Usage: .venv/bin/python scripts/bench_call_ratio.py [--reps N] [--blocks N] [--windows N]
       [--seconds S] [--no-write]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import bench_runner as runner
import benchlib
import zmq.asyncio
from mcp import Client, StdioServerParameters

from plughost.host import PluginHost
from plughost.settings import HostSettings


@dataclass(frozen=True)
class Rep:
    """One repetition: p50 per call (seconds) and calls/s at 256 in flight, both contenders."""

    host_p50: float
    raw_p50: float
    host_256: float
    raw_256: float

    @property
    def overhead(self) -> float:
        return self.host_p50 / self.raw_p50

    @property
    def throughput(self) -> float:
        return self.host_256 / self.raw_256


async def measure(reps: int, blocks: int, windows: int, seconds: float) -> list[Rep]:
    """Run the latency and throughput phases ``reps`` times against one set of peers."""
    with tempfile.TemporaryDirectory(prefix="plughost-ratio-") as tmp:
        root = Path(tmp)
        runner.make_plugins(root / "plugins")
        settings = HostSettings(data_dir=root / "data", temp_dir=root / "temp")
        context = zmq.asyncio.Context()
        peers = [runner.RawPeer(context, f"ipc://{root}/raw{i}.sock") for i in range(runner.COPIES)]
        mcp_params = StdioServerParameters(command=sys.executable, args=[str(runner.MCP_PEER)])
        found: list[Rep] = []
        try:
            await asyncio.gather(*(peer.start() for peer in peers))
            async with (
                PluginHost([root / "plugins"], settings=settings) as host,
                Client(mcp_params, cache=None) as mcp,
            ):
                names = [runner.model_names(host, f"bench.echo{i}") for i in range(runner.COPIES)]
                bench = runner.Bench(host, names, peers, mcp)
                await runner.warm_up(bench)
                for index in range(reps):
                    bench.samples, bench.throughput = runner.Samples(), {}
                    await runner.latency_phase(bench, blocks)
                    await runner.throughput_phase(bench, windows, seconds)
                    s, tp = bench.samples, bench.throughput
                    rep = Rep(s.p50("host echo"), s.p50("raw echo"), tp["host 256"], tp["raw 256"])
                    found.append(rep)
                    print(
                        f"rep {index + 1}/{reps}: per call {rep.overhead:.2f}×, "
                        f"256 in flight {rep.throughput:.2f}×",
                        file=sys.stderr,
                    )
        finally:
            await asyncio.gather(*(peer.stop() for peer in peers), return_exceptions=True)
            context.term()
    return found


def report(reps: list[Rep], args: argparse.Namespace, command: str) -> str:
    overhead = benchlib.median([rep.overhead for rep in reps])
    throughput = benchlib.median([rep.throughput for rep in reps])
    under = sum(rep.overhead <= runner.TARGET_OVERHEAD for rep in reps)
    over = sum(rep.throughput >= runner.TARGET_THROUGHPUT_RATIO for rep in reps)
    rows = [
        f"| {index} | {runner.duration(rep.host_p50)} | {runner.duration(rep.raw_p50)} "
        f"| {rep.overhead:.2f}× | {rep.host_256:,.0f} | {rep.raw_256:,.0f} "
        f"| {rep.throughput:.2f}× |"
        for index, rep in enumerate(reps, start=1)
    ]
    lines = [
        "## Call-path ratios, repeated",
        "",
        f"Command: `{command}`",
        "",
        benchlib.machine_line(),
        "",
        benchlib.load_line(),
        "",
        "One host and the same raw peers throughout; each repetition is bench_runner's "
        f"latency phase ({args.blocks} interleaved blocks of 50 trivial calls per contender) "
        f"and its throughput phase ({args.windows} alternating windows of {args.seconds:g} s "
        "per contender and level), and gives both ratios against the raw peers measured in it. "
        "A run of scripts/bench_runner.py (the section above) is one draw from this spread: "
        "on this kind of machine the raw round trip itself moves by a third between minutes. "
        "The load average above counts this script's own throughput windows, which keep both "
        "cores busy.",
        "",
        "| rep | plughost p50 | raw p50 | per call | plughost calls/s, 256 in flight "
        "| raw calls/s | 256 in flight |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        "| target | median of the repetitions | repetitions that meet it | result |",
        "|---|---|---|---|",
        f"| per-call p50 ≤ {runner.TARGET_OVERHEAD}× the raw asyncio round trip "
        f"| {overhead:.2f}× (range {min(r.overhead for r in reps):.2f}–"
        f"{max(r.overhead for r in reps):.2f}) | {under} of {len(reps)} "
        f"| {runner.verdict(overhead <= runner.TARGET_OVERHEAD, 'at the median')} |",
        f"| calls/s with 256 in flight ≥ {runner.TARGET_THROUGHPUT_RATIO}× the raw peers' "
        f"| {throughput:.2f}× (range {min(r.throughput for r in reps):.2f}–"
        f"{max(r.throughput for r in reps):.2f}) | {over} of {len(reps)} "
        f"| {runner.verdict(throughput >= runner.TARGET_THROUGHPUT_RATIO, 'at the median')} |",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=12, help="repetitions of both phases")
    parser.add_argument("--blocks", type=int, default=24, help="interleaved blocks of 50 calls")
    parser.add_argument("--windows", type=int, default=5, help="throughput windows per level")
    parser.add_argument("--seconds", type=float, default=0.4, help="length of one window")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    reps = asyncio.run(measure(args.reps, args.blocks, args.windows, args.seconds))
    command = " ".join([".venv/bin/python scripts/bench_call_ratio.py", *sys.argv[1:]])
    markdown = report(reps, args, command)
    print(markdown)
    if not args.no_write:
        benchlib.write_section("call-ratio", markdown)


if __name__ == "__main__":
    main()
