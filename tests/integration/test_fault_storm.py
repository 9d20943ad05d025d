"""Many faults at once against real runners: every call answered once, neighbours untouched.

The misbehaving plugins of tests/plugins/ each get a focused test first
(deadlocks, unbounded memory, children left behind, an on_load that never
returns, a crash loop, a runner that answers with the wrong request ids). The
storm then injects all of them, and garbage on the host's sockets, together
while a steady load of calls runs against two well-behaved neighbours, and
checks every promise of the host at once.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import plughost.runners.supervisor
from plughost.events import EventKind
from plughost.host import PluginHost
from plughost.settings import HostSettings, ResourceLimits
from plughost_sdk.models import ToolExecutionResult
from tests import fake_runner
from tests.conftest import HOST_PIDS, TEST_PLUGINS, fast_settings
from tests.fault_injection import (
    MARGIN,
    EventLog,
    Intruder,
    Ledger,
    alive,
    copy_plugin,
    invoke_with_deadline,
    kill_all,
    model_name,
    outcome,
    patient_settings,
    pids_recorded,
    processes_mentioning,
    rss_mb,
    runners_of_this_process,
    write_bare_plugin,
)
from tests.waiting import wait_until

STORM_INFLIGHT = 32
"""Neighbour calls kept in flight during the storm (scripts/soak.py goes to 256)."""
STORM_ROUNDS = 2
"""Times each fault lane of the storm runs through its list of faults."""
STORM_DEADLINE = 90.0
"""Seconds the storm may take (about 20 on an idle 2-core machine)."""
RSS_GROWTH_LIMIT_MB = 50
"""How much the host process may grow over a storm; a leak of a few KB per call exceeds it."""
GROW_CAP_MB = 1024
"""Where memory_hog's ``grow`` stops by itself (it holds the memory until its runner dies)."""
HOG_LIMIT_MB = 768
"""``limits.memory_mb`` given to memory_hog's runner where a test sets one."""

ECHO = TEST_PLUGINS / "echo"
FAULTY = TEST_PLUGINS / "faulty"
DEADLOCK = TEST_PLUGINS / "deadlock"
MEMORY_HOG = TEST_PLUGINS / "memory_hog"
SPAWN_CHILDREN = TEST_PLUGINS / "spawn_children"
BREAKABLE = TEST_PLUGINS / "breakable"
WRONG_IDS = "tests.wrong-ids"

Starter = Callable[..., Awaitable[tuple[PluginHost, EventLog]]]


async def call_within(
    host: PluginHost, plugin_id: str, tool: str, deadline: float, **arguments: object
) -> ToolExecutionResult:
    """Call with an explicit deadline and check the result came within deadline + MARGIN."""
    loop = asyncio.get_running_loop()
    begun = loop.time()
    async with asyncio.timeout(deadline + MARGIN):
        result = await invoke_with_deadline(host, plugin_id, tool, deadline, **arguments)
    assert loop.time() - begun < deadline + MARGIN
    return result


async def echo_pid(host: PluginHost) -> int:
    """The pid of the neighbour's runner as the host knows it, once it has answered a call.

    Not the pid the plugin sees: in its pid namespace every runner is pid 2.
    """
    result = await host.invoke("echo", {"text": "still here"})
    assert result.success, result.error_message
    runner = host.runner_for("tests.echo")
    assert runner is not None and runner.pid is not None
    return runner.pid


def use_fake_runner(monkeypatch: pytest.MonkeyPatch, plugin_id: str) -> None:
    """Make the supervisor start tests/fake_runner.py for ``plugin_id``, real runners for others."""
    real = plughost.runners.supervisor.runner_command
    monkeypatch.setattr(
        plughost.runners.supervisor, "runner_command", fake_runner.replacing(real, plugin_id)
    )


@pytest.fixture
async def started() -> AsyncIterator[Starter]:
    """Start a host with an EventLog attached before start; stop it afterwards."""
    hosts: list[PluginHost] = []

    async def start(dirs: list[Path], settings: HostSettings) -> tuple[PluginHost, EventLog]:
        host = PluginHost(dirs, settings=settings)
        log = EventLog()
        host.events.add_callback(log)
        hosts.append(host)
        await host.start()
        return host, log

    try:
        yield start
    finally:
        for host in hosts:
            await host.aclose()


