"""Benchmark the runner path next to a raw pyzmq round trip and MCP stdio, in one run.

Measured side by side, in interleaved rounds so that noise from other work on
the machine hits every contender alike:

- a trivial tool call through the whole host API (``host.tools.invoke`` ->
  registry -> argument validation -> plugin provider -> supervisor -> zmq ->
  runner -> plugin and back), a raw asyncio pyzmq DEALER/ROUTER round trip
  with msgpack between two processes (scripts/bench_zmq_peer.py), and the same
  tool served over MCP stdio by the official SDK (scripts/bench_mcp_peer.py);
- throughput with 1, 16 and 256 calls in flight (256 spread over four runners,
  four copies of the echo test plugin under different ids);
- a 1 MB and a 10 MB image result (raw: the same bytes over the same kind of
  socket, copied into msgpack; raw zero-copy, 10 MB only: the bytes as their own
  frame, sent and received with ``copy=False`` and left in the frame, the floor
  for media over ZeroMQ; MCP: base64 in JSON, 10 MB only);
- runner start to ready (spawn to READY) and the idle runner's RSS;
- a CPU-bound tool (pure Python, about 40 ms a call) on 1 vs 2 local replicas
  (``plugin_replicas``), measured as scripts/bench_replicas.py does: one runner
  is one interpreter and one core, two replicas can use both.

It writes the section ``runner`` of docs/benchmarks.md.

Usage: .venv/bin/python scripts/bench_runner.py [--blocks N] [--rounds N] [--windows N]
       [--seconds S] [--starts N] [--replica-rounds N] [--no-write]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any

import bench_replicas
import benchlib
import msgpack
import psutil
import zmq
import zmq.asyncio
from mcp import Client, StdioServerParameters

from plughost.host import PluginHost
from plughost.settings import HostSettings
from plughost_sdk.models import ToolInvocation

SCRIPTS = Path(__file__).resolve().parent
ECHO_PLUGIN = benchlib.ROOT / "tests" / "plugins" / "echo"
ZMQ_PEER = SCRIPTS / "bench_zmq_peer.py"
MCP_PEER = SCRIPTS / "bench_mcp_peer.py"
COPIES = 4
REPLICA_CALLS = 32  # CPU-bound calls per round and configuration, 8 in flight
INFLIGHT = (1, 16, 256)
MB = 1_000_000

TARGET_OVERHEAD = 1.2  # host p50 / raw round trip p50, at most
TARGET_THROUGHPUT_RATIO = 0.85  # host / raw peers calls/s with 256 in flight, at least
TARGET_IMAGE = 2.0  # host 10 MB p50 / raw zero-copy 10 MB p50, at most
TARGET_READY_MS = 60.0  # runner start to ready, median, at most
TARGET_RSS_MB = 35.0  # idle runner RSS, at most

Call = Callable[[int], Awaitable[None]]


# --- the raw baseline ----------------------------------------------------------------------


class RawPeer:
    """The benchmark's ROUTER and the raw DEALER process behind it."""

    def __init__(self, context: zmq.asyncio.Context, endpoint: str) -> None:
        self._sock = context.socket(zmq.ROUTER)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.bind(endpoint)
        self.endpoint = endpoint
        self._identity = b""
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._next_id = 0
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        """Spawn the peer and wait for its hello."""
        self.process = await asyncio.create_subprocess_exec(
            sys.executable, str(ZMQ_PEER), self.endpoint
        )
        async with asyncio.timeout(30):
            self._identity, _ = await self._sock.recv_multipart()

    async def roundtrip_frames(self, body: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        """One call whose reply is ``[envelope, blob]``: the blob stays in its frame."""
        self._next_id += 1
        body["id"] = self._next_id
        await self._sock.send_multipart([self._identity, msgpack.packb(body)])
        _, frame, blob = await self._sock.recv_multipart(copy=False)
        reply: dict[str, Any] = msgpack.unpackb(frame.buffer)
        return reply, blob.buffer

    async def roundtrip(self, body: dict[str, Any]) -> dict[str, Any]:
        """One call with nothing else in flight: send, then receive the reply directly."""
        self._next_id += 1
        body["id"] = self._next_id
        await self._sock.send_multipart([self._identity, msgpack.packb(body)])
        _, frame = await self._sock.recv_multipart()
        reply: dict[str, Any] = msgpack.unpackb(frame)
        return reply

    async def receive(self) -> None:
        """Resolve :meth:`request` futures until cancelled."""
        while True:
            _, frame = await self._sock.recv_multipart()
            reply = msgpack.unpackb(frame)
            future = self._pending.pop(reply["id"], None)
            if future is not None and not future.done():
                future.set_result(reply)

    async def request(self, body: dict[str, Any]) -> dict[str, Any]:
        """One call among many in flight (needs :meth:`receive` running)."""
        self._next_id += 1
        body["id"] = self._next_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[self._next_id] = future
        await self._sock.send_multipart([self._identity, msgpack.packb(body)])
        return await future

    async def stop(self) -> None:
        """Tell the peer to stop and reap it."""
        if self.process is not None and self.process.returncode is None:
            await self._sock.send_multipart([self._identity, msgpack.packb({"op": "stop"})])
            try:
                async with asyncio.timeout(5):
                    await self.process.wait()
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        self._sock.close(linger=0)


# --- samples -------------------------------------------------------------------------------


@dataclass
class Samples:
    """Seconds per call for each contender and measure."""

    by_key: dict[str, list[float]] = field(default_factory=dict)

    def add(self, key: str, seconds: float) -> None:
        self.by_key.setdefault(key, []).append(seconds)

    def p50(self, key: str) -> float:
        return benchlib.median(self.by_key[key])

    def p99(self, key: str) -> float:
        return benchlib.percentile(self.by_key[key], 99)


async def timed(samples: Samples, key: str, call: Callable[[], Awaitable[None]]) -> None:
    start = time.perf_counter()
    await call()
    samples.add(key, time.perf_counter() - start)


@dataclass
class Bench:
    """Everything the phases share."""

    host: PluginHost
    names: list[dict[str, str]]  # per echo copy: tool -> model-facing name
    peers: list[RawPeer]
    mcp: Client
    samples: Samples = field(default_factory=Samples)
    throughput: dict[str, float] = field(default_factory=dict)
    ready_ms: list[float] = field(default_factory=list)
    ready_interpreter_ms: list[float] = field(default_factory=list)
    rss_mb: dict[str, float] = field(default_factory=dict)
    mcp_protocol: str = ""
    floors: dict[str, float] = field(default_factory=dict)
    replicas: bench_replicas.Figures = field(default_factory=dict)

    async def host_echo(self, copy: int = 0) -> None:
        invocation = ToolInvocation(tool_name=self.names[copy]["echo"], arguments={"text": "x"})
        result = await self.host.tools.invoke(invocation)
        if not result.success or result.content != "x":
            raise RuntimeError(f"host echo failed: {result.error_code} {result.error_message}")

    async def host_image(self, size: int) -> None:
        invocation = ToolInvocation(tool_name=self.names[0]["image"], arguments={"size": size})
        result = await self.host.tools.invoke(invocation)
        data = result.content_items[0].data if result.content_items else None
        if not result.success or data is None or len(data) != size:
            raise RuntimeError(f"host image failed: {result.error_code} {result.error_message}")

    async def raw_echo(self) -> None:
        reply = await self.peers[0].roundtrip({"op": "echo", "text": "x"})
        if reply["content"] != "x":
            raise RuntimeError("raw echo answered wrong")

    async def raw_image(self, size: int) -> None:
        reply = await self.peers[0].roundtrip({"op": "image", "size": size})
        if len(reply["data"]) != size:
            raise RuntimeError("raw image has the wrong size")

    async def raw_image_frame(self, size: int) -> None:
        reply, data = await self.peers[0].roundtrip_frames({"op": "image_frame", "size": size})
        if len(data) != size or not isinstance(reply["data"], msgpack.ExtType):
            raise RuntimeError("raw zero-copy image has the wrong size")

    async def mcp_echo(self) -> None:
        result = await self.mcp.call_tool("echo", {"text": "x"})
        if result.is_error or getattr(result.content[0], "text", None) != "x":
            raise RuntimeError("MCP echo failed")

    async def mcp_image(self, size: int) -> None:
        result = await self.mcp.call_tool("image", {"size": size})
        data = getattr(result.content[0], "data", "")
        # The base64 text is left undecoded: MCP is timed up to the point the JSON is parsed.
        if result.is_error or len(data) != 4 * -(-size // 3):
            raise RuntimeError("MCP image failed")


# --- phases --------------------------------------------------------------------------------


async def latency_phase(bench: Bench, blocks: int) -> None:
    """Trivial calls in short interleaved blocks (raw and host swap places each block)."""
    s = bench.samples
    for index in range(blocks):
        pair = [("raw echo", bench.raw_echo), ("host echo", bench.host_echo)]
        for key, call in pair if index % 2 else reversed(pair):
            for _ in range(50):
                await timed(s, key, call)
        for _ in range(7):
            await timed(s, "mcp echo", bench.mcp_echo)


async def image_phase(bench: Bench, rounds: int) -> None:
    """1 MB and 10 MB images, interleaved; MCP for 10 MB only (it takes about a second)."""
    s = bench.samples
    for index in range(rounds):
        for _ in range(5):
            await timed(s, "raw 1MB", lambda: bench.raw_image(MB))
            await timed(s, "host 1MB", lambda: bench.host_image(MB))
        for _ in range(3):
            await timed(s, "raw 10MB", lambda: bench.raw_image(10 * MB))
            await timed(s, "raw0 10MB", lambda: bench.raw_image_frame(10 * MB))
            await timed(s, "host 10MB", lambda: bench.host_image(10 * MB))
        if index < 4:
            await timed(s, "mcp 10MB", lambda: bench.mcp_image(10 * MB))


async def calls_per_second(call: Call, inflight: int, seconds: float) -> float:
    """Run ``inflight`` workers back to back for ``seconds``; return completed calls/s."""
    done = 0
    stop_at = time.perf_counter() + seconds

    async def worker(index: int) -> None:
        nonlocal done
        while time.perf_counter() < stop_at:
            await call(index)
            done += 1

    start = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        for index in range(inflight):
            group.create_task(worker(index))
    return done / (time.perf_counter() - start)


async def throughput_phase(bench: Bench, windows: int, seconds: float) -> None:
    """Calls/s at each in-flight level; 256 spreads over every runner (and raw peer).

    Each level runs ``windows`` short windows per contender, alternating, and keeps
    the median window: a burst of other work on the machine then spoils one window,
    not the figure.
    """

    async def host_call(index: int, spread: int) -> None:
        await bench.host_echo(index % spread)

    async def raw_call(index: int, spread: int) -> None:
        reply = await bench.peers[index % spread].request({"op": "echo", "text": "x"})
        if reply["content"] != "x":
            raise RuntimeError("raw echo answered wrong")

    async with asyncio.TaskGroup() as group:
        receivers = [group.create_task(peer.receive()) for peer in bench.peers]
        for inflight in INFLIGHT:
            spread = COPIES if inflight >= 256 else 1
            rates: dict[str, list[float]] = {"raw": [], "host": []}
            raw, host = partial(raw_call, spread=spread), partial(host_call, spread=spread)
            for _ in range(windows):
                rates["raw"].append(await calls_per_second(raw, inflight, seconds))
                rates["host"].append(await calls_per_second(host, inflight, seconds))
            for who, values in rates.items():
                bench.throughput[f"{who} {inflight}"] = benchlib.median(values)
        for receiver in receivers:
            receiver.cancel()


async def ready_phase(bench: Bench, starts: int) -> None:
    """Start the echo plugin in a fresh runner ``starts`` times: spawn to READY.

    Forked from the fork server (the default), then, for comparison, as new interpreters.
    """
    source = bench.host.sources["bench.echo0"]
    server = bench.host._fork_server
    for samples in (bench.ready_ms, bench.ready_interpreter_ms):
        for _ in range(starts):
            start = time.perf_counter()
            runner = await bench.host.start_candidate(source)
            elapsed = time.perf_counter() - start
            if runner.state.value != "ready":
                raise RuntimeError(f"runner did not start: {runner.last_error}")
            samples.append(elapsed * 1000)
            await runner.stop(drain=0)
            await bench.host.forget_runner(runner)
        bench.host._fork_server = None  # the second round starts interpreters
    bench.host._fork_server = server


async def command_ms(starts: int, *argv: str) -> float:
    """Median milliseconds to start and finish ``python *argv`` (floors, for context)."""
    times = []
    for _ in range(starts):
        start = time.perf_counter()
        process = await asyncio.create_subprocess_exec(
            sys.executable, *argv, stdout=asyncio.subprocess.DEVNULL
        )
        await process.wait()
        times.append((time.perf_counter() - start) * 1000)
    return benchlib.median(times)


IMPORT_AND_EXIT = "import os, plughost_runner.__main__; os._exit(0)"
"""Start the interpreter, import what a runner imports, and leave without any teardown."""


async def import_rss_mb() -> float:
    """RSS of a process that has only imported the runner's modules."""
    code = "import os, plughost_runner.__main__; "
    code += "print(int(open('/proc/self/statm').read().split()[1]) * os.sysconf('SC_PAGE_SIZE'))"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await process.communicate()
    return int(out) / 2**20


def _tree(process: psutil.Process) -> list[psutil.Process]:
    return [process, *process.children(recursive=True)]


def measure_rss(bench: Bench) -> None:
    """RSS of each loaded, idle echo runner (the largest is reported) and of a raw peer."""
    runners = [bench.host.runner_for(f"bench.echo{i}") for i in range(COPIES)]
    # A forked runner in its own pid namespace is an init and the runner itself
    # (plughost_runner.sandbox.pidns); the host knows the init's pid. RSS is the
    # runner process's, USS what both add together.
    trees = [_tree(psutil.Process(r.pid)) for r in runners if r and r.pid]
    bench.rss_mb["runner"] = max(max(p.memory_info().rss for p in tree) / 2**20 for tree in trees)
    bench.rss_mb["runner uss"] = max(
        sum(p.memory_full_info().uss for p in tree) / 2**20 for tree in trees
    )
    peer = bench.peers[0].process
    if peer is not None:
        bench.rss_mb["raw"] = psutil.Process(peer.pid).memory_info().rss / 2**20


# --- setup ---------------------------------------------------------------------------------


def make_plugins(root: Path) -> None:
    """Copy the echo test plugin ``COPIES`` times under ids bench.echo0..."""
    for index in range(COPIES):
        folder = root / f"echo{index}"
        shutil.copytree(ECHO_PLUGIN, folder, ignore=shutil.ignore_patterns("__pycache__"))
        manifest = json.loads((folder / "_manifest.json").read_text())
        manifest.update(id=f"bench.echo{index}", name=f"echo{index}")
        (folder / "_manifest.json").write_text(json.dumps(manifest))


def model_names(host: PluginHost, plugin_id: str) -> dict[str, str]:
    """Tool name -> the model-facing name (copies collide, so names are qualified)."""
    return {c.name: host.query.model_name(c) for c in host.components.by_plugin(plugin_id)}


async def warm_up(bench: Bench) -> None:
    for copy in range(COPIES):
        for _ in range(100):
            await bench.host_echo(copy)
    for _ in range(200):
        await bench.raw_echo()
    for _ in range(30):
        await bench.mcp_echo()
    await bench.host_image(MB)
    await bench.raw_image(MB)


async def run(args: argparse.Namespace) -> Bench:
    with tempfile.TemporaryDirectory(prefix="plughost-bench-") as tmp:
        root = Path(tmp)
        make_plugins(root / "plugins")
        settings = HostSettings(data_dir=root / "data", temp_dir=root / "temp")
        context = zmq.asyncio.Context()
        peers = [RawPeer(context, f"ipc://{root}/raw{i}.sock") for i in range(COPIES)]
        mcp_params = StdioServerParameters(command=sys.executable, args=[str(MCP_PEER)])
        try:
            await asyncio.gather(*(peer.start() for peer in peers))
            async with (
                PluginHost([root / "plugins"], settings=settings) as host,
                Client(mcp_params, cache=None) as mcp,
            ):
                names = [model_names(host, f"bench.echo{i}") for i in range(COPIES)]
                bench = Bench(host, names, peers, mcp, mcp_protocol=mcp.protocol_version)
                await warm_up(bench)
                measure_rss(bench)
                await latency_phase(bench, args.blocks)
                await throughput_phase(bench, args.windows, args.seconds)
                await image_phase(bench, args.rounds)
                await ready_phase(bench, args.starts)
                bench.floors["python -c pass"] = await command_ms(args.starts, "-c", "pass")
                bench.floors["imports"] = await command_ms(args.starts, "-c", IMPORT_AND_EXIT)
                bench.floors["import rss"] = await import_rss_mb()
            bench.replicas = await bench_replicas.measure(
                args.replica_rounds, REPLICA_CALLS, root / "replicas"
            )
        finally:
            await asyncio.gather(*(peer.stop() for peer in peers), return_exceptions=True)
            context.term()
    return bench


# --- report --------------------------------------------------------------------------------


def duration(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def pair(samples: Samples, key: str) -> str:
    if key not in samples.by_key:
        return "—"
    return f"{duration(samples.p50(key))} / {duration(samples.p99(key))}"


def verdict(ok: bool, miss: str) -> str:
    return "met" if ok else f"**missed**: {miss}"


def targets(bench: Bench) -> list[tuple[str, str, str]]:
    s, tp = bench.samples, bench.throughput
    overhead = s.p50("host echo") / s.p50("raw echo")
    rate = tp["host 256"] / tp["raw 256"]
    image = s.p50("host 10MB") / s.p50("raw0 10MB")
    ready = benchlib.median(bench.ready_ms)
    rss = bench.rss_mb["runner"]
    over = s.p50("host echo") - TARGET_OVERHEAD * s.p50("raw echo")
    return [
        (
            f"per-call p50 ≤ {TARGET_OVERHEAD}× the raw asyncio round trip",
            f"{overhead:.2f}×",
            verdict(overhead <= TARGET_OVERHEAD, f"{duration(over)} per call over the bound"),
        ),
        (
            f"calls/s with 256 in flight across {COPIES} runners ≥ {TARGET_THROUGHPUT_RATIO}× "
            "the raw peers'",
            f"{rate:.2f}×",
            verdict(rate >= TARGET_THROUGHPUT_RATIO, f"{TARGET_THROUGHPUT_RATIO - rate:.2f} short"),
        ),
        (
            f"10 MB image p50 ≤ {TARGET_IMAGE:.0f}× the raw zero-copy frame",
            f"{image:.2f}×",
            verdict(image <= TARGET_IMAGE, f"{image / TARGET_IMAGE:.2f}× the bound"),
        ),
        (
            f"runner start to ready (median) ≤ {TARGET_READY_MS:.0f} ms",
            f"{ready:.0f} ms",
            verdict(ready <= TARGET_READY_MS, f"{ready - TARGET_READY_MS:.0f} ms over"),
        ),
        (
            f"idle runner RSS ≤ {TARGET_RSS_MB:.0f} MB",
            f"{rss:.1f} MB",
            verdict(rss <= TARGET_RSS_MB, f"{rss - TARGET_RSS_MB:.1f} MB over"),
        ),
    ]


def report(bench: Bench, args: argparse.Namespace, command: str) -> str:
    s, tp = bench.samples, bench.throughput
    n = {key: len(values) for key, values in s.by_key.items()}
    versions = ", ".join(
        f"{name} {metadata.version(name)}" for name in ("pyzmq", "msgpack", "pydantic", "mcp")
    )
    rows = [
        ("trivial call, p50 / p99", pair(s, "host echo"), pair(s, "raw echo"), pair(s, "mcp echo")),
        *(
            (
                f"calls/s, {k} in flight" + (f" ({COPIES} runners)" if k >= 256 else ""),
                f"{tp[f'host {k}']:,.0f}",
                f"{tp[f'raw {k}']:,.0f}",
                "—",
            )
            for k in INFLIGHT
        ),
        ("1 MB image, p50 / p99", pair(s, "host 1MB"), pair(s, "raw 1MB"), "—"),
        ("10 MB image, p50 / p99", pair(s, "host 10MB"), pair(s, "raw 10MB"), pair(s, "mcp 10MB")),
        ("10 MB image as its own frame, zero-copy, p50 / p99", "—", pair(s, "raw0 10MB"), "—"),
        (
            "runner start to ready, p50 / max (forked by the fork server)",
            f"{benchlib.median(bench.ready_ms):.0f} ms / {max(bench.ready_ms):.0f} ms",
            f"`python -c pass`: {bench.floors['python -c pass']:.0f} ms",
            "—",
        ),
        (
            "runner start to ready, p50 / max (new interpreter, `fork_server = false`)",
            f"{benchlib.median(bench.ready_interpreter_ms):.0f} ms / "
            f"{max(bench.ready_interpreter_ms):.0f} ms",
            "—",
            "—",
        ),
        (
            "CPU-bound tool (about 40 ms of pure Python), calls/s with "
            f"{bench_replicas.INFLIGHT} in flight: 1 / 2 replicas (cores busy in runners)",
            _replica_pair(bench.replicas),
            "—",
            "—",
        ),
        (
            "idle runner RSS (of which unique to it, USS)",
            f"{bench.rss_mb['runner']:.1f} MB ({bench.rss_mb['runner uss']:.1f} MB)",
            f"{bench.rss_mb.get('raw', 0):.1f} MB",
            "—",
        ),
    ]
    lines = [
        "## Runner processes and the ZeroMQ wire protocol",
        "",
        f"Command: `{command}`",
        "",
        benchlib.machine_line(),
        "",
        benchlib.load_line(),
        "",
        "| measure | plughost (`host.tools.invoke`) | raw pyzmq + msgpack | MCP stdio |",
        "|---|---|---|---|",
        *(f"| {' | '.join(row)} |" for row in rows),
        "",
        f"Samples: {n['host echo']} trivial calls per zmq contender in {args.blocks} "
        f"interleaved blocks, {n['mcp echo']} over MCP; "
        f"{n['host 1MB']} × 1 MB, {n['host 10MB']} × 10 MB ({n['mcp 10MB']} over MCP); "
        f"{len(bench.ready_ms)} runner starts; the CPU-bound tool: "
        f"{len(bench.replicas[1])} interleaved rounds of {REPLICA_CALLS} calls per "
        "configuration (median; on this machine two replicas can at most double it). "
        f"Throughput: {INFLIGHT} workers calling back to "
        f"back, the median of {args.windows} alternating windows of {args.seconds:g} s per "
        "contender. The raw peer is one process doing only decode, reply, encode; the "
        "MCP server is the official SDK's `MCPServer` over stdio (protocol "
        f"{bench.mcp_protocol}), timed until the client has the parsed result (base64 left "
        "undecoded). All zmq calls go over `ipc://`. "
        f"{versions}.",
        "",
        "| target | measured | result |",
        "|---|---|---|",
        *(f"| {name} | {value} | {result} |" for name, value, result in targets(bench)),
        "",
        *notes(bench),
    ]
    return "\n".join(lines)


def _replica_pair(figures: bench_replicas.Figures) -> str:
    rate = {n: benchlib.median([r for r, _ in figures[n]]) for n in (1, 2)}
    cores = {n: benchlib.median([c for _, c in figures[n]]) for n in (1, 2)}
    return (
        f"{rate[1]:.1f} / {rate[2]:.1f} ({cores[1]:.2f} / {cores[2]:.2f} cores): "
        f"**{rate[2] / rate[1]:.2f}×** with two"
    )


def notes(bench: Bench) -> list[str]:
    """Same-run figures that say where each missed target's floor lies."""
    s, tp, floors = bench.samples, bench.throughput, bench.floors
    raw, host, mcp = s.p50("raw echo"), s.p50("host echo"), s.p50("mcp echo")
    found = [
        f"- MCP stdio, measured in the same run: {mcp / raw:.1f}× the raw asyncio round trip; "
        f"a plughost call is {mcp / host:.1f}× faster than the same tool over MCP stdio."
    ]
    if host > TARGET_OVERHEAD * raw:
        found.append(
            f"- A call through plughost costs {duration(host - raw)} more than the raw round "
            "trip at p50: the host's tool layer (registry, argument check, supervisor, "
            "channel) and the runner's service (dispatch, deadline, result normalization) on "
            'top of the same ZeroMQ path; where it goes is in "The call path, profiled" '
            "(scripts/profile_call_path.py)."
        )
    if tp["host 256"] < TARGET_THROUGHPUT_RATIO * tp["raw 256"]:
        found.append(
            f"- With 256 in flight the raw peers answer {tp['raw 256']:,.0f} calls/s; host and "
            "runners share the same two cores."
        )
    ready = benchlib.median(bench.ready_ms)
    if ready > TARGET_READY_MS:
        found.append(
            f"- Starting an interpreter that imports what a runner imports and exits at once "
            f"takes {floors['imports']:.0f} ms on its own, against {ready:.0f} ms from spawn to "
            f"READY (a bare `python -c pass`: {floors['python -c pass']:.0f} ms): the start is "
            "the interpreter and its imports, not the handshake or the plugin load."
        )
    if bench.rss_mb["runner"] > TARGET_RSS_MB:
        found.append(
            f"- A process that has only imported the runner's modules (asyncio with ssl, pyzmq, "
            f"pydantic and the SDK) is at {floors['import rss']:.1f} MB. RSS counts the pages a "
            "forked runner shares with the fork server and its siblings; what each runner "
            f"adds is its USS, {bench.rss_mb['runner uss']:.1f} MB."
        )
    return ["Beside the targets, from this run:", "", *found]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=48, help="interleaved blocks of 50 calls")
    parser.add_argument("--rounds", type=int, default=8, help="interleaved image rounds")
    parser.add_argument("--windows", type=int, default=9, help="throughput windows per level")
    parser.add_argument("--seconds", type=float, default=0.4, help="length of one window")
    parser.add_argument("--starts", type=int, default=12, help="runner starts to time")
    parser.add_argument(
        "--replica-rounds", type=int, default=5, help="rounds of the CPU-bound replica comparison"
    )
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    bench = asyncio.run(run(args))
    command = " ".join([".venv/bin/python scripts/bench_runner.py", *sys.argv[1:]])
    markdown = report(bench, args, command)
    print(markdown)
    if not args.no_write:
        benchlib.write_section("runner", markdown)


if __name__ == "__main__":
    main()
