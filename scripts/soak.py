"""Soak the host: inject many faults while well-behaved neighbours serve a steady load.

Two neighbours (copies of tests/plugins/echo) are called through ``host.invoke``
at a fixed rate, with up to ``--inflight`` calls in flight, for the whole run;
each call is timed from the moment it was due, so a stalled host shows up in
the figures instead of slowing the load down. Meanwhile ``--faults`` faults
(1,000 by default) are injected into misbehaving plugins (tests/plugins/), in
fault windows that alternate with quiet windows: a quiet window starts only
once every runner is back and ready, and the neighbours' latency in the quiet
windows is the baseline. Alternating them in one run lets both see the same
noise from the rest of the machine.

Most faults are cheap (a tool raising, unserializable and oversize results, a
runner lying about request ids, garbage and forged hellos on the host's
sockets); a share kill or hang a runner (os._exit, SIGKILL, SIGSEGV, busy loops,
deadlocks, memory growth, children left behind) or reload a plugin with a broken
version. The mix is printed and written with the figures.

Reported, with targets: lost results (0), host crashes (0), neighbour failures
(0), neighbour p99 during faults / p99 in the quiet windows (at most 1.5x),
leftover processes after shutdown (0), and the host's RSS before and after.
Writes the section ``soak`` of docs/benchmarks.md.

Usage: .venv/bin/python scripts/soak.py [--faults N] [--quick] [--rate R] [--inflight K]
       [--fault-rate F] [--window S] [--quiet S] [--seed N] [--only LANE...] [--no-write]
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import collections
import contextlib
import itertools
import logging
import os
import random
import shlex
import shutil
import sys
import tempfile
import uuid
from array import array
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import benchlib

sys.path.insert(0, str(benchlib.ROOT))

import plughost.runners.supervisor
from plughost.host import PluginHost
from plughost.settings import HostSettings, ResourceLimits, RunnerSettings
from tests import fake_runner
from tests.fault_injection import (
    MARGIN,
    Intruder,
    alive,
    copy_plugin,
    invoke_with_deadline,
    model_name,
    outcome,
    pids_recorded,
    processes_mentioning,
    rss_mb,
    runners_of_this_process,
    write_bare_plugin,
)
from tests.waiting import wait_until

PLUGINS = benchlib.ROOT / "tests" / "plugins"
NEIGHBOURS = ("tests.echo-a", "tests.echo-b")
NEIGHBOURS = ("tests.echo-a", "tests.echo-b")
WRONG_IDS = "tests.wrong-ids"
SPAWN, HANG, HOG = "tests.spawn-children", "tests.faulty-hang", "tests.memory-hog"
DEADLOCK = "tests.deadlock"
FAST_WORKERS = 4
HOG_LIMIT_MB = 384
GROW_CAP_MB = 512

SETTLE = 1.0
"""Seconds every runner must stay ready before a quiet window starts."""

TARGET_LOST = 0
TARGET_CRASHES = 0
TARGET_P99_RATIO = 1.5
TARGET_LEFTOVERS = 0

SETTINGS = RunnerSettings(
    heartbeat_interval=0.2,
    heartbeat_misses=5,
    on_load_timeout=1.0,
    stuck_grace=0.5,
    backoff_initial=0.05,
    backoff_max=0.2,
    max_restarts=1_000_000,
    restart_window=10.0,
    term_timeout=1.0,
    shutdown_drain=1.0,
)
"""Restarts are never given up on here (that path has its own test) and back off briefly."""


@dataclass(frozen=True, slots=True)
class FaultKind:
    """One kind of fault: where it goes, how often, and the outcomes that keep the promises."""

    name: str
    lane: str
    weight: float
    expect: frozenset[str]
    plugin_id: str = ""
    tool: str = ""
    deadline: float = 10.0
    arguments: tuple[tuple[str, object], ...] = ()


def _call(
    name: str,
    lane: str,
    weight: float,
    expect: str,
    target: str,
    deadline: float = 10.0,
    **args: Any,
) -> FaultKind:
    """A tool-call fault; ``target`` is ``plugin_id:tool``, ``expect`` outcomes joined by |."""
    plugin_id, tool = target.split(":")
    outcomes = frozenset(expect.split("|"))
    return FaultKind(name, lane, weight, outcomes, plugin_id, tool, deadline, tuple(args.items()))


def _other(name: str, lane: str, weight: float, expect: str) -> FaultKind:
    return FaultKind(name, lane, weight, frozenset(expect.split("|")))


ERRORS, RAISER, LIAR = "tests.faulty-errors", "tests.raiser", WRONG_IDS
LATE = "plugin_crashed|timeout"  # a hang ends in a timeout, or in the runner being killed
MIX = [
    # cheap: the runner survives
    _call("raise", "fast", 10, "plugin_exception", f"{RAISER}:oops"),
    _call("tool_error", "fast", 6, "tool_error", f"{RAISER}:fail", message="no"),
    _call("unserializable", "fast", 10, "invalid_result", f"{ERRORS}:unserializable"),
    _call("unserializable_meta", "fast", 6, "invalid_result", f"{ERRORS}:unserializable_metadata"),
    _call("oversize", "fast", 6, "message_too_large", f"{ERRORS}:oversize"),
    _call("hang_async", "fast", 6, "timeout", f"{ERRORS}:hang_async", 0.3),
    _call("flood_stdout", "fast", 0.5, "ok", f"{ERRORS}:flood_stdout"),
    _call("wrong_request_id", "fast", 4, "timeout", f"{LIAR}:misbehave", 0.3, how="shifted"),
    _call("duplicate_reply", "fast", 4, "ok", f"{LIAR}:misbehave", how="duplicate"),
    _call("bad_result", "fast", 4, "bad_payload", f"{LIAR}:misbehave", how="bad_result"),
    _call("malformed_error", "fast", 3, "bad_payload", f"{LIAR}:misbehave", how="malformed_error"),
    _call("malformed_event", "fast", 3, "ok", f"{LIAR}:misbehave", how="malformed_event"),
    _other("garbage_frames", "fast", 8, "rejected|unreachable"),
    _other("forged_hello", "fast", 6, "refused"),
    # the runner dies (these alternate between two copies of faulty)
    _call("os_exit", "crash", 2, "plugin_crashed", ":exit_mid_call", 5.0),
    _call("sigkill", "crash", 2, "plugin_crashed", ":sigkill_mid_call", 5.0),
    _call("sigsegv", "crash", 2, "plugin_crashed", ":segfault", 5.0),
    _call("children_then_exit", "spawn", 0.5, "plugin_crashed", f"{SPAWN}:spawn_and_exit", 15.0),
    # the runner hangs and is recycled (the next call may find it still being recycled)
    _call("busy_loop", "hang", 0.5, LATE, f"{HANG}:busy_loop", 5.0),
    _call("busy_loop_sync", "hang", 0.5, LATE, f"{HANG}:busy_loop_sync", 0.3),
    _call("deadlock_sync", "deadlock", 0.5, LATE, f"{DEADLOCK}:deadlock_sync", 0.3),
    _call("deadlock_on_loop", "deadlock", 0.5, LATE, f"{DEADLOCK}:deadlock_on_loop", 5.0),
    _call("memory_growth", "memory", 0.5, LATE, f"{HOG}:grow", 1.0, max_mb=GROW_CAP_MB),
    # a reload with a broken version (or a good one)
    _other("reload_import_error", "reload", 1, "rolled_back"),
    _other("reload_on_load_raises", "reload", 1, "rolled_back"),
    _other("reload_on_load_hangs", "reload", 0.5, "rolled_back"),
    _other("reload_healthy", "reload", 0.5, "reloaded"),
]
CRASH_TARGETS = ("tests.faulty-crash-1", "tests.faulty-crash-2")
RELOAD_FAULTS = {
    "reload_import_error": "import",
    "reload_on_load_raises": "on_load_raise",
    "reload_on_load_hangs": "on_load_hang",
    "reload_healthy": "",
}


@dataclass
class Soak:
    """The host under test and everything the run records."""

    host: PluginHost
    root: Path
    marker: str
    intruder: Intruder
    rng: random.Random
    fault_rate: float
    due: array[float] = field(default_factory=lambda: array("d"))
    latency: array[float] = field(default_factory=lambda: array("d"))
    lag_at: array[float] = field(default_factory=lambda: array("d"))
    lag: array[float] = field(default_factory=lambda: array("d"))
    windows: list[tuple[float, float, str]] = field(default_factory=list)
    spans: list[tuple[float, float, str]] = field(default_factory=list)
    """(start, end, fault name) of every injected fault, on the loop clock."""
    """(start, end, "quiet" or "faults") on the loop clock; a call counts where it was due."""
    next_fault: float = 0.0
    neighbour_tools: tuple[str, ...] = ()
    """The model-facing names of the neighbours' ``echo`` tools."""
    neighbour_failures: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    outcomes: dict[str, Counter[str]] = field(default_factory=dict)
    unexpected: list[str] = field(default_factory=list)
    inflight: int = 0
    max_inflight: int = 0
    children: set[int] = field(default_factory=set)
    spawns: itertools.count[int] = field(default_factory=itertools.count)

    async def ticket(self) -> None:
        """Wait for the next fault's turn: faults start at most ``fault_rate`` per second."""
        loop = asyncio.get_running_loop()
        due = self.next_fault = max(self.next_fault, loop.time()) + 1 / self.fault_rate
        if due > loop.time():
            await asyncio.sleep(due - loop.time())  # pacing the faults, not synchronization

    def record(self, kind: FaultKind, got: str, detail: str = "") -> None:
        self.outcomes.setdefault(kind.name, Counter())[got] += 1
        if got not in kind.expect:
            self.unexpected.append(f"{kind.name}: {got} {detail[:160]}")

    def per_window(self, times: array[float], values: array[float]) -> dict[str, list[list[float]]]:
        """``values`` split by the window their ``times`` fall in, windows in order."""
        windows = sorted(self.windows)
        starts = [w[0] for w in windows]
        found: list[list[float]] = [[] for _ in windows]
        for when, value in zip(times, values, strict=True):
            index = bisect.bisect_right(starts, when) - 1
            if index >= 0 and when < windows[index][1]:
                found[index].append(value)
        split: dict[str, list[list[float]]] = {"quiet": [], "faults": []}
        for (_, _, kind), samples in zip(windows, found, strict=True):
            if samples:
                split[kind].append(samples)
        return split

    def window_kind(self, when: float) -> str | None:
        """ "quiet" or "faults" for the window ``when`` falls in, None between windows."""
        windows = sorted(self.windows)
        index = bisect.bisect_right([w[0] for w in windows], when) - 1
        if index >= 0 and when < windows[index][1]:
            return windows[index][2]
        return None

    def by_window(self, times: array[float], values: array[float]) -> dict[str, list[float]]:
        """``values`` split by the kind of window their ``times`` fall in."""
        split = self.per_window(times, values)
        return {kind: [v for window in windows for v in window] for kind, windows in split.items()}


