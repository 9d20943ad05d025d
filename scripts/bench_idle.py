"""Benchmark what per-plugin isolation costs at rest: fifty plugins, idle, per runner and shared.

Two hosts load the same N plugins (half copies of the echo test plugin, half
copies of a MaiBot-style plugin written against ``maibot_sdk``), one with a
sandboxed runner per plugin (the default), one with ``runner_grouping =
"single"``. Each round, for each grouping in turn:

- start: ``PluginHost.start()`` until every plugin has answered a call;
- start CPU: the CPU time the whole process tree spent on that start (the
  host, the fork server, every runner, its helpers and the processes that
  ended meanwhile), per plugin: on a busy machine the wall clock mostly
  measures the other processes, this much less;
- idle CPU: the CPU time of the whole process tree (the host, the fork
  server, every runner and its pid-namespace helpers) over an idle window,
  as a share of one core;
- wake-ups: voluntary context switches of the tree over the same window, per
  second and per runner (each is one time a process went to sleep and woke);
- memory: the total PSS of the tree (``/proc/<pid>/smaps_rollup``), which
  counts a page shared by k processes as 1/k in each, so the sum is what the
  tree costs the machine.

Medians of the rounds are written to the section ``idle`` of
docs/benchmarks.md, with the ratios per-plugin / single.

``--start-only`` measures the start alone (no idle window), and prints
without writing.

Usage: .venv/bin/python scripts/bench_idle.py [--plugins N] [--rounds N] [--window S] [--no-write]
       [--start-only]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import benchlib
import copied_pages
import psutil

from plughost.host import PluginHost
from plughost.settings import HostSettings, RunnerSettings, SandboxSettings
from plughost_sdk.models import ToolInvocation

ECHO_PLUGIN = benchlib.ROOT / "tests" / "plugins" / "echo"
MAIBOT_PLUGIN = benchlib.ROOT / "tests" / "plugins" / "maibot" / "legacy_greeter"
GROUPINGS = ("per_plugin", "single")
TARGETS = {"idle CPU": 3.0, "total PSS": 3.0, "start until every plugin answers": 2.0}
TICK_S = 1 / os.sysconf("SC_CLK_TCK")
COMPARED_RUNNERS = 3  # runners a round compares page by page with the fork server
SETTLE_S = 2.0  # after start: let start-up work (trims, first beats) finish before measuring


@dataclass
class Results:
    start_s: dict[str, list[float]] = field(default_factory=lambda: {g: [] for g in GROUPINGS})
    start_cpu_ms: dict[str, list[float]] = field(default_factory=lambda: {g: [] for g in GROUPINGS})
    # per-plugin grouping: the CPU spent starting by kind of process, ms per runner
    start_cpu_by_kind: dict[str, list[float]] = field(default_factory=dict)
    cpu_pct: dict[str, list[float]] = field(default_factory=lambda: {g: [] for g in GROUPINGS})
    wakeups: dict[str, list[float]] = field(default_factory=lambda: {g: [] for g in GROUPINGS})
    pss_mib: dict[str, list[float]] = field(default_factory=lambda: {g: [] for g in GROUPINGS})
    processes: dict[str, int] = field(default_factory=dict)
    # per-plugin grouping: PSS MiB by kind of process (host, fork server, runner, helpers)
    kinds: dict[str, list[float]] = field(default_factory=dict)
    # per-plugin grouping: one runner's PSS and its own pages (Private_Dirty), MiB, medians
    runner_pss: list[float] = field(default_factory=list)
    runner_private: list[float] = field(default_factory=list)
    runners: dict[str, int] = field(default_factory=dict)
    # one runner's own pages (Private_Dirty, MiB) against the floor and with the sandbox off
    floor_private: list[float] = field(default_factory=list)
    floor_with_plugin_private: list[float] = field(default_factory=list)
    unsandboxed_private: list[float] = field(default_factory=list)
    # per-plugin grouping: a few runners' pages compared with the fork server's
    copied: list[copied_pages.CopiedPages] = field(default_factory=list)


def make_plugins(
    root: Path, count: int
) -> tuple[list[Path], list[tuple[str, str, dict[str, str]]]]:
    """``count`` plugin folders and, per plugin, the tool to call: (plugin id, tool, arguments)."""
    folders, probes = [], []
    for index in range(count):
        maibot = index % 2 == 1
        source = MAIBOT_PLUGIN if maibot else ECHO_PLUGIN
        plugin_id = f"bench.idle-{index}"
        folder = root / "plugins" / f"idle_{index}"
        shutil.copytree(source, folder, ignore=shutil.ignore_patterns("__pycache__"))
        manifest = json.loads((folder / "_manifest.json").read_text(encoding="utf-8"))
        manifest.update(id=plugin_id, name=f"idle-{index}")
        (folder / "_manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        folders.append(folder)
        if maibot:
            probes.append((plugin_id, "farewell", {"person": "x"}))
        else:
            probes.append((plugin_id, "echo", {"text": "x"}))
    return folders, probes


def tree(host_pid: int) -> list[psutil.Process]:
    """The host and every process below it."""
    me = psutil.Process(host_pid)
    return [me, *me.children(recursive=True)]


def kind_of(process: psutil.Process) -> str:
    """What a process of the tree is: the host, the fork server, a runner or a helper."""
    try:
        if process.pid == os.getpid():
            return "host"
        name = process.name()
        if name == "plughost-runner" and any(
            c.name() == "plughost-init" for c in process.children()
        ):
            return "pid-namespace waiter"
        return {"plughost-forks": "fork server", "plughost-init": "pid-namespace init"}.get(
            name, "runner"
        )
    except psutil.Error:
        return "gone"


def pss_bytes(pid: int, line_name: str = "Pss") -> int:
    """One figure of ``/proc/<pid>/smaps_rollup`` in bytes (``Pss`` unless ``line_name`` says)."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text(encoding="ascii")
    except OSError:
        return 0  # gone meanwhile
    for line in text.splitlines():
        if line.startswith(f"{line_name}:"):
            return int(line.split()[1]) * 1024
    return 0


