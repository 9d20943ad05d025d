"""Benchmark what network grants and the MCP sandbox cost: filtered connects, sandboxed servers.

Two measurements, each a candidate next to its baseline in the same run,
interleaved so that noise from other work on the machine hits both alike:

1. **A connection through the host's gate against a direct one.** This
   process runs a tiny HTTP server on 127.0.0.1 and an
   :class:`~plughost.egress.EgressGate` granting ``localhost:<port>`` (the
   gate a sandboxed runner or MCP server gets). A child process (so that the
   socket patches stay out of this one) installs the runner's socket layer
   (``plughost_runner.sandbox.egress.install``) and switches it on and off
   connection by connection: each sample is ``socket.create_connection``, one
   small request, its reply and the close. It then keeps one connection of
   each kind open and times requests on them: the gate hands over the
   connected socket, so no byte passes through the host and those should
   cost the same. Rounds are separate child processes.
2. **A stdio MCP server started and called sandboxed against unsandboxed.**
   Sandboxed is :func:`plughost.mcp.session.open_client` itself (every stdio
   server goes through ``python -m plughost_runner.sandbox.launch``);
   unsandboxed is the same ``mcp.Client`` over
   :func:`plughost.mcp.stdio.stdio_transport` with the server's own command.
   Start is spawn to a usable session whose ``list_tools`` answered; a call is
   ``call_tool`` on an open session. Servers: the published
   ``mcp-server-time`` (``.venv-mcp-servers``, see
   scripts/install_test_mcp_servers.sh) and tests/mcp_servers/demo_server.py.

Only ratios are judged (the machine is noisy); the absolute figures are for
orientation. It writes the section ``egress`` of docs/benchmarks.md.

Usage: .venv/bin/python scripts/bench_egress.py [--rounds N] [--connections N]
[--requests N] [--warmup N] [--starts N] [--calls N] [--no-write]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import benchlib
import mcp_types as types
from mcp import Client
from mcp.client.session import IncomingMessage

from plughost.destinations import Grants
from plughost.egress import EgressGate
from plughost.mcp import session
from plughost.mcp.config import MCPServerConfig
from plughost.mcp.stdio import stdio_transport

TIME_SERVER = benchlib.ROOT / ".venv-mcp-servers" / "bin" / "mcp-server-time"
DEMO_SERVER = benchlib.ROOT / "tests" / "mcp_servers" / "demo_server.py"
TARGET_START_RATIO = 1.3  # sandboxed / unsandboxed MCP server start, median, at most
TARGET_CALL_RATIO = 1.05  # sandboxed / unsandboxed MCP call, median, at most
MODES = ("filtered", "direct")
KINDS = ("sandboxed", "unsandboxed")
WHERE_THE_TIME_GOES = (
    "Where the time goes (a one-off breakdown on this machine, 2026-11-27, not re-measured by "
    "this script): of the ~0.19 ms a connection through the gate adds, the gate's own work "
    "(the grant check, `socket()`, the loopback `connect_ex`) is ~0.03 ms; most of the rest "
    "is one request on a fresh Unix connection to an asyncio server (a bare asyncio Unix "
    "server that answers one line and closes takes ~0.16 ms a round trip here), plus the "
    "`SCM_RIGHTS` hand-over and `dup2`. The launcher costs a start ~50 ms before it `exec`s "
    "the server: ~23 ms interpreter start with `site` (the editable install's path finder "
    "~11 ms of it), ~21 ms importing `plughost_runner.sandbox` (dataclasses and its "
    "`inspect` ~8 ms, typing, ctypes, socket, platform, json) and ~8 ms for the namespaces, "
    "Landlock and seccomp; a start slower than that by more is the server's own start inside "
    "them, or noise."
)


@dataclass(frozen=True)
class Server:
    """One stdio MCP server to start, and the trivial call to make on it."""

    label: str
    command: str
    args: list[str]
    tool: str
    arguments: dict[str, Any]


SERVERS = (
    Server(
        "mcp-server-time (PyPI)",
        str(TIME_SERVER),
        ["--local-timezone", "UTC"],
        "get_current_time",
        {"timezone": "UTC"},
    ),
    Server(
        "demo_server.py (tests)",
        sys.executable,
        [str(DEMO_SERVER), "stdio"],
        "echo",
        {"text": "x"},
    ),
)


# --- 1. connections through the gate ----------------------------------------------------------

REQUEST = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
REPLY = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

# Run by each round's child process: argv is gate path, port, connections, requests, warm-up.
CHILD = r"""
import json, socket, sys, time
import plughost_runner.sandbox.egress as egress