async def neighbour_call(soak: Soak, n: int, due: float, slots: asyncio.Semaphore) -> None:
    """One neighbour call, timed from when it was due; a failure or loss is recorded."""
    loop = asyncio.get_running_loop()
    text = f"call-{n}"
    async with slots:
        soak.inflight += 1
        soak.max_inflight = max(soak.max_inflight, soak.inflight)
        try:
            async with asyncio.timeout(soak.host.settings.call_timeout + MARGIN):
                result = await soak.host.invoke(soak.neighbour_tools[n % 2], {"text": text})
        except TimeoutError:
            soak.lost.append(text)
            return
        finally:
            soak.inflight -= 1
    if not result.success or result.content != text:
        soak.neighbour_failures.append(f"{text}: {outcome(result)} {result.error_message[:120]}")
    soak.due.append(due)
    soak.latency.append(loop.time() - due)


async def neighbour_load(soak: Soak, rate: float, inflight: int, stop: asyncio.Event) -> None:
    """Start neighbour calls at ``rate`` per second until ``stop``."""
    loop = asyncio.get_running_loop()
    slots = asyncio.Semaphore(inflight)
    start = loop.time()
    async with asyncio.TaskGroup() as calls:
        for n in itertools.count():
            due = start + n / rate
            if due > loop.time():
                await asyncio.sleep(due - loop.time())  # pacing the load, not synchronization
            if stop.is_set():
                return
            calls.create_task(neighbour_call(soak, n, due, slots))


