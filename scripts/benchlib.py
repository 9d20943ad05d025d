"""Shared helpers for the benchmark scripts: percentiles, CPU time, docs/benchmarks.md sections.

Each script owns one section of docs/benchmarks.md, delimited by HTML comments,
and replaces only that section, so scripts can run in any order.
"""

from __future__ import annotations

import os
import platform
import re
import statistics
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS_MD = ROOT / "docs" / "benchmarks.md"
HEADER = """# Benchmarks

Every figure here was produced by a script under `scripts/`, which measures
plughost next to a baseline in the same run (the machines are noisy, so only
ratios and same-run comparisons mean much). Each section names the command that
produced it; re-run it to refresh that section.
"""


def percentile(samples: Sequence[float], pct: float) -> float:
    """Return the ``pct`` percentile (0-100) of ``samples`` by nearest rank."""
    if not samples:
        raise ValueError("percentile of no samples")
    ordered = sorted(samples)
    rank = max(0, min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1))))
    return ordered[rank]


def median(samples: Sequence[float]) -> float:
    """Return the median of ``samples``."""
    return statistics.median(samples)


def machine_line() -> str:
    """One line describing where and when the numbers were taken."""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"_{when}; Python {platform.python_version()} on {platform.system()} "
        f"{platform.machine()}, {os.cpu_count()} CPUs._"
    )


def load_line() -> str:
    """The machine's load when a run ended: above the CPU count, wall-clock figures mostly
    measure other processes."""
    load, cpus = os.getloadavg()[0], os.cpu_count() or 1
    verdict = "busy: wall-clock figures are inflated" if load > cpus else "quiet enough"
    return f"1-minute load average when it ended: {load:.1f} on {cpus} CPUs ({verdict})."


def write_section(name: str, markdown: str) -> None:
    """Replace (or append) the section ``name`` of docs/benchmarks.md."""
    start, end = f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->"
    block = f"{start}\n{markdown.rstrip()}\n{end}"
    text = BENCHMARKS_MD.read_text(encoding="utf-8") if BENCHMARKS_MD.exists() else HEADER
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    BENCHMARKS_MD.parent.mkdir(parents=True, exist_ok=True)
    BENCHMARKS_MD.write_text(text, encoding="utf-8")
    print(f"wrote section {name!r} of {BENCHMARKS_MD.relative_to(ROOT)}", file=sys.stderr)


def cpu_seconds(process: psutil.Process, *, tree: bool = False) -> float:
    """User + system seconds of ``process`` (and of its descendants, with ``tree``).

    A forked runner in its own pid namespace is two processes (an init and the
    runner itself, see plughost_runner.sandbox.pidns): the host knows the init's
    pid, and the calls run in its child. A process that ends while it is read
    counts for nothing.
    """
    try:
        processes = [process, *process.children(recursive=True)] if tree else [process]
    except psutil.Error:
        return 0.0
    total = 0.0
    for each in processes:
        try:
            times = each.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total