async def test_an_on_load_that_never_returns_fails_after_its_timeout_while_the_others_load(
    tmp_path: Path, started: Starter
) -> None:
    hang = copy_plugin(BREAKABLE, tmp_path / "hang", "tests.hang-on-load", fault="on_load_hang")
    on_load_timeout = 1.0
    begun = time.time()  # the clock of the events
    settings = fast_settings(tmp_path, on_load_timeout=on_load_timeout)
    host, events = await started([ECHO, hang], settings)
    took = time.time() - begun

    problem = host.problems["tests.hang-on-load"]
    assert (problem.stage, problem.reason) == ("on_load", "on_load did not finish within 1 s")
    [loaded] = events.of("tests.echo", {EventKind.PLUGIN_LOADED})
    neighbour = loaded.time - begun  # a runner spawned and a plugin loaded, in this start
    # Given up at the timeout, after a spawn like the neighbour's (1.5 s against 3 s here).
    assert on_load_timeout <= took < 2 * (on_load_timeout + neighbour), (took, neighbour)
    [failed] = events.of("tests.hang-on-load", {EventKind.PLUGIN_FAILED})
    # Echo served long before the hang was given up.
    assert failed.time - loaded.time > on_load_timeout / 2
    [spawned] = events.of("tests.hang-on-load", {EventKind.RUNNER_SPAWNED})
    assert host.runner_for("tests.hang-on-load") is None
    assert not alive(spawned.details["pid"])
    assert not await host.tools.has_tool("state")
    assert (await host.invoke("echo", {"text": "up"})).content == "up"


async def test_an_on_load_that_blocks_its_runner_is_reported_with_the_watchdogs_reason(
    tmp_path: Path, started: Starter
) -> None:
    block = copy_plugin(BREAKABLE, tmp_path / "block", "tests.block", fault="on_load_block")
    settings = fast_settings(tmp_path, on_load_timeout=1.0, ready_timeout=1.5, max_restarts=1)
    host, events = await started([ECHO, block], settings)

    problem = host.problems["tests.block"]
    assert problem.stage == "start"
    assert "heartbeat" in problem.reason
    assert problem.path == block.resolve()
    [failed] = events.of("tests.block", {EventKind.PLUGIN_FAILED})
    assert failed.details["reason"] == problem.reason
    assert host.runner_for("tests.block") is None
    assert [r.plugin_ids for r in host.runners()] == [["tests.echo"]]
    assert (await host.invoke("echo", {"text": "up"})).content == "up"


@pytest.mark.parametrize(
    ("tool", "deadline", "code", "reason"),
    [
        ("deadlock_sync", 0.5, "timeout", "synchronous tool call ran past its deadline"),
        # The loop is blocked, not gone: the call runs to its deadline, then the runner goes.
        (
            "deadlock_on_loop",
            2.0,
            "timeout",
            "'deadlock_on_loop' of plugin 'tests.deadlock' has blocked the runner's event loop",
        ),
    ],
)
async def test_a_deadlocked_tool_costs_its_call_and_its_own_runner_only(
    tmp_path: Path, started: Starter, tool: str, deadline: float, code: str, reason: str
) -> None:
    host, events = await started([ECHO, DEADLOCK], patient_settings(tmp_path))
    neighbour = await echo_pid(host)
    runner = host.runner_for("tests.deadlock")
    assert runner is not None
    old_pid = runner.pid

    result = await call_within(host, "tests.deadlock", tool, deadline)

    assert result.error_code == code
    crashed = await events.next(EventKind.RUNNER_CRASHED, "tests.deadlock")
    assert reason in crashed.message
    after = await call_within(host, "tests.deadlock", "alive", 10.0)
    assert after.content == "alive"
    assert runner.pid != old_pid
    assert await echo_pid(host) == neighbour