async def watch_loop(soak: Soak, stop: asyncio.Event, tick: float = 0.01) -> None:
    """Sample how late the host's event loop wakes up: its own stalls, apart from the runners'."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        before = loop.time()
        await asyncio.sleep(tick)  # a periodic sample, not synchronization
        soak.lag_at.append(before)
        soak.lag.append(max(0.0, loop.time() - before - tick))


async def inject(soak: Soak, kind: FaultKind, target: str = "") -> None:
    """Inject one fault and record its outcome and when it was in progress."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    try:
        await _inject(soak, kind, target)
    finally:
        soak.spans.append((start, loop.time(), kind.name))


async def _inject(soak: Soak, kind: FaultKind, target: str) -> None:
    if kind.name in RELOAD_FAULTS:
        await _reload(soak, kind)
    elif kind.name == "garbage_frames":
        await _garbage(soak, kind)
    elif kind.name == "forged_hello":
        await _forged_hello(soak, kind)
    else:
        await _tool_fault(soak, kind, target or kind.plugin_id)


async def _tool_fault(soak: Soak, kind: FaultKind, plugin_id: str) -> None:
    arguments = dict(kind.arguments)
    if kind.tool == "spawn_and_exit":
        pid_dir = soak.root / "pids" / str(next(soak.spawns))
        arguments.update(pid_dir=str(pid_dir), marker=soak.marker)
    if kind.tool == "misbehave":
        arguments["tag"] = uuid.uuid4().hex
    call = invoke_with_deadline(soak.host, plugin_id, kind.tool, kind.deadline, **arguments)
    try:
        async with asyncio.timeout(kind.deadline + MARGIN):
            result = await call
    except TimeoutError:
        soak.lost.append(f"fault {kind.name}")
        soak.record(kind, "lost")
        return
    finally:
        if kind.tool == "spawn_and_exit":
            soak.children.update(pids_recorded(Path(str(arguments["pid_dir"]))).values())
    got = outcome(result)
    if got == "ok" and kind.tool == "misbehave" and result.content != arguments["tag"]:
        got = "wrong_content"
    soak.record(kind, got, result.error_message)


