"""Profile the call path: CPU per call in the host and the runner, and where it goes.

Run as ``.venv/bin/python scripts/profile_call_path.py``; it replaces the
"call-path" section of docs/benchmarks.md.

A host serves the echo test plugin from one runner. Calls go through
``host.tools.invoke`` with 1 and with 256 in flight; CPU time (user + system)
of the host process and of the runner process is read from the kernel around
each phase, so the figures hold on a busy machine where wall-clock time does
not. Then the same calls run under cProfile in both processes (the runner is
started through a small wrapper that profiles it), and each function's own
time is charged to the stage of the path its file belongs to.

To compare with another revision, run this script there with ``--save FILE``
(copy it in if that revision predates it), then here with ``--baseline FILE``:
the section then shows both columns.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import sys
import tempfile
import textwrap
from collections import defaultdict
from pathlib import Path
from typing import Any

import psutil

SCRIPTS = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS))

from benchlib import ROOT, cpu_seconds, load_line, machine_line, write_section  # noqa: E402

from plughost.host import PluginHost  # noqa: E402
from plughost.settings import HostSettings  # noqa: E402
from plughost_sdk.models import ToolInvocation  # noqa: E402

ECHO = ROOT / "tests" / "plugins" / "echo"
CALLS = 10_240
INFLIGHT = (1, 256)

# (stage, substrings of a profiled function's file or name), first match wins.
STAGES: list[tuple[str, tuple[str, ...]]] = [
    ("registry and routing", ("tools/registry", "plugins/query", "plugins/provider", "tracing")),
    ("argument validation", ("tools/argument", "tools/casting", "jsonschema")),
    (
        "supervisor and channel",
        (
            "runners/",
            "service.py",
            "invoker.py",
            "transport.py",
            "plughost_runner/link/lifecycle.py",
            "plughost_runner/link/plugin_requests.py",
            "plughost_runner/link/replies.py",
        ),
    ),
    ("envelope codec (msgpack)", ("wire.py", "msgpack")),
    ("socket (pyzmq, pump)", ("zmq/", "socket_pump")),
    ("result model (pydantic)", ("pydantic", "models.py", "results.py")),
    ("event loop (asyncio)", ("asyncio/", "contextvars", "_asyncio")),
]

RUNNER_WRAPPER = textwrap.dedent(
    """
    import cProfile, sys
    from plughost_runner.__main__ import main
    profile = cProfile.Profile()
    profile.enable()
    try:
        code = main(sys.argv[2:])
    finally:
        profile.disable()
        profile.dump_stats(sys.argv[1])
    sys.exit(code)
    """
)


async def run_calls(host: PluginHost, calls: int, inflight: int) -> None:
    invocation = ToolInvocation(tool_name="echo", arguments={"text": "x"})
    remaining = iter(range(calls))

    async def worker() -> None:
        for _ in remaining:
            result = await host.tools.invoke(invocation)
            if not result.success:
                raise RuntimeError(f"echo failed: {result.error_code} {result.error_message}")

    await asyncio.gather(*(worker() for _ in range(inflight)))


async def cpu_per_call(host: PluginHost, runner: psutil.Process) -> dict[str, dict[str, float]]:
    me = psutil.Process()
    figures: dict[str, dict[str, float]] = {}
    for inflight in INFLIGHT:
        await run_calls(host, 1000, inflight)  # warm up
        host_before, runner_before = cpu_seconds(me), cpu_seconds(runner, tree=True)
        await run_calls(host, CALLS, inflight)
        figures[str(inflight)] = {
            "host": (cpu_seconds(me) - host_before) / CALLS * 1e6,
            "runner": (cpu_seconds(runner, tree=True) - runner_before) / CALLS * 1e6,
        }
    return figures


def stage_of(key: tuple[str, int, str]) -> str:
    filename, _, function = key
    where = f"{filename}:{function}"
    for stage, needles in STAGES:
        if any(needle in where for needle in needles):
            return stage
    return "other"


def loop_turns(stats: pstats.Stats, calls: int) -> float:
    """Event-loop iterations (``BaseEventLoop._run_once``) per call in a profile."""
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    turns: int = sum(entry[1] for key, entry in raw.items() if key[2] == "_run_once")
    return turns / calls


def shares(stats: pstats.Stats) -> dict[str, float]:
    by_stage: dict[str, float] = defaultdict(float)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for key, (_, _, own, _, _) in raw.items():
        if "epoll" in key[2]:
            continue  # waiting for the other process: idle, not work
        by_stage[stage_of(key)] += own
    total = sum(by_stage.values()) or 1.0
    return {stage: seconds / total * 100 for stage, seconds in by_stage.items()}


async def profiled(work: Path, inflight: int) -> dict[str, dict[str, float]]:
    """Run calls with both processes under cProfile; shares by stage."""
    import plughost.runners.supervisor as supervisor

    wrapper = work / "profiled_runner.py"
    wrapper.write_text(RUNNER_WRAPPER, encoding="utf-8")
    runner_stats = work / "runner.prof"
    real = supervisor.runner_command

    def command(*args: Any, **kwargs: Any) -> list[str]:
        argv = real(*args, **kwargs)  # [python, "-m", "plughost_runner", *options]
        return [argv[0], str(wrapper), str(runner_stats), *argv[3:]]

    supervisor.runner_command = command  # type: ignore[assignment]
    try:
        settings = HostSettings()
        settings.runner.fork_server = False  # the wrapper must be the runner's own interpreter
        sandbox = getattr(settings.runner, "sandbox", None)
        if sandbox is not None:  # the profile is written where Landlock would refuse it
            sandbox.enabled = False
        async with PluginHost([ECHO], settings=settings) as host:
            await run_calls(host, 1000, inflight)
            profile = cProfile.Profile()
            profile.enable()
            await run_calls(host, CALLS, inflight)
            profile.disable()
    finally:
        supervisor.runner_command = real  # type: ignore[assignment]
    host_stats, runner_stats_ = pstats.Stats(profile), pstats.Stats(str(runner_stats))
    return {
        "host": shares(host_stats),
        "runner": shares(runner_stats_),
        # The runner's profile covers its whole life: the warm-up calls count too.
        "turns": {
            "host": loop_turns(host_stats, CALLS),
            "runner": loop_turns(runner_stats_, CALLS + 1000),
        },
    }


async def measure() -> dict[str, Any]:
    async with PluginHost([ECHO], settings=HostSettings()) as host:
        runner = host.runner_for("tests.echo")
        if runner is None or runner.pid is None:
            raise RuntimeError("the echo plugin did not start")
        cpu = await cpu_per_call(host, psutil.Process(runner.pid))
    figures: dict[str, Any] = {"cpu": cpu}
    for inflight, key in ((256, "profile"), (1, "profile_1")):
        with tempfile.TemporaryDirectory() as work:
            figures[key] = await profiled(Path(work), inflight)
    return figures


def table(now: dict[str, Any], before: dict[str, Any] | None) -> list[str]:
    heads = ["before", "after"] if before else ["now"]
    runs = [before, now] if before else [now]
    lines = [f"| measure | {' | '.join(heads)} |", "|---|" + "---|" * len(heads)]
    for inflight in INFLIGHT:
        for side in ("host", "runner"):
            cells = [f"{run['cpu'][str(inflight)][side]:.0f} µs" for run in runs if run]
            lines.append(f"| CPU per call, {side}, {inflight} in flight | {' | '.join(cells)} |")
        cells = [f"{sum(run['cpu'][str(inflight)].values()):.0f} µs" for run in runs if run]
        lines.append(f"| CPU per call, both, {inflight} in flight | {' | '.join(cells)} |")
    for key, inflight in (("profile_1", 1), ("profile", 256)):
        for side in ("host", "runner"):
            cells = [_turns(run, key, side) for run in runs if run]
            lines.append(
                f"| event-loop iterations per call, {side}, {inflight} in flight "
                f"| {' | '.join(cells)} |"
            )
    stages = [stage for stage, _ in STAGES] + ["other"]
    for key, inflight in (("profile_1", 1), ("profile", 256)):
        for side in ("host", "runner"):
            for stage in stages:
                cells = [_share(run, key, side, stage) for run in runs if run]
                lines.append(
                    f"| {side} profile, {inflight} in flight: {stage} | {' | '.join(cells)} |"
                )
    return lines


def _turns(run: dict[str, Any], key: str, side: str) -> str:
    """Loop iterations per call, or a dash for a run saved before they were counted."""
    turns = run.get(key, {}).get("turns")
    return "—" if turns is None else f"{turns[side]:.2f}"


def _share(run: dict[str, Any], key: str, side: str, stage: str) -> str:
    """One stage's share, or a dash for a run saved before that profile existed."""
    if key not in run:
        return "—"
    return f"{run[key][side].get(stage, 0.0):.0f} %"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--save", type=Path, help="write the figures to this JSON file")
    parser.add_argument("--baseline", type=Path, help="a --save file from another revision")
    parser.add_argument("--no-write", action="store_true", help="do not touch benchmarks.md")
    parser.add_argument("--note", default="", help="a paragraph on the runs, put above the table")
    args = parser.parse_args()
    now = asyncio.run(measure())
    if args.save:
        args.save.write_text(json.dumps(now, indent=1), encoding="utf-8")
    before = json.loads(args.baseline.read_text(encoding="utf-8")) if args.baseline else None
    command = ".venv/bin/python scripts/profile_call_path.py"
    command += f" --baseline {args.baseline}" if args.baseline else ""
    markdown = "\n".join(
        [
            "## The call path, profiled",
            "",
            f"Command: `{command}`",
            "",
            machine_line(),
            "",
            load_line(),
            "",
            f"{CALLS:,} echo calls through `host.tools.invoke` per figure. CPU time is the "
            "kernel's (user + system) for each process, so it holds on a busy machine "
            "better than wall-clock time does (contention still inflates it). "
            "The profile shares are each function's own time under cProfile with 1 and with "
            "256 in flight, charged to the stage its file belongs to (`STAGES` in the script); "
            "time spent waiting in epoll is left out. pyzmq's socket calls are compiled "
            "without profiling hooks, so their time counts as the own time of the function "
            "that calls them (the pump).",
            "",
            *([args.note, ""] if args.note else []),
            *table(now, before),
        ]
    )
    print(markdown)
    if not args.no_write:
        write_section("call-path", markdown)


if __name__ == "__main__":
    main()