def voluntary_switches(pid: int) -> int:
    """Voluntary context switches of every thread of ``pid`` (``status`` counts one thread)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            text = (task / "status").read_text(encoding="ascii")
        except OSError:
            continue  # the thread ended meanwhile
        for line in text.splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                total += int(line.split()[1])
    return total


def on_cpu_ns(pid: int) -> int:
    """Nanoseconds every thread of ``pid`` has spent on a CPU (exact, unlike clock ticks)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            total += int((task / "schedstat").read_text(encoding="ascii").split()[0])
        except (OSError, ValueError, IndexError):
            continue  # the thread ended meanwhile
    return total


def reaped_cpu_s(pid: int) -> float:
    """CPU seconds of the children ``pid`` has reaped (``cutime`` and ``cstime``)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except OSError:
        return 0.0  # gone meanwhile
    fields = text[text.rfind(")") + 2 :].split()
    return (int(fields[13]) + int(fields[14])) * TICK_S


def tree_cpu_s() -> float:
    """CPU seconds this process, everything below it and all they have reaped have used.

    A process that ended and was reaped counts in its parent's ``cutime``: the
    pid-namespace helpers that hand a runner over and exit are in the fork
    server's.
    """
    return sum(on_cpu_ns(p.pid) / 1e9 + reaped_cpu_s(p.pid) for p in tree(os.getpid()))


def snapshot(processes: list[psutil.Process]) -> tuple[float, int]:
    """CPU seconds and voluntary context switches (every thread's) of ``processes``, summed.

    This process (the host) reads the others: put it last in a snapshot that opens a
    window and first in one that closes it, so the reading stays out of the window.
    """
    cpu, switches = 0, 0
    for process in processes:
        cpu += on_cpu_ns(process.pid)
        switches += voluntary_switches(process.pid)
    return cpu / 1e9, switches


def note_start_by_kind(out: Results, host_ns: int, spent_s: float, runners: int) -> None:
    """Split a per-plugin start's CPU by kind of process, per runner.

    Every process below the host was born during the start, so its whole time on
    a CPU is start-up (the fork server's own start included); the host's is its
    time over the start; what is left ended meanwhile (reaped children).
    """
    by_kind = {"host": host_ns / 1e6}
    for member in tree(os.getpid())[1:]:
        kind = kind_of(member)
        by_kind[kind] = by_kind.get(kind, 0.0) + on_cpu_ns(member.pid) / 1e6
    by_kind["ended meanwhile"] = max(0.0, spent_s * 1000 - sum(by_kind.values()))
    for kind, ms in by_kind.items():
        out.start_cpu_by_kind.setdefault(kind, []).append(ms / runners)


async def answer_all(host: PluginHost, probes: list[tuple[str, str, dict[str, str]]]) -> None:
    invocations = []
    for plugin_id, tool, arguments in probes:
        [component] = [c for c in host.components.by_plugin(plugin_id) if c.name == tool]
        name = host.query.model_name(component)
        invocations.append(ToolInvocation(tool_name=name, arguments=arguments))
    results = await asyncio.gather(*(host.tools.invoke(i) for i in invocations))
    failed = [r.error_message for r in results if not r.success]
    if failed:
        raise RuntimeError(f"{len(failed)} plugins did not answer: {failed[0]}")


async def one_round(
    root: Path,
    grouping: str,
    folders: list[Path],
    probes: list[tuple[str, str, dict[str, str]]],
    window: float,
    out: Results,
) -> None:
    settings = HostSettings(
        data_dir=root / grouping / "data",
        temp_dir=root / grouping / "temp",
        runner_grouping=grouping,  # type: ignore[arg-type]
        group_capability_plugins=True,  # one runner for all: the test plugins ask for some
    )
    host = PluginHost(folders, settings=settings)
    host_began = on_cpu_ns(os.getpid())
    cpu_began = tree_cpu_s()
    began = time.perf_counter()
    try:
        await host.start()
        if host.problems:
            plugin_id, problem = next(iter(host.problems.items()))
            raise RuntimeError(f"{len(host.problems)} plugins failed: {plugin_id}: {problem}")
        await answer_all(host, probes)
        out.start_s[grouping].append(time.perf_counter() - began)
        cpu_spent = tree_cpu_s() - cpu_began
        out.start_cpu_ms[grouping].append(cpu_spent / len(folders) * 1000)
        out.processes[grouping] = len(tree(os.getpid()))
        if grouping == "per_plugin":
            note_start_by_kind(out, on_cpu_ns(os.getpid()) - host_began, cpu_spent, len(folders))
        if window <= 0:  # --start-only
            return
        await asyncio.sleep(SETTLE_S)  # a measuring pause, not synchronisation
        processes = tree(os.getpid())
        cpu_before, switches_before = snapshot(processes[::-1])
        await asyncio.sleep(window)  # the idle window being measured
        cpu_after, switches_after = snapshot(processes)
        runners = len({s.runner_id for s in host.status()})
        out.cpu_pct[grouping].append((cpu_after - cpu_before) / window * 100)
        out.wakeups[grouping].append((switches_after - switches_before) / window / runners)
        members = tree(os.getpid())
        out.pss_mib[grouping].append(sum(pss_bytes(p.pid) for p in members) / 2**20)
        if grouping == "per_plugin":
            by_kind: dict[str, float] = {}
            for member in members:
                kind = kind_of(member)
                by_kind[kind] = by_kind.get(kind, 0.0) + pss_bytes(member.pid) / 2**20
            for kind, mib in by_kind.items():
                out.kinds.setdefault(kind, []).append(mib)
            runner_pids = [m.pid for m in members if kind_of(m) == "runner"]
            if runner_pids:
                pss = [pss_bytes(pid) / 2**20 for pid in runner_pids]
                own = [pss_bytes(pid, "Private_Dirty") / 2**20 for pid in runner_pids]
                out.runner_pss.append(benchlib.median(pss))
                out.runner_private.append(benchlib.median(own))
            servers = [m.pid for m in members if kind_of(m) == "fork server"]
            if servers and copied_pages.available() is None:
                for pid in runner_pids[:COMPARED_RUNNERS]:
                    with contextlib.suppress(OSError):  # a runner gone meanwhile
                        out.copied.append(copied_pages.compare(pid, servers[0]))
        out.processes[grouping] = len(processes)
        out.runners[grouping] = runners
        await answer_all(host, probes)  # still answering after the idle window
    finally:
        await host.aclose()


async def unsandboxed_private(
    root: Path, folders: list[Path], probes: list[tuple[str, str, dict[str, str]]]
) -> float:
    """The median runner's own pages (MiB) with the sandbox off, after start and a call each."""
    settings = HostSettings(
        data_dir=root / "unsandboxed" / "data",
        temp_dir=root / "unsandboxed" / "temp",
        runner=RunnerSettings(sandbox=SandboxSettings(enabled=False)),
    )
    host = PluginHost(folders, settings=settings)
    try:
        await host.start()
        await answer_all(host, probes)
        await asyncio.sleep(SETTLE_S)  # a measuring pause, as in one_round
        runners = [m.pid for m in tree(os.getpid()) if kind_of(m) == "runner"]
        return benchlib.median([pss_bytes(pid, "Private_Dirty") / 2**20 for pid in runners])
    finally:
        await host.aclose()


def floor_private(children: int = 6, plugins: tuple[Path, ...] = ()) -> float:
    """The median own pages (MiB) of ``scripts/runner_floor.py``'s children."""
    script = Path(__file__).with_name("runner_floor.py")
    given = [arg for folder in plugins for arg in ("--plugin", str(folder))]
    done = subprocess.run(
        [sys.executable, str(script), "--children", str(children), *given],
        capture_output=True,
        text=True,
        check=True,
    )
    return benchlib.median([kib / 1024 for kib in json.loads(done.stdout)["private_kib"]])


async def run(args: argparse.Namespace) -> Results:
    results = Results()
    with tempfile.TemporaryDirectory(prefix="plughost-bench-idle-") as tmp:
        root = Path(tmp)
        folders, probes = make_plugins(root, args.plugins)
        for index in range(args.rounds):
            order = GROUPINGS if index % 2 == 0 else GROUPINGS[::-1]
            for grouping in order:
                window = 0.0 if args.start_only else args.window
                await one_round(root, grouping, folders, probes, window, results)
                if args.start_only:
                    print(
                        f"round {index + 1} {grouping}: start "
                        f"{results.start_s[grouping][-1]:.2f} s, "
                        f"{results.start_cpu_ms[grouping][-1]:.1f} ms CPU per plugin",
                        file=sys.stderr,
                    )
                    continue
                print(
                    f"round {index + 1} {grouping}: start {results.start_s[grouping][-1]:.2f} s, "
                    f"{results.start_cpu_ms[grouping][-1]:.1f} ms CPU per plugin, "
                    f"idle {results.cpu_pct[grouping][-1]:.2f}% CPU, "
                    f"{results.wakeups[grouping][-1]:.1f} wake-ups/s per runner, "
                    f"PSS {results.pss_mib[grouping][-1]:.0f} MiB",
                    file=sys.stderr,
                )
        if not args.start_only:
            results.unsandboxed_private.append(await unsandboxed_private(root, folders, probes))
            results.floor_private.append(floor_private())
            both = (ECHO_PLUGIN, MAIBOT_PLUGIN)
            results.floor_with_plugin_private.append(floor_private(plugins=both))
    return results


def runner_budget(results: Results) -> str:
    """A sentence: the PSS a runner may hold for the total to meet its target, against now."""
    runners = results.runners.get("per_plugin", 0)
    if not (runners and results.runner_pss and results.pss_mib["single"]):
        return ""
    others = sum(
        benchlib.median(values)
        for kind, values in results.kinds.items()
        if kind not in ("runner", "gone")
    )
    single = benchlib.median(results.pss_mib["single"])
    budget = (TARGETS["total PSS"] * single - others) / runners
    return (
        f"For the total PSS to meet its target, each of the {runners} runners could hold at "
        f"most {budget:.2f} MiB PSS ({TARGETS['total PSS']:g} times single's "
        f"{single:.0f} MiB, less the {others:.0f} MiB of the host, the fork server and the "
        f"pid-namespace inits); one holds {benchlib.median(results.runner_pss):.2f} MiB."
    )


def report(results: Results, args: argparse.Namespace, command: str) -> str:
    m = {
        name: {g: benchlib.median(series[g]) for g in GROUPINGS}
        for name, series in (
            ("idle CPU", results.cpu_pct),
            ("wake-ups", results.wakeups),
            ("total PSS", results.pss_mib),
            ("start until every plugin answers", results.start_s),
            ("CPU spent starting, per plugin", results.start_cpu_ms),
        )
        if not args.start_only or name.startswith(("start", "CPU spent"))
    }
    units = {
        "idle CPU": lambda v: f"{v:.2f}% of a core",
        "wake-ups": lambda v: f"{v:.1f} /s",
        "total PSS": lambda v: f"{v:.0f} MiB",
        "start until every plugin answers": lambda v: f"{v:.2f} s",
        "CPU spent starting, per plugin": lambda v: f"{v:.1f} ms",
    }
    rows = []
    for name, values in m.items():
        per, single = values["per_plugin"], values["single"]
        ratio = per / single if single else float("inf")
        target = TARGETS.get(name)
        verdict = "" if target is None else (" (met)" if ratio <= target else " (missed)")
        limit = f"≤ {target:g}" if target is not None else "measured"
        label = "voluntary wake-ups, per runner" if name == "wake-ups" else name
        rows.append(
            f"| {label} | {units[name](per)} | {units[name](single)} | {ratio:.2f}{verdict} "
            f"| {limit} |"
        )
    lines = [
        "## Fifty plugins at rest: a sandboxed runner each, or one for all",
        "",
        f"Command: `{command}`",
        "",
        benchlib.machine_line(),
        "",
        f"{args.plugins} plugins (half copies of `tests/plugins/echo`, half of the MaiBot-style "
        "`tests/plugins/maibot/legacy_greeter`); per-plugin: the defaults (a runner per plugin, "
        f"sandbox and pid namespace on: {results.processes.get('per_plugin', 0)} processes in "
        f'the tree); single: `runner_grouping = "single"` with `group_capability_plugins` '
        f"(one runner for all: {results.processes.get('single', 0)} processes). "
        f"Medians of {args.rounds} rounds, the two groupings alternating.",
        "",
        "| at rest | per-plugin | single | ratio | target |",
        "|---|---|---|---|---|",
        *rows,
        "",
        *(
            [
                "Where the per-plugin start's CPU goes (medians, ms per runner): "
                + ", ".join(
                    f"{kind} {benchlib.median(values):.1f}"
                    for kind, values in sorted(
                        results.start_cpu_by_kind.items(), key=lambda kv: -max(kv[1])
                    )
                    if kind != "gone"
                )
                + " (the fork server's own start included, paid once per host).",
                "",
            ]
            if results.start_cpu_by_kind
            else []
        ),
        "Where the per-plugin PSS goes (medians): "
        + ", ".join(
            f"{kind} {benchlib.median(values):.0f} MiB"
            for kind, values in sorted(results.kinds.items(), key=lambda kv: -max(kv[1]))
            if kind != "gone"
        )
        + ".",
        "",
        *(
            [
                f"One runner (median): {benchlib.median(results.runner_pss):.1f} MiB PSS, of "
                f"which {benchlib.median(results.runner_private):.1f} MiB its own pages "
                "(`Private_Dirty`: the fork server's pages it wrote to, each copied, and what "
                "it allocated); the rest is its share of the pages it still shares with the "
                "fork server and its siblings.",
                "",
            ]
            if results.runner_pss
            else []
        ),
        *(
            [
                "Against what any forked process pays (one runner's own pages, medians): "
                f"{benchlib.median(results.floor_private):.1f} MiB for a child forked from "
                "the fork server's imports that only answers msgpack round trips on a pyzmq "
                "socket in an asyncio loop (`scripts/runner_floor.py`: no sandbox, log "
                "capture, heartbeat or plugin); "
                f"{benchlib.median(results.floor_with_plugin_private):.1f} MiB for such a "
                "child that first imports a plugin's `plugin.py` as a runner does and makes "
                "the plugin (the two kinds above in turn); "
                f"{benchlib.median(results.unsandboxed_private):.1f} MiB for a runner with "
                "the sandbox off (`[host.runner.sandbox] enabled = false`); "
                f"{benchlib.median(results.runner_private):.1f} MiB for a runner as above. "
                "Step by step: compiling and running the plugin's module, then the rest of "
                "the runner (its link to the host, log capture, heartbeats, the plugin's "
                "context and declarations), then the sandbox and pid namespace. "
                + runner_budget(results),
                "",
            ]
            if results.floor_with_plugin_private
            and results.unsandboxed_private
            and results.runner_private
            else []
        ),
        *(
            [copied_pages.summary(results.copied), ""]
            if results.copied
            else [f"(Pages not compared: {copied_pages.available()}.)", ""]
            if copied_pages.available() and not args.start_only
            else []
        ),
        "Start is `PluginHost.start()` until every plugin has answered a call; the CPU spent "
        "starting is the on-CPU time of the whole process tree over that start, the processes "
        "that ended meanwhile included, divided by the number of plugins. Split by kind of "
        "process (per-plugin grouping), it is each process's whole time on a CPU (every one "
        "below the host was born during the start), the host's time over the start, and what "
        "ended meanwhile, per runner. Idle CPU is the "
        "time on a CPU (`/proc/<pid>/task/*/schedstat`) of the whole process tree over "
        f"{args.window:g} s, {SETTLE_S:g} s after "
        "start, as a share of one core; wake-ups are the tree's voluntary context switches "
        "over that window, per second and per runner; total PSS is the sum of "
        "`/proc/<pid>/smaps_rollup` over the tree, the host included. " + benchlib.load_line(),
    ]
    return "\n".join(lines)


def main() -> None:
    logging.basicConfig(level=logging.ERROR)  # fifty copies' tool-name conflicts: expected
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plugins", type=int, default=50, help="plugins per host")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per grouping")
    parser.add_argument(
        "--window",
        type=float,
        default=30.0,
        help="idle window, seconds (a resting runner beats every 30 s by default)",
    )
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument(
        "--start-only", action="store_true", help="measure the start alone; print only"
    )
    args = parser.parse_args()
    results = asyncio.run(run(args))
    command = " ".join([".venv/bin/python scripts/bench_idle.py", *sys.argv[1:]])
    markdown = report(results, args, command)
    print(markdown)
    if not (args.no_write or args.start_only):
        benchlib.write_section("idle", markdown)


if __name__ == "__main__":
    main()