async def _reload(soak: Soak, kind: FaultKind) -> None:
    fault = RELOAD_FAULTS[kind.name]
    (soak.root / "plugins" / "breakable" / "fault.txt").write_text(fault)
    reloaded = await soak.host.reload_plugin("tests.breakable")
    soak.record(kind, "reloaded" if reloaded else "rolled_back")


async def _garbage(soak: Soak, kind: FaultKind) -> None:
    soak.record(kind, await soak.intruder.garbage(soak.rng.choice(soak.host.runners())))


async def _forged_hello(soak: Soak, kind: FaultKind) -> None:
    runner = soak.host.runner_for(soak.rng.choice(NEIGHBOURS))  # never restarts: must answer
    if runner is None:
        raise RuntimeError("a neighbour has no runner")
    how = soak.rng.choice(("forged", "old_protocol"))  # a stolen token recycles its runner
    answer, refusal = await soak.intruder.forge_hello(runner, how)
    soak.record(kind, "refused" if answer == refusal else f"answered {answer!r}")


def schedule(
    faults: int, rng: random.Random, only: frozenset[str] = frozenset()
) -> dict[str, list[tuple[FaultKind, str]]]:
    """Draw ``faults`` faults from the mix and split them into lanes (one runner each)."""
    kinds = rng.choices(MIX, weights=[k.weight for k in MIX], k=faults)
    kinds = [k for k in kinds if not only or k.lane in only]
    lanes: dict[str, list[tuple[FaultKind, str]]] = {}
    crash_targets = itertools.cycle(CRASH_TARGETS)
    for kind in kinds:
        if kind.lane == "crash":
            target = next(crash_targets)
            lanes.setdefault(target, []).append((kind, target))
        else:
            lanes.setdefault(kind.lane, []).append((kind, ""))
    return lanes


async def run_lane(
    soak: Soak, queue: collections.deque[tuple[FaultKind, str]], workers: int, until: float
) -> None:
    """Inject the lane's next faults until ``until`` (one at a time per worker)."""
    loop = asyncio.get_running_loop()

    async def worker() -> None:
        while queue and loop.time() < until:
            kind, target = queue.popleft()
            await soak.ticket()
            await inject(soak, kind, target)

    async with asyncio.TaskGroup() as group:
        for _ in range(workers):
            group.create_task(worker())


async def alternate(soak: Soak, lanes: dict[str, list[tuple[FaultKind, str]]], args: Any) -> float:
    """Alternate quiet and fault windows until every fault is injected; return fault seconds."""
    loop = asyncio.get_running_loop()
    queues = {lane: collections.deque(faults) for lane, faults in lanes.items()}
    fault_seconds = 0.0
    while True:
        start = loop.time()
        await asyncio.sleep(args.quiet)  # a window of time under load, with no fault
        soak.windows.append((start, loop.time(), "quiet"))
        if not any(queues.values()):
            return fault_seconds
        start = soak.next_fault = loop.time()
        until = start + args.window
        async with asyncio.TaskGroup() as group:
            for lane, queue in queues.items():
                workers = FAST_WORKERS if lane == "fast" else 1
                group.create_task(run_lane(soak, queue, workers, until))
        await settle(soak.host)  # restarts and recycles are part of the faults' cost
        soak.windows.append((start, loop.time(), "faults"))
        fault_seconds += loop.time() - start
        left = sum(len(q) for q in queues.values())
        print(f"{fault_seconds:.0f} s of faults, {left} left", file=sys.stderr)