gate, port, connections, requests, warmup = sys.argv[1], *map(int, sys.argv[2:])
NAMES = ("getaddrinfo", "gethostbyname", "gethostbyname_ex")
METHODS = ("connect", "connect_ex")
def patches():
    return ({n: getattr(socket, n) for n in NAMES}, {n: getattr(socket.socket, n) for n in METHODS})
direct = patches()
egress.install(gate)
filtered = patches()
def use(which):
    functions, methods = which
    for name, value in functions.items():
        setattr(socket, name, value)
    for name, value in methods.items():
        setattr(socket.socket, name, value)
REQUEST, REPLY = %r, %r
def exchange(sock):
    sock.sendall(REQUEST)
    got = b""
    while not got.endswith(REPLY):
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        got += chunk
def connect_once():
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        exchange(sock)
kinds = {"filtered": filtered, "direct": direct}
out = {"connect": {k: [] for k in kinds}, "request": {k: [] for k in kinds}}
for i in range(warmup + connections):
    for kind in (("filtered", "direct") if i %% 2 else ("direct", "filtered")):
        use(kinds[kind])
        start = time.perf_counter()
        connect_once()
        elapsed = time.perf_counter() - start
        if i >= warmup:
            out["connect"][kind].append(elapsed)
open_ = {}
for kind in kinds:
    use(kinds[kind])
    open_[kind] = socket.create_connection(("127.0.0.1", port))
    open_[kind].setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
use(direct)
for i in range(warmup + requests):
    for kind in (("filtered", "direct") if i %% 2 else ("direct", "filtered")):
        start = time.perf_counter()
        exchange(open_[kind])
        elapsed = time.perf_counter() - start
        if i >= warmup:
            out["request"][kind].append(elapsed)
for sock in open_.values():
    sock.close()
json.dump(out, sys.stdout)
""" % (REQUEST, REPLY)  # noqa: UP031 - the snippet is full of braces


@dataclass
class EgressResults:
    connect_ms: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in MODES})
    request_ms: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in MODES})
    used: int = 0  # connections the gate opened


async def serve_http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answer every request on the connection with a fixed 2-byte body, until it closes."""
    try:
        while True:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(REPLY)
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def measure_egress(args: argparse.Namespace) -> EgressResults:
    results = EgressResults()
    server = await asyncio.start_server(serve_http, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    with tempfile.TemporaryDirectory(prefix="plughost-bench-egress-") as tmp:
        gate = EgressGate(
            Path(tmp) / "gate",
            Grants([f"localhost:{port}"]),
            runner_id="bench",
            plugin_ids=["bench.egress"],
        )
        await gate.start()
        try:
            for _ in range(args.rounds):
                child = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-c",
                    CHILD,
                    str(gate.path),
                    str(port),
                    str(args.connections),
                    str(args.requests),
                    str(args.warmup),
                    stdout=asyncio.subprocess.PIPE,
                )
                out, _ = await child.communicate()
                if child.returncode != 0:
                    raise RuntimeError(f"the client process failed (exit {child.returncode})")
                samples = json.loads(out)
                for mode in MODES:
                    results.connect_ms[mode] += [s * 1000 for s in samples["connect"][mode]]
                    results.request_ms[mode] += [s * 1000 for s in samples["request"][mode]]
        finally:
            await gate.aclose()
            server.close()
            await server.wait_closed()
    results.used = sum(gate.used.values())
    if gate.denied:
        raise RuntimeError(f"the gate refused connections: {dict(gate.denied)}")
    expected = args.rounds * (args.warmup + args.connections + 1)  # + the one kept open
    if results.used != expected:  # the switch between the kinds did not work
        raise RuntimeError(f"the gate opened {results.used} connections, not {expected}")
    return results


# --- 2. MCP servers, sandboxed and not ---------------------------------------------------------


async def ignore(message: IncomingMessage) -> None:
    """The session's message handler: notifications do not matter here."""


def on_exit(reason: str) -> None:
    print(f"an MCP server ended by itself: {reason}", file=sys.stderr)


def config_for(server: Server, data_dir: Path) -> MCPServerConfig:
    return MCPServerConfig(command=server.command, args=server.args, data_dir=str(data_dir))