@pytest.mark.parametrize(
    ("limit_mb", "deadline", "code", "reason"),
    [
        (None, 2.0, "timeout", "synchronous tool call ran past its deadline"),
        # The limit's kill must end the call, however long growing takes on a busy machine.
        (HOG_LIMIT_MB, 60.0, "plugin_crashed", "memory limit exceeded"),
    ],
)
async def test_memory_growing_without_bound_costs_only_its_call_and_its_runner(
    tmp_path: Path,
    started: Starter,
    limit_mb: int | None,
    deadline: float,
    code: str,
    reason: str,
) -> None:
    """With limits.memory_mb the host kills the runner; without, the stuck call recycles it."""
    settings = patient_settings(tmp_path, stuck_grace=0.5)
    settings.plugin_limits = {"tests.memory-hog": ResourceLimits(memory_mb=limit_mb)}
    host, events = await started([ECHO, MEMORY_HOG], settings)
    neighbour = await echo_pid(host)

    result = await call_within(host, "tests.memory-hog", "grow", deadline, max_mb=GROW_CAP_MB)

    assert result.error_code == code
    crashed = await events.next(EventKind.RUNNER_CRASHED, "tests.memory-hog")
    assert reason in crashed.message
    after = (await call_within(host, "tests.memory-hog", "memory", 10.0)).structured_content
    assert after["rss_mb"] < 200  # a new runner, without the memory
    assert await echo_pid(host) == neighbour


async def test_children_a_plugin_leaves_behind_die_with_its_runners_process_group(
    tmp_path: Path, started: Starter
) -> None:
    settings = patient_settings(tmp_path, sandbox=HOST_PIDS)  # the test checks the pids recorded
    host, events = await started([ECHO, SPAWN_CHILDREN], settings)
    neighbour = await echo_pid(host)
    pid_dir, marker = tmp_path / "pids", f"plughost-test-{uuid.uuid4().hex}"

    result = await call_within(
        host, "tests.spawn-children", "spawn_and_exit", 15.0, pid_dir=str(pid_dir), marker=marker
    )

    assert result.error_code == "plugin_crashed"
    assert "exited with code 19" in result.error_message
    pids = pids_recorded(pid_dir)
    assert set(pids) == {"sleep", "parent", "grandchild"}
    try:
        await wait_until(
            lambda: not any(alive(p) for p in pids.values()), timeout=10, what="children gone"
        )
        assert processes_mentioning(marker) == []
        await events.next(EventKind.RUNNER_RESTARTED, "tests.spawn-children")
        assert await echo_pid(host) == neighbour
    finally:
        kill_all(pids.values())


async def test_a_grandchild_that_starts_its_own_session_escapes_the_process_group_kill(
    tmp_path: Path, started: Starter
) -> None:
    """Without a pid namespace the host's guarantee ends at the runner's process group.

    A double fork into a new session leaves the group, so the group kill misses it
    (the pid namespace, on by default, contains it: tests/security/test_processes.py).
    """
    host, _ = await started([SPAWN_CHILDREN], patient_settings(tmp_path, sandbox=HOST_PIDS))
    pid_dir, marker = tmp_path / "pids", f"plughost-test-{uuid.uuid4().hex}"
    try:
        result = await call_within(
            host,
            "tests.spawn-children",
            "spawn_and_exit",
            15.0,
            pid_dir=str(pid_dir),
            marker=marker,
            escape=True,
        )
        assert result.error_code == "plugin_crashed"
        pids = pids_recorded(pid_dir)
        in_group = [pids["sleep"], pids["parent"], pids["grandchild"]]
        await wait_until(
            lambda: not any(alive(p) for p in in_group), timeout=10, what="group members gone"
        )
        assert alive(pids["escaped"])
        assert [p.pid for p in processes_mentioning(marker)] == [pids["escaped"]]
    finally:
        kill_all(pids_recorded(pid_dir).values())