async def settle(host: PluginHost) -> None:
    """Return once every runner has been ready for SETTLE seconds in a row."""

    def all_ready() -> bool:
        return all(r.state.value == "ready" for r in host.runners() if r.state.value != "stopped")

    while True:
        await wait_until(all_ready, timeout=60, what="every runner ready")
        # A runner whose sync call overran is recycled up to stuck_grace after that call
        # returned: it looks ready until then.
        await asyncio.sleep(SETTLE)
        if all_ready():
            return


def plugin_dirs(root: Path) -> list[Path]:
    plugins = root / "plugins"
    return [
        copy_plugin(PLUGINS / "echo", plugins / "echo_a", "tests.echo-a"),
        copy_plugin(PLUGINS / "echo", plugins / "echo_b", "tests.echo-b"),
        copy_plugin(PLUGINS / "echo", plugins / "raiser", RAISER),
        copy_plugin(PLUGINS / "faulty", plugins / "faulty_crash_1", CRASH_TARGETS[0]),
        copy_plugin(PLUGINS / "faulty", plugins / "faulty_crash_2", CRASH_TARGETS[1]),
        copy_plugin(PLUGINS / "faulty", plugins / "faulty_hang", HANG),
        copy_plugin(PLUGINS / "faulty", plugins / "faulty_errors", ERRORS),
        copy_plugin(PLUGINS / "breakable", plugins / "breakable", "tests.breakable"),
        write_bare_plugin(plugins / "wrong_ids", WRONG_IDS),
        PLUGINS / "deadlock",
        PLUGINS / "memory_hog",
        PLUGINS / "spawn_children",
    ]