@contextlib.asynccontextmanager
async def unsandboxed(config: MCPServerConfig) -> AsyncIterator[Client]:
    """What open_client does for a stdio server, minus the sandbox: the raw command."""
    transport = stdio_transport(
        config.command or "", config.args, env=config.env, cwd=config.cwd, on_exit=on_exit
    )
    client = Client(
        transport,
        mode=config.protocol,
        message_handler=ignore,
        client_info=types.Implementation(name="plughost", version=session._version()),
        cache=None,
        log_level="info",
    )
    async with client as entered:
        yield entered


def opener(kind: str, config: MCPServerConfig) -> contextlib.AbstractAsyncContextManager[Client]:
    if kind == "sandboxed":
        return session.open_client(config, ignore, on_exit, name="bench")
    return unsandboxed(config)


@dataclass
class MCPResults:
    start_ms: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})
    call_ms: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})


async def start(
    kind: str, config: MCPServerConfig, stack: contextlib.AsyncExitStack
) -> tuple[Client, float]:
    """Spawn the server and wait until list_tools answered: the client and the milliseconds."""
    begun = time.perf_counter()
    client = await stack.enter_async_context(opener(kind, config))
    listed = await client.list_tools()
    elapsed = (time.perf_counter() - begun) * 1000
    if not listed.tools:
        raise RuntimeError(f"{config.command}: no tools listed")
    return client, elapsed


async def call_once(client: Client, server: Server) -> float:
    begun = time.perf_counter()
    result = await client.call_tool(server.tool, server.arguments)
    elapsed = (time.perf_counter() - begun) * 1000
    if result.is_error:
        raise RuntimeError(f"{server.tool} answered with an error: {result.content}")
    return elapsed