async def test_a_runner_answering_with_wrong_request_ids_fails_only_its_own_calls(
    tmp_path: Path, started: Starter, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fake_runner(monkeypatch, WRONG_IDS)
    fake = write_bare_plugin(tmp_path / "wrong_ids", WRONG_IDS)
    host, _ = await started([ECHO, fake], patient_settings(tmp_path))
    neighbour = await echo_pid(host)
    runner = host.runner_for(WRONG_IDS)
    assert runner is not None and runner.state.value == "ready"

    async def misbehave(how: str, tag: str, deadline: float = 5.0):
        return await call_within(host, WRONG_IDS, "misbehave", deadline, how=how, tag=tag)

    shifted = await misbehave("shifted", "s", deadline=1.0)
    assert shifted.error_code == "timeout"
    duplicate = await misbehave("duplicate", "d")
    assert (duplicate.success, duplicate.content) == (True, "d")
    bad = await misbehave("bad_result", "b")
    assert bad.error_code == "bad_payload"
    malformed = await misbehave("malformed_error", "m")
    assert malformed.error_code == "bad_payload"
    assert "error" in malformed.error_message
    after_bad_event = await misbehave("malformed_event", "e")
    assert (after_bad_event.success, after_bad_event.content) == (True, "e")

    tags = [f"t{n}" for n in range(20)]
    mixed = await asyncio.gather(
        *(misbehave("answer", tag) for tag in tags),
        *(misbehave("shifted", f"x{n}", deadline=1.0) for n in range(5)),
    )
    assert [r.content for r in mixed[:20]] == tags
    assert [r.error_code for r in mixed[20:]] == ["timeout"] * 5
    assert runner.generation == 1  # never restarted: lies cost calls, not the runner
    assert await echo_pid(host) == neighbour


async def test_a_crash_looping_plugin_backs_off_gives_up_with_its_reason_and_a_reload_revives_it(
    tmp_path: Path, started: Starter
) -> None:
    folder = copy_plugin(BREAKABLE, tmp_path / "loop", "tests.breakable", fault="crash_after_load")
    settings = patient_settings(
        tmp_path, max_restarts=3, restart_window=60, backoff_initial=0.1, backoff_max=5
    )
    host, events = await started([ECHO, folder], settings)
    neighbour = await echo_pid(host)
    calls, stop = Ledger(), asyncio.Event()
    load = asyncio.create_task(echo_until(host, calls, stop))

    gave_up = await events.next(EventKind.RUNNER_GAVE_UP, "tests.breakable")

    runner_kinds = {
        EventKind.RUNNER_SPAWNED,
        EventKind.RUNNER_READY,
        EventKind.RUNNER_RESTARTED,
        EventKind.RUNNER_CRASHED,
        EventKind.RUNNER_GAVE_UP,
    }
    sequence = [e.kind for e in events.of("tests.breakable", runner_kinds)]
    restart = [EventKind.RUNNER_CRASHED, EventKind.RUNNER_SPAWNED, EventKind.RUNNER_RESTARTED]
    assert sequence == [
        EventKind.RUNNER_SPAWNED,
        EventKind.RUNNER_READY,
        *restart * 3,
        EventKind.RUNNER_CRASHED,
        EventKind.RUNNER_GAVE_UP,
    ]
    crashes = events.of("tests.breakable", {EventKind.RUNNER_CRASHED})
    respawns = events.of("tests.breakable", {EventKind.RUNNER_SPAWNED})[1:]
    delays = [spawn.time - crash.time for crash, spawn in zip(crashes, respawns, strict=False)]
    assert [round(d, 2) >= 0.1 * 2**n for n, d in enumerate(delays)] == [True] * 3
    assert "exited with code 21" in gave_up.message
    assert "3 restarts in 60 s" in gave_up.message
    problem = host.problems["tests.breakable"]
    assert (problem.stage, problem.reason) == ("crashed", "exited with code 21")
    assert (await host.invoke("state", {})).error_code == "tool_not_found"

    (folder / "fault.txt").write_text("")
    assert await host.reload_plugin("tests.breakable")

    assert (await events.next(EventKind.RELOAD_SUCCEEDED, "tests.breakable")).plugin_id
    revived = await host.invoke("state", {})
    assert (revived.success, revived.content) == (True, "healthy")
    assert "tests.breakable" not in host.problems
    # The runner that gave up is gone from the books; only the revived one serves.
    serving = [r for r in host.runners() if "tests.breakable" in r.sources]
    assert serving == [host.runner_for("tests.breakable")]
    assert serving[0].state.value == "ready"
    stop.set()
    await load
    assert (calls.lost, calls.wrong, calls.outcomes["echo ok"] > 0) == ([], [], True)
    assert await echo_pid(host) == neighbour


async def echo_until(host: PluginHost, ledger: Ledger, stop: asyncio.Event) -> None:
    """Call tests.echo back to back until ``stop``; each call must echo its own text."""
    for n in itertools.count():
        if stop.is_set():
            return
        text = f"echo-{n}"
        call = host.invoke("echo", {"text": text})
        if not await ledger.run(text, "echo", 10.0, call, _echoes(text)):
            return  # recorded; see neighbour_load


# --- the storm -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Fault:
    """One injected tool call and the outcomes that keep the host's promises."""

    plugin_id: str
    tool: str
    deadline: float
    expect: frozenset[str]
    how: str = ""  # for the fake runner's misbehave tool

    @property
    def label(self) -> str:
        return f"{self.tool}:{self.how}" if self.how else self.tool


def call_lanes() -> list[list[Fault]]:
    """The tool-call faults, one list per runner: a lane injects its list one call at a time."""
    crash, errors, deadlock = "tests.faulty-crash", "tests.faulty-errors", "tests.deadlock"
    table = [
        [
            (crash, "exit_mid_call", 5.0, "plugin_crashed"),
            (crash, "sigkill_mid_call", 5.0, "plugin_crashed"),
            (crash, "segfault", 5.0, "plugin_crashed"),
            # A call that blocks the loop runs to its deadline: short ones keep the storm short.
            (crash, "busy_loop", 2.0, "plugin_crashed timeout"),
            # busy_loop before it answers at its deadline but may keep the loop blocked until
            # the runner is recycled, so this next call on the same runner may see that crash.
            (crash, "busy_loop_sync", 0.5, "timeout plugin_crashed"),
        ],
        [
            (errors, "unserializable", 10.0, "invalid_result"),
            (errors, "unserializable_metadata", 10.0, "invalid_result"),
            (errors, "oversize", 10.0, "message_too_large"),
            (errors, "flood_stdout", 10.0, "ok"),
            (errors, "hang_async", 0.5, "timeout"),
        ],
        [
            (deadlock, "deadlock_sync", 0.5, "timeout"),
            (deadlock, "deadlock_on_loop", 2.0, "plugin_crashed timeout"),
            # Over limits.memory_mb: the kill must come before the deadline. Writing 768 MiB
            # and the watchdog's check compete with every other lane on a loaded machine.
            ("tests.memory-hog", "grow", 10.0, "plugin_crashed"),
        ],
        [("tests.spawn-children", "spawn_and_exit", 15.0, "plugin_crashed")],
    ]
    lanes = [[Fault(p, t, d, frozenset(ok.split())) for p, t, d, ok in lane] for lane in table]
    lies = [
        ("shifted", 1.0, "timeout"),
        ("duplicate", 5.0, "ok"),
        ("bad_result", 5.0, "bad_payload"),
    ]
    lies += [("malformed_error", 5.0, "bad_payload"), ("malformed_event", 5.0, "ok")]
    lanes.append([Fault(WRONG_IDS, "misbehave", d, frozenset({ok}), how) for how, d, ok in lies])
    return lanes


@dataclass
class Storm:
    """The storm's host, its records, and what surprised it."""

    host: PluginHost
    events: EventLog
    tmp_path: Path
    marker: str
    ledger: Ledger = field(default_factory=Ledger)
    surprises: list[str] = field(default_factory=list)
    """Faults other than calls (reloads, intrusions) whose outcome broke a promise."""
    injected: Counter[str] = field(default_factory=Counter)
    ids: itertools.count[int] = field(default_factory=itertools.count)
    neighbour_tools: tuple[str, str] = ("", "")
    """The model-facing names of tests.echo-a's and tests.echo-b's ``echo``."""

    async def inject(self, fault: Fault) -> None:
        n = next(self.ids)
        arguments: dict[str, object] = {"how": fault.how, "tag": fault.how} if fault.how else {}
        if fault.tool == "spawn_and_exit":
            arguments = {"pid_dir": str(self.tmp_path / "pids" / str(n)), "marker": self.marker}
        call = invoke_with_deadline(
            self.host, fault.plugin_id, fault.tool, fault.deadline, **arguments
        )

        def check(result: ToolExecutionResult) -> str:
            if outcome(result) in fault.expect:
                return ""
            return f"{outcome(result)}, expected {sorted(fault.expect)}: {result.error_message}"

        await self.ledger.run(
            f"fault-{n}-{fault.label}", fault.plugin_id, fault.deadline, call, check
        )
        self.injected[fault.label] += 1


async def call_lane(storm: Storm, faults: list[Fault]) -> None:
    for fault in faults * STORM_ROUNDS:
        await storm.inject(fault)


async def neighbour_load(storm: Storm, worker: int, stop: asyncio.Event) -> None:
    """Call the neighbours back to back until ``stop``; each call echoes its own id."""
    for n in itertools.count():
        if stop.is_set():
            return
        call_id = f"n{worker}-{n}"
        tool = storm.neighbour_tools[n % 2]
        timeout = storm.host.settings.call_timeout
        call = storm.host.invoke(tool, {"text": call_id})
        if not await storm.ledger.run(call_id, "neighbour", timeout, call, _echoes(call_id)):
            return  # recorded; a worker that went on would spin once the host is gone


def _echoes(text: str) -> Callable[[ToolExecutionResult], str]:
    def check(result: ToolExecutionResult) -> str:
        if result.success and result.content == text:
            return ""
        return f"{outcome(result)} {result.content!r} {result.error_message}"

    return check


async def breakable_load(storm: Storm, stop: asyncio.Event) -> None:
    """Call the plugin being reloaded with broken versions: the old version must answer."""
    for n in itertools.count():
        if stop.is_set():
            return
        call = storm.host.invoke("state", {})
        if not await storm.ledger.run(
            f"breakable-{n}", "breakable", 10.0, call, _echoes("healthy")
        ):
            return  # recorded; see neighbour_load


async def reload_lane(storm: Storm, folder: Path) -> None:
    """Reload a plugin with broken versions (and finally a good one); only the good one wins."""
    for fault in ["import", "on_load_raise", "on_load_hang", ""] * STORM_ROUNDS:
        (folder / "fault.txt").write_text(fault)
        succeeded = await storm.host.reload_plugin("tests.breakable")
        storm.injected[f"reload:{fault or 'healthy'}"] += 1
        if succeeded != (fault == ""):
            storm.surprises.append(f"reload with fault {fault!r} returned {succeeded}")
        if fault:
            failed = await storm.events.next(EventKind.RELOAD_FAILED, "tests.breakable")
            stage = "import" if fault == "import" else "on_load"
            if failed.details["stage"] != stage:
                storm.surprises.append(f"reload with {fault!r} failed at {failed.details}")


async def intruder_lane(storm: Storm, intruder: Intruder, rng: random.Random) -> None:
    """Garbage and forged hellos on the sockets of random runners and of the neighbours.

    A runner that restarts meanwhile takes its socket with it ("unreachable"); the
    neighbours never restart, so everything sent to them must be answered or rejected.
    """
    neighbours = [storm.host.runner_for(p) for p in ("tests.echo-a", "tests.echo-b")]
    for n in range(STORM_ROUNDS * 5):
        how = ("forged", "old_protocol", "stolen")[n % 3]
        ready = [r for r in storm.host.runners() if r.state.value == "ready"]
        anyone, neighbour = rng.choice(ready), rng.choice(neighbours)
        assert neighbour is not None
        outcomes = [
            (await intruder.garbage(anyone, patience=1.0), {"rejected", "unreachable"}),
            (await intruder.garbage(neighbour), {"rejected"}),
        ]
        if how != "stolen":  # a stolen token is refused only while the runner is connected
            answer, refusal = await intruder.forge_hello(anyone, how, patience=1.0)
            outcomes.append((answer, {refusal, "unreachable"}))
        # A stolen token recycles its runner, and the neighbours must never restart.
        answer, refusal = await intruder.forge_hello(
            neighbour, "forged" if how == "stolen" else how
        )
        outcomes.append((answer, {refusal}))
        storm.injected["garbage"] += 2
        storm.injected["forged_hello"] += len(outcomes) - 2
        for got, expected in outcomes:
            if got not in expected:
                storm.surprises.append(f"an intruder got {got!r}, not {sorted(expected)}")


def storm_plugins(tmp_path: Path) -> tuple[list[Path], Path]:
    root = tmp_path / "plugins"
    dirs = [
        copy_plugin(ECHO, root / "echo_a", "tests.echo-a"),
        copy_plugin(ECHO, root / "echo_b", "tests.echo-b"),
        copy_plugin(FAULTY, root / "faulty_crash", "tests.faulty-crash"),
        copy_plugin(FAULTY, root / "faulty_errors", "tests.faulty-errors"),
        copy_plugin(BREAKABLE, root / "hang", "tests.hang-on-load", fault="on_load_hang"),
        write_bare_plugin(root / "wrong_ids", WRONG_IDS),
        DEADLOCK,
        MEMORY_HOG,
        SPAWN_CHILDREN,
    ]
    breakable = copy_plugin(BREAKABLE, root / "breakable", "tests.breakable")
    return [*dirs, breakable], breakable


@pytest.mark.slow
async def test_a_storm_of_faults_loses_no_call_and_leaves_neighbours_and_the_host_unharmed(
    tmp_path: Path,
    started: Starter,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)  # the storm logs a great deal; keep the records few
    use_fake_runner(monkeypatch, WRONG_IDS)
    dirs, breakable = storm_plugins(tmp_path)
    settings = patient_settings(
        tmp_path, on_load_timeout=1.0, max_restarts=1000, stuck_grace=0.5, shutdown_drain=0.5
    )
    settings.plugin_limits = {"tests.memory-hog": ResourceLimits(memory_mb=HOG_LIMIT_MB)}
    host, events = await started(dirs, settings)
    assert host.problems["tests.hang-on-load"].stage == "on_load"
    assert len(host.runners()) == len(dirs) - 1
    neighbours = [host.runner_for(p) for p in ("tests.echo-a", "tests.echo-b")]
    neighbour_pids = [r.pid for r in neighbours if r is not None]
    storm = Storm(host, events, tmp_path, f"plughost-storm-{uuid.uuid4().hex}")
    storm.neighbour_tools = (
        await model_name(host, "tests.echo-a", "echo"),
        await model_name(host, "tests.echo-b", "echo"),
    )

    for _ in range(20):  # let the host reach its steady-state size before measuring
        warmup = [
            host.invoke(storm.neighbour_tools[0], {"text": "w"}) for _ in range(STORM_INFLIGHT)
        ]
        await asyncio.gather(*warmup)
    rss_before = rss_mb()

    stop = asyncio.Event()
    intruder = Intruder()
    try:
        # A deadline of the test's own, well inside pytest-timeout's: cancelling the storm
        # cleanly beats a SIGALRM landing in the middle of the event loop's bookkeeping.
        async with asyncio.timeout(STORM_DEADLINE), asyncio.TaskGroup() as load:
            for worker in range(STORM_INFLIGHT):
                load.create_task(neighbour_load(storm, worker, stop))
            load.create_task(breakable_load(storm, stop))
            async with asyncio.TaskGroup() as faults:
                for lane in call_lanes():
                    faults.create_task(call_lane(storm, lane))
                faults.create_task(reload_lane(storm, breakable))
                faults.create_task(intruder_lane(storm, intruder, random.Random(7)))
            stop.set()
    finally:
        intruder.close()
    rss_after = rss_mb()
    spawned = {e.details["pid"] for e in events.events if e.kind is EventKind.RUNNER_SPAWNED}
    children = [pid for d in (tmp_path / "pids").iterdir() for pid in pids_recorded(d).values()]
    await host.aclose()

    ledger = storm.ledger
    assert (ledger.lost, ledger.late, ledger.wrong, storm.surprises) == ([], [], [], [])
    assert ledger.answered == ledger.issued
    assert ledger.outcomes["neighbour ok"] > 20 * STORM_INFLIGHT
    assert ledger.outcomes["breakable ok"] > 0
    assert [r.pid for r in neighbours if r is not None] == neighbour_pids
    assert [r.generation for r in neighbours if r is not None] == [1, 1]
    tool_faults = {k: n for k, n in storm.injected.items() if k not in {"garbage", "forged_hello"}}
    assert len(tool_faults) == 23 and set(tool_faults.values()) == {STORM_ROUNDS}
    assert storm.injected["garbage"] > 0 and storm.injected["forged_hello"] > 0
    assert rss_after - rss_before < RSS_GROWTH_LIMIT_MB, (rss_before, rss_after)
    assert len(children) == 3 * STORM_ROUNDS
    # The children's pids are recorded from inside their runners' pid namespaces: the
    # marker in their command lines finds them on the host instead.
    await wait_until(lambda: not any(alive(p) for p in spawned), timeout=10, what="no leftovers")
    assert runners_of_this_process() == []
    assert processes_mentioning(storm.marker) == []