class _Counting(logging.Handler):
    """Counts the host's own failures: a supervisor that died, an error nobody retrieved."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.failures: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.name in {"plughost.host", "plughost.runners.fleet", "asyncio"}:
            self.failures.append(record.getMessage()[:200])


def sandbox_line(soak: Soak) -> str:
    """What the runners were confined by, as the host reported it."""
    return soak.host.sandbox.describe() if soak.host.sandbox else "sandbox: unknown"


@dataclass
class Report:
    args: argparse.Namespace
    soak: Soak
    lanes: dict[str, int]
    host_failures: list[str]
    rss: tuple[float, float, float]
    leftovers: list[str]
    fault_seconds: float
    runners_spawned: int
    load: float = 0.0


async def soak_run(args: argparse.Namespace) -> Report:
    root = Path(tempfile.mkdtemp(prefix="plughost-soak-"))
    load_average = os.getloadavg()[0]
    counting = _Counting()
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s %(message)s")
    logging.getLogger().addHandler(counting)
    real = plughost.runners.supervisor.runner_command
    plughost.runners.supervisor.runner_command = fake_runner.replacing(real, WRONG_IDS)
    (root / "pids").mkdir()
    # Runners are sandboxed (the default): spawn_children may write only where it is granted.
    sandbox = SETTINGS.sandbox.model_copy(update={"write_paths": [root / "pids"]})
    settings = HostSettings(
        data_dir=root / "data",
        temp_dir=root / "temp",
        call_timeout=10.0,
        runner=SETTINGS.model_copy(update={"sandbox": sandbox}),
        plugin_limits={HOG: ResourceLimits(memory_mb=HOG_LIMIT_MB)},
    )
    host = PluginHost(plugin_dirs(root), settings=settings)
    spawned: set[int] = set()
    host.events.add_callback(
        lambda e: spawned.add(e.details["pid"]) if e.kind.value == "runner.spawned" else None
    )
    rng = random.Random(args.seed)
    soak = Soak(host, root, f"plughost-soak-{uuid.uuid4().hex}", Intruder(), rng, args.fault_rate)
    try:
        await host.start()
        if host.problems:
            raise RuntimeError(f"plugins failed to load: {list(host.problems)}")
        soak.neighbour_tools = tuple([await model_name(host, p, "echo") for p in NEIGHBOURS])
        lanes = schedule(args.faults, rng, frozenset(args.only))
        stop = asyncio.Event()
        load = asyncio.create_task(neighbour_load(soak, args.rate, args.inflight, stop))
        watch = asyncio.create_task(watch_loop(soak, stop))
        try:
            await asyncio.sleep(3.0)  # warm up under load before measuring anything
            rss_before = rss_mb()
            print(f"{args.faults} faults, at most {args.fault_rate:g}/s...", file=sys.stderr)
            fault_seconds = await alternate(soak, lanes, args)
        finally:
            stop.set()
            await asyncio.gather(load, watch)
        rss_after = rss_mb()
    finally:
        await host.aclose()
        soak.intruder.close()
    rss_closed = rss_mb()
    leftovers = await _leftovers(soak, spawned)
    shutil.rmtree(root, ignore_errors=True)
    return Report(
        args,
        soak,
        {k: len(v) for k, v in lanes.items()},
        counting.failures,
        (rss_before, rss_after, rss_closed),
        leftovers,
        fault_seconds,
        len(spawned),
        load_average,
    )


async def _leftovers(soak: Soak, spawned: set[int]) -> list[str]:
    """Processes the run started that are still alive after shutdown (waits up to 10 s)."""

    def still_alive() -> list[str]:
        # The children's recorded pids are their runners' namespace's when the sandbox gives
        # runners a pid namespace (the default): there the marker in their command lines finds
        # them on the host.
        pid_namespace = (
            soak.host.sandbox is not None and "pid_namespace" in soak.host.sandbox.active
        )
        children = set() if pid_namespace else soak.children
        found = {f"pid {p}" for p in spawned | children if alive(p)}
        found |= {f"pid {p.pid}" for p in runners_of_this_process()}
        found |= {f"pid {p.pid}" for p in processes_mentioning(soak.marker)}
        return sorted(found)

    with contextlib.suppress(AssertionError):
        await wait_until(lambda: not still_alive(), timeout=10, interval=0.1, what="exits")
    return still_alive()


def _target(name: str, value: float, target: float, unit: str = "") -> str:
    if value <= target:
        return f"- {name} ≤ {target:g}{unit}: met ({value:g}{unit})"
    return f"- {name} ≤ {target:g}{unit}: MISSED by {value - target:.3g}{unit} ({value:g}{unit})"


def _ms(samples: list[float], pct: float) -> str:
    return f"{benchlib.percentile(samples, pct) * 1000:.1f}"


AFTERMATH = 0.5
"""Seconds after a fault ends that still count as its doing (the restart follows a crash)."""


def attribution(soak: Soak, threshold: float) -> list[tuple[str, float, float]]:
    """Per fault kind: the share of fault-window neighbour calls due while it was in
    progress (or within AFTERMATH after), and the same share among calls slower than
    ``threshold``; most over-represented first."""
    windows = sorted(w for w in soak.windows if w[2] == "faults")
    window_starts = [start for start, _, _ in windows]
    calls = []
    for due, latency in zip(soak.due, soak.latency, strict=True):
        index = bisect.bisect_right(window_starts, due) - 1
        if index >= 0 and due < windows[index][1]:
            calls.append((due, latency))
    slow = [due for due, latency in calls if latency >= threshold]
    rows = []
    for name in sorted({name for _, _, name in soak.spans}):
        spans = sorted((start, end + AFTERMATH) for start, end, n in soak.spans if n == name)
        merged: list[list[float]] = []
        for start, end in spans:
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        starts = [start for start, _ in merged]

        def during(
            when: float, merged: list[list[float]] = merged, starts: list[float] = starts
        ) -> bool:
            index = bisect.bisect_right(starts, when) - 1
            return index >= 0 and when <= merged[index][1]

        share_all = sum(during(due) for due, _ in calls) / max(1, len(calls))
        share_slow = sum(during(due) for due in slow) / max(1, len(slow))
        rows.append((name, share_all, share_slow))
    return sorted(rows, key=lambda row: row[2] / row[1] if row[1] else 0.0, reverse=True)


def render(report: Report) -> tuple[str, dict[str, float]]:
    """The markdown of the section, and the figures that have targets."""
    soak, args = report.soak, report.args
    latencies = soak.by_window(soak.due, soak.latency)
    base, faults = latencies["quiet"], latencies["faults"]
    lags = soak.by_window(soak.lag_at, soak.lag)
    spread = {
        kind: sorted(benchlib.percentile(w, 99) * 1000 for w in windows)
        for kind, windows in soak.per_window(soak.due, soak.latency).items()
    }
    p99_base, p99_faults = benchlib.percentile(base, 99), benchlib.percentile(faults, 99)
    ratio = p99_faults / p99_base
    injected = sum(sum(c.values()) for c in soak.outcomes.values())
    crashes = len(report.host_failures)
    before, after, closed = report.rss
    figures = {
        "lost": len(soak.lost),
        "crashes": crashes,
        "ratio": ratio,
        "leftovers": len(report.leftovers),
        "neighbour_failures": len(soak.neighbour_failures),
    }
    flags = [a for a in sys.argv[1:] if a != "--no-write"]
    command = f"`{shlex.join(['.venv/bin/python', 'scripts/soak.py', *flags])}`"
    mix_rows = [
        f"| {kind.name} | {kind.lane} | {sum(soak.outcomes.get(kind.name, Counter()).values())} | "
        f"{', '.join(sorted(kind.expect))} | "
        f"{', '.join(f'{o} {n}' for o, n in soak.outcomes.get(kind.name, Counter()).most_common())}"
        " |"
        for kind in MIX
    ]
    limited = (
        f"the host kills the runner once its RSS passes limits.memory_mb = {HOG_LIMIT_MB} MiB "
        f"(`grow` would stop by itself at {GROW_CAP_MB} MiB)"
    )
    lines = [
        "## Soak: faults injected next to well-behaved neighbours",
        "",
        benchlib.machine_line(),
        "",
        f"Command: {command}",
        "",
        f"Two echo neighbours called through `host.invoke` at {args.rate:g} calls/s (up to "
        f"{args.inflight} in flight; each call timed from when it was due) for the whole run. "
        f"{injected} faults were injected, at most {args.fault_rate:g} a second, in "
        f"{args.window:g} s windows ({report.fault_seconds:.0f} s in all, counted until every "
        f"runner was ready again) alternating with {args.quiet:g} s quiet windows, the baseline; "
        f"{len(report.lanes)} lanes (one per misbehaving runner, one at a time, plus "
        f"{FAST_WORKERS} workers for the cheap faults). "
        f"{report.runners_spawned} runner processes were started in all. Memory growth: {limited}. "
        f"Runners ran in the default sandbox ({sandbox_line(soak)}). "
        f"Runner settings: heartbeat every {SETTINGS.heartbeat_interval:g} s, hung after "
        f"{SETTINGS.heartbeat_misses} missed beats, a sync call may overrun by "
        f"{SETTINGS.stuck_grace:g} s, on_load may take {SETTINGS.on_load_timeout:g} s; restarts "
        f"back off from {SETTINGS.backoff_initial:g} s to {SETTINGS.backoff_max:g} s and are never "
        "given up on here (the give-up path has its own test in "
        "tests/integration/test_fault_storm.py). "
        f"Load average when it started: {report.load:.1f} on {os.cpu_count()} CPUs (the ratio "
        "compares windows of one run, but a loaded machine stretches both tails).",
        "",
        "| figure | value | target |",
        "|---|---:|---:|",
        f"| lost results (no result within deadline + {MARGIN:g} s) | {len(soak.lost)} | "
        f"{TARGET_LOST} |",
        f"| host crashes (dead supervisors, unretrieved task errors) | {crashes} | "
        f"{TARGET_CRASHES} |",
        f"| neighbour failures | {len(soak.neighbour_failures)} | 0 |",
        f"| neighbour p50 quiet / faults (ms) | {benchlib.median(base) * 1000:.2f} / "
        f"{benchlib.median(faults) * 1000:.2f} | |",
        f"| neighbour p99 quiet / faults (ms) | {p99_base * 1000:.2f} / "
        f"{p99_faults * 1000:.2f} | |",
        f"| neighbour p99 ratio (faults / quiet) | {ratio:.2f}x | ≤ {TARGET_P99_RATIO:g}x |",
        f"| neighbour p99 of each window, median (min–max), quiet (ms) | "
        f"{benchlib.median(spread['quiet']):.2f} ({spread['quiet'][0]:.2f}–"
        f"{spread['quiet'][-1]:.2f}) | |",
        f"| neighbour p99 of each window, median (min–max), faults (ms) | "
        f"{benchlib.median(spread['faults']):.2f} ({spread['faults'][0]:.2f}–"
        f"{spread['faults'][-1]:.2f}) | |",
        f"| host event-loop lateness p99 / max, quiet (ms) | {_ms(lags['quiet'], 99)} / "
        f"{max(lags['quiet']) * 1000:.1f} | |",
        f"| host event-loop lateness p99 / max, faults (ms) | {_ms(lags['faults'], 99)} / "
        f"{max(lags['faults']) * 1000:.1f} | |",
        f"| neighbour calls (quiet + faults) | {len(base)} + {len(faults)} | |",
        f"| most neighbour calls in flight | {soak.max_inflight} | ≤ {args.inflight} |",
        f"| leftover processes after shutdown | {len(report.leftovers)} | {TARGET_LEFTOVERS} |",
        f"| host RSS before / after faults / after shutdown (MB) | {before:.0f} / {after:.0f} / "
        f"{closed:.0f} | |",
        f"| faults with an outcome other than the expected one | {len(soak.unexpected)} | |",
        "",
        "Targets:",
        "",
        _target("lost results", len(soak.lost), TARGET_LOST),
        _target("host crashes", crashes, TARGET_CRASHES),
        _target("neighbour p99 ratio", round(ratio, 2), TARGET_P99_RATIO, "x"),
        _target("leftover processes", len(report.leftovers), TARGET_LEFTOVERS),
        "",
        "Fault mix (drawn with seed "
        f"{args.seed}; outcome `ok` is a successful result, the others are error codes or, for "
        "reloads and socket faults, what the host did):",
        "",
        "| fault | lane | injected | expected | outcomes |",
        "|---|---|---:|---|---|",
        *mix_rows,
    ]
    lines += [
        "",
        "Where the slowest neighbour calls fall: the share of fault-window neighbour calls that "
        f"were due while a fault of each kind was in progress (or up to {AFTERMATH:g} s after "
        "it, while its runner restarted), among all of them and among the slowest 1% (slower "
        f"than the p99, {p99_faults * 1000:.2f} ms). Faults overlap, so the shares do not add "
        "up; a ratio well above 1 marks the faults that slow the neighbours.",
        "",
        "| fault | share of all calls | share of the slowest 1% | ratio |",
        "|---|---:|---:|---:|",
        *(
            f"| {name} | {share_all:.1%} | {share_slow:.1%} | "
            f"{share_slow / share_all if share_all else 0:.1f} |"
            for name, share_all, share_slow in attribution(soak, p99_faults)
        ),
    ]
    if soak.unexpected:
        lines += ["", "Unexpected outcomes (first 10):", ""]
        lines += [f"- {u}" for u in soak.unexpected[:10]]
    return "\n".join(lines), figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--faults", type=int, help="faults to inject (1000; --quick: 100)")
    parser.add_argument("--quick", action="store_true", help="100 faults")
    parser.add_argument("--rate", type=float, default=1000.0, help="neighbour calls per second")
    parser.add_argument(
        "--fault-rate", type=float, default=8.0, help="faults started per second, at most"
    )
    parser.add_argument("--inflight", type=int, default=256, help="neighbour calls in flight, max")
    parser.add_argument("--window", type=float, default=10.0, help="seconds of a fault window")
    parser.add_argument("--quiet", type=float, default=4.0, help="seconds of a quiet window")
    parser.add_argument("--seed", type=int, default=20240611)
    parser.add_argument(
        "--only", nargs="*", default=[], help="inject only these lanes (fast, crash, ...)"
    )
    parser.add_argument("--no-write", action="store_true", help="print, do not write the docs")
    args = parser.parse_args()
    args.faults = args.faults or (100 if args.quick else 1000)
    report = asyncio.run(soak_run(args))
    markdown, figures = render(report)
    print(markdown)
    if report.soak.neighbour_failures or report.soak.lost or report.leftovers:
        print(
            "\nfirst problems:",
            *report.soak.neighbour_failures[:5],
            *report.soak.lost[:5],
            *report.leftovers[:5],
            sep="\n  ",
        )
    if not args.no_write:
        benchlib.write_section("soak", markdown)
    print(
        f"\nsoak: neighbour p99 ratio (faults / quiet) {figures['ratio']:.2f}x "
        f"(target <= {TARGET_P99_RATIO:g}x), lost {figures['lost']}, host crashes "
        f"{figures['crashes']}, neighbour failures {figures['neighbour_failures']}, leftovers "
        f"{figures['leftovers']}; load average at start {report.load:.1f} on {os.cpu_count()} CPUs"
        + ("" if args.no_write else "; written to docs/benchmarks.md (soak)"),
        file=sys.stderr,
    )
    met = (
        figures["lost"] <= TARGET_LOST
        and figures["crashes"] <= TARGET_CRASHES
        and figures["ratio"] <= TARGET_P99_RATIO
        and figures["leftovers"] <= TARGET_LEFTOVERS
        and figures["neighbour_failures"] == 0
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