async def measure_mcp(server: Server, args: argparse.Namespace, data_dir: Path) -> MCPResults:
    """Rounds of one start of each kind, then calls alternating between the two sessions.

    Each round has a new pair of processes, so that where the scheduler happens to put
    one pair does not decide the call figures.
    """
    results = MCPResults()
    config = config_for(server, data_dir)
    per_round = max(1, args.calls // args.starts)
    for index in range(args.starts + 1):  # the first round warms the page cache, unmeasured
        order = KINDS if index % 2 == 0 else tuple(reversed(KINDS))
        async with contextlib.AsyncExitStack() as stack:
            clients: dict[str, Client] = {}
            for kind in order:
                clients[kind], elapsed = await start(kind, config, stack)
                if index:
                    results.start_ms[kind].append(elapsed)
            for _ in range(args.warmup):
                for kind in order:
                    await call_once(clients[kind], server)
            for call in range(per_round if index else 0):
                for kind in order if call % 2 == 0 else tuple(reversed(order)):
                    results.call_ms[kind].append(await call_once(clients[kind], server))
    return results


async def run(args: argparse.Namespace) -> tuple[EgressResults, dict[str, MCPResults]]:
    egress = await measure_egress(args)
    mcp: dict[str, MCPResults] = {}
    data_dir = Path(tempfile.mkdtemp(prefix="plughost-bench-egress-mcp-"))
    try:
        for server in SERVERS:
            mcp[server.label] = await measure_mcp(server, args, data_dir)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    return egress, mcp


# --- the report --------------------------------------------------------------------------------


def p(samples: list[float], pct: float, digits: int = 3) -> str:
    return f"{benchlib.percentile(samples, pct):.{digits}f}"


def ratio(candidate: list[float], baseline: list[float], pct: float) -> float:
    return benchlib.percentile(candidate, pct) / benchlib.percentile(baseline, pct)


def verdict(value: float, target: float) -> str:
    return "met" if value <= target else f"missed by {value - target:.2f}x"


def row(label: str, samples: dict[str, list[float]], keys: tuple[str, str], digits: int) -> str:
    new, old = samples[keys[0]], samples[keys[1]]
    return (
        f"| {label} | {p(new, 50, digits)} / {p(new, 99, digits)} | "
        f"{p(old, 50, digits)} / {p(old, 99, digits)} | "
        f"**{ratio(new, old, 50):.2f}x** / {ratio(new, old, 99):.2f}x |"
    )


def report(egress: EgressResults, mcp: dict[str, MCPResults], command: str) -> str:
    c, r = egress.connect_ms, egress.request_ms
    extra_ms = benchlib.median(c["filtered"]) - benchlib.median(c["direct"])
    lines = [
        "## Network grants and the MCP sandbox: what they cost",
        "",
        f"Command: `{command}`",
        "",
        benchlib.machine_line(),
        "",
        benchlib.load_line(),
        "",
        "| measure (ms) | candidate p50 / p99 | baseline p50 / p99 | ratio p50 / p99 |",
        "|---|---|---|---|",
        row("connect + request + reply + close, through the gate vs direct", c, MODES, 3),
        row("request + reply on an open connection, gate-made vs direct", r, MODES, 3),
    ]
    targets: list[tuple[str, str, str]] = []
    for label, results in mcp.items():
        s, k = results.start_ms, results.call_ms
        lines.append(row(f"{label}: start to tools listed, sandboxed vs not", s, KINDS, 1))
        lines.append(row(f"{label}: `call_tool`, sandboxed vs not", k, KINDS, 3))
        start_ratio = ratio(s["sandboxed"], s["unsandboxed"], 50)
        call_ratio = ratio(k["sandboxed"], k["unsandboxed"], 50)
        targets += [
            (
                f"{label}: start, sandboxed / unsandboxed (median) ≤ {TARGET_START_RATIO:.2f}x",
                f"{start_ratio:.2f}x "
                f"({benchlib.median(s['sandboxed']) - benchlib.median(s['unsandboxed']):+.0f} ms)",
                verdict(start_ratio, TARGET_START_RATIO),
            ),
            (
                f"{label}: call, sandboxed / unsandboxed (median) ≤ {TARGET_CALL_RATIO:.2f}x",
                f"{call_ratio:.2f}x",
                verdict(call_ratio, TARGET_CALL_RATIO),
            ),
        ]
    first = next(iter(mcp.values()))
    few = len(first.start_ms["sandboxed"]) < 100
    lines += [
        "",
        f"Samples: {len(c['filtered'])} connections and {len(r['filtered'])} requests on an "
        "open connection per kind, from child processes that switch the runner's socket layer "
        "(`plughost_runner.sandbox.egress`) on and off between samples, against an HTTP server "
        "and an `EgressGate` granting `localhost:<port>` in the benchmark's own process (it "
        "opened "
        f"{egress.used} connections, warm-ups included, and none of the direct ones). "
        f"{len(first.start_ms['sandboxed'])} starts and {len(first.call_ms['sandboxed'])} "
        "calls per server and kind, in rounds of one start of each kind (alternating which "
        "goes first) followed by calls alternating between the two sessions, so the calls are "
        "spread over as many pairs of processes as there are starts; a sandboxed start is "
        "`open_client` (the launcher, then the server), an unsandboxed one the same "
        "`mcp.Client` over `stdio_transport` with the server's own command"
        + (", and with so few starts their p99 is the slowest one" if few else "")
        + ". Ratios compare candidate with baseline within this run; the absolute figures "
        "move with the machine's load.",
        "",
        "| target | measured | result |",
        "|---|---|---|",
        *(f"| {name} | {value} | {result} |" for name, value, result in targets),
        "",
        f"A filtered connection costs about {extra_ms:.2f} ms more than a direct one (median): "
        "one round trip over the gate's Unix socket, in which the host checks the grant, "
        "starts the TCP connect and hands the socket over (`SCM_RIGHTS`). After that the "
        "runner holds an ordinary TCP socket, so a request on an open connection costs what a "
        "direct one does, and a client that keeps its connections alive pays the gate once "
        "per connection. A sandboxed MCP server starts behind one more short-lived Python "
        "process (the launcher, which sets up its namespaces, Landlock and seccomp and then "
        "`exec`s the server); once it runs, a call crosses no sandbox check, as for runners.",
        "",
        WHERE_THE_TIME_GOES,
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\nUsage:")[0],
        epilog="The defaults take under a minute on 2 CPUs.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--rounds", type=int, default=5, help="client processes for the gate measurement"
    )
    parser.add_argument(
        "--connections", type=int, default=200, help="connections per kind and round"
    )
    parser.add_argument(
        "--requests", type=int, default=500, help="requests on an open connection per kind/round"
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=20,
        help="unmeasured connections and requests per round, calls per session",
    )
    parser.add_argument("--starts", type=int, default=10, help="MCP server starts per kind")
    parser.add_argument(
        "--calls", type=int, default=1000, help="MCP tool calls per kind, over the starts' sessions"
    )
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    missing = [str(path) for path in (TIME_SERVER, DEMO_SERVER) if not path.exists()]
    if missing:
        parser.error(f"missing {missing}: run scripts/install_test_mcp_servers.sh first")
    egress, mcp = asyncio.run(run(args))
    command = " ".join([".venv/bin/python scripts/bench_egress.py", *sys.argv[1:]])
    markdown = report(egress, mcp, command)
    print(markdown)
    if not args.no_write:
        benchlib.write_section("egress", markdown)


if __name__ == "__main__":
    main()
