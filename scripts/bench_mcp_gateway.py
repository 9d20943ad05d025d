"""Per-call cost of MCP gateways in front of server-everything, in one interleaved run.

The official MCP client (handshake-era protocol, what server-everything and
most clients speak) holds one session to each contender at once and calls
server-everything's ``echo`` on each in turn, call by call, so machine noise
hits all alike:

- ``direct stdio``: server-everything (npm, run with node) over stdio;
- ``direct HTTP``: the same server over its own streamable HTTP transport;
- ``plughost stdio`` / ``plughost HTTP``: ``plughost serve --mcp-stdio`` /
  ``--mcp-http`` with only an ``[mcp]`` table naming server-everything over stdio;
- ``plughost stdio, client offers sampling``: the same over stdio, to a client
  that declares ``sampling`` and ``elicitation``, as most agent clients do;
- ``fastmcp proxy``: ``fastmcp.server.create_proxy`` of the same stdio server,
  served over stdio;
- ``mcp-proxy``: PyPI ``mcp-proxy`` serving the same stdio server over
  streamable HTTP.

fastmcp and mcp-proxy are installed at benchmark time into throwaway
virtualenvs under ``--venvs`` (mcp-proxy needs the 1.x MCP SDK, fastmcp the
2.x one), never into the project's. Writes the ``mcp-gateway`` section of
docs/benchmarks.md.

Usage: ``.venv/bin/python scripts/bench_mcp_gateway.py [--calls N] [--no-write]``
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import psutil
from benchlib import (
    ROOT,
    cpu_seconds,
    load_line,
    machine_line,
    median,
    percentile,
    write_section,
)

COMMAND = ".venv/bin/python scripts/bench_mcp_gateway.py"
EVERYTHING = ROOT / ".venv-mcp-servers" / "node" / "node_modules" / ".bin" / "mcp-server-everything"
VENVS = Path(tempfile.gettempdir()) / "plughost-bench-gateways"
PACKAGES = {"fastmcp": ["fastmcp"], "mcp-proxy": ["mcp-proxy", "mcp<2"]}
# What a gateway in Python on asyncio costs before it checks anything: a relay that reads each line,
# parses it, rewrites a request's id and writes it on (and back), and checks nothing.
RELAY_FLOOR = """
import asyncio, itertools, json, sys

async def main():
    server = await asyncio.create_subprocess_exec(
        *sys.argv[1:], stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out, ids, waiting = sys.stdout.buffer, itertools.count(1), {}

    async def upward():
        while line := await reader.readline():
            message = json.loads(line)
            if "method" in message and "id" in message:
                own = f"relay-{next(ids)}"
                waiting[own] = message["id"]
                message["id"] = own
            server.stdin.write(json.dumps(message).encode() + b"\\n")

    asyncio.ensure_future(upward())
    while line := await server.stdout.readline():
        message = json.loads(line)
        if "method" not in message and message.get("id") in waiting:
            message["id"] = waiting.pop(message["id"])
        out.write(json.dumps(message).encode() + b"\\n")
        out.flush()

asyncio.run(main())
"""
FASTMCP_PROXY = """
import sys
from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy
create_proxy(StdioTransport(command="node", args=[sys.argv[1]]), mode="legacy").run(
    show_banner=False
)
"""


def venv(root: Path, name: str) -> Path:
    """The Python of a throwaway virtualenv holding ``PACKAGES[name]``, made once."""
    python = root / name / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(root / name)], check=True)
        pip = [str(python), "-m", "pip", "install", "-q", *PACKAGES[name]]
        subprocess.run(pip, check=True, stdout=subprocess.DEVNULL)
    return python


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"nothing listened on {port}: {process.args}") from None
            await asyncio.sleep(0.05)
            continue
        writer.close()
        return


def http_server(argv: list[str], port: int, env: dict[str, str] | None = None) -> Any:
    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )


async def connect(
    stack: AsyncExitStack, target: Any, headers: dict[str, str] | None, **callbacks: Any
) -> Any:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    if isinstance(target, str):
        http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
        target = streamable_http_client(target, http_client=http)
    client = Client(target, mode="legacy", cache=None, **callbacks)
    return await stack.enter_async_context(client)


async def _sampling(context: Any, params: Any) -> Any:
    import mcp_types as types

    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(text="never asked"), model="none"
    )


async def _elicitation(context: Any, params: Any) -> Any:
    import mcp_types as types

    return types.ElicitResult(action="decline")


ASKING = "plughost stdio, client offers sampling"
FLOOR = "id-rewriting relay (stdio)"


async def contenders(stack: AsyncExitStack, folder: Path, venvs: Path) -> dict[str, Any]:
    """Start every contender and return a connected client for each, by label."""
    from mcp import StdioServerParameters

    node = ["node", str(EVERYTHING)]
    config = folder / "up.toml"
    config.write_text(
        f"[host]\ndata_dir = {json.dumps(str(folder / 'data' / 'plugins'))}\n"
        f'[mcp.servers.everything]\ncommand = "node"\nargs = [{json.dumps(str(EVERYTHING))}]\n'
    )
    serve = [sys.executable, "-m", "plughost", "serve", "--no-watch", "--config", str(config)]
    asking_config = folder / "asking.toml"  # a file of its own, to tell its process apart
    asking_config.write_text(config.read_text())
    asking = [*serve[1:-1], str(asking_config), "--mcp-stdio"]
    ports = {name: free_port() for name in ("direct", "plughost", "mcp-proxy")}
    token = folder / "token"
    servers = [
        http_server([*node, "streamableHttp"], ports["direct"], {"PORT": str(ports["direct"])}),
        http_server(
            [
                *serve,
                "--mcp-http",
                f"127.0.0.1:{ports['plughost']}",
                "--mcp-token-file",
                str(token),
            ],
            ports["plughost"],
        ),
        http_server(
            [
                str(venv(venvs, "mcp-proxy").parent / "mcp-proxy"),
                "--port",
                str(ports["mcp-proxy"]),
                "--",
                *node,
            ],
            ports["mcp-proxy"],
        ),
    ]
    for server in servers:
        stack.callback(_stop, server)
    for server, port in zip(servers, ports.values(), strict=True):
        await wait_for_port(port, server)
    fastmcp = str(venv(venvs, "fastmcp"))
    bearer = {"Authorization": f"Bearer {token.read_text().strip()}"}
    # Every stdio contender gets this process's environment, as the HTTP ones do
    # (the SDK's default keeps only a few variables: PYTHONPATH, say, would not reach
    # a plughost run from another checkout).
    stdio = functools.partial(StdioServerParameters, env=dict(os.environ))
    targets: dict[str, tuple[Any, dict[str, str] | None]] = {
        "direct stdio": (stdio(command="node", args=[str(EVERYTHING)]), None),
        "direct HTTP": (f"http://127.0.0.1:{ports['direct']}/mcp", None),
        "plughost stdio": (
            stdio(command=sys.executable, args=[*serve[1:], "--mcp-stdio"]),
            None,
        ),
        ASKING: (stdio(command=sys.executable, args=asking), None),
        "plughost HTTP": (f"http://127.0.0.1:{ports['plughost']}/mcp", bearer),
        "fastmcp proxy (stdio)": (
            stdio(command=fastmcp, args=["-c", FASTMCP_PROXY, str(EVERYTHING)]),
            None,
        ),
        "mcp-proxy (HTTP)": (f"http://127.0.0.1:{ports['mcp-proxy']}/mcp", None),
        FLOOR: (
            stdio(command=sys.executable, args=["-c", RELAY_FLOOR, *node]),
            None,
        ),
    }
    offers = {"sampling_callback": _sampling, "elicitation_callback": _elicitation}
    return {
        label: await connect(stack, t, h, **(offers if label == ASKING else {}))
        for label, (t, h) in targets.items()
    }


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


TOOLS = {
    "plughost stdio": "mcp_everything_echo",
    "plughost HTTP": "mcp_everything_echo",
    ASKING: "mcp_everything_echo",
}
# How each contender's own process (a child of this one) is told apart by its command
# line, for its CPU time; the first label that matches wins.
MARKS = {
    ASKING: ("plughost", "--mcp-stdio", "asking.toml"),
    "direct HTTP": ("streamableHttp",),
    "plughost stdio": ("plughost", "--mcp-stdio"),
    "plughost HTTP": ("plughost", "--mcp-http"),
    "fastmcp proxy (stdio)": ("create_proxy",),
    FLOOR: ("relay-",),
    "mcp-proxy (HTTP)": ("mcp-proxy",),
    "direct stdio": (str(EVERYTHING),),  # last: every gateway's command names it too
}
QUIET_CPU = 0.02  # seconds per half second: a process this busy at rest is still warming up


def processes() -> dict[str, psutil.Process]:
    """Each contender's own process (not its upstream's, a grandchild), by label."""
    found: dict[str, psutil.Process] = {}
    for child in psutil.Process().children():
        try:
            line = " ".join(child.cmdline())
        except psutil.Error:
            continue
        label = next((k for k, marks in MARKS.items() if all(m in line for m in marks)), None)
        if label is not None:
            found.setdefault(label, child)
    return found


async def settled(watched: dict[str, psutil.Process], patience: float = 120.0) -> None:
    """Wait until no contender works at rest: a gateway warming up (plughost loads its
    tool search model in a thread after it starts) would tax the calls measured."""
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        before = {label: cpu_seconds(p) for label, p in watched.items()}
        await asyncio.sleep(0.5)
        if all(cpu_seconds(p) - before[label] < QUIET_CPU for label, p in watched.items()):
            return
    print("warning: a contender was still busy at rest when measuring began", file=sys.stderr)


async def measure(
    calls: int, warmup: int, venvs: Path
) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Latencies of every call, and each contender's own CPU seconds per call."""
    with tempfile.TemporaryDirectory() as folder:
        async with AsyncExitStack() as stack:
            clients = await contenders(stack, Path(folder), venvs)
            watched = processes()
            samples: dict[str, list[float]] = {label: [] for label in clients}
            cpu: dict[str, float] = {}
            for round_ in range(warmup + calls):
                if round_ == warmup:
                    await settled(watched)
                    cpu = {label: cpu_seconds(p) for label, p in watched.items()}
                # A fresh order each round: no contender always follows the same one (a call
                # after an HTTP contender's finds the caches the HTTP stack left behind).
                order = list(clients.items())
                random.Random(round_).shuffle(order)
                for label, client in order:
                    tool = TOOLS.get(label, "echo")
                    started = time.perf_counter()
                    result = await client.call_tool(tool, {"message": "hello"})
                    elapsed = time.perf_counter() - started
                    if result.is_error:
                        raise SystemExit(f"{label}: {tool} failed: {result}")
                    if round_ >= warmup:
                        samples[label].append(elapsed)
            per_call = {
                label: (cpu_seconds(p) - cpu[label]) / calls for label, p in watched.items()
            }
            return samples, per_call


def verdict(samples: dict[str, list[float]]) -> list[str]:
    """Each plughost p50 against the direct call's and the other gateways' on its transport."""
    p50 = {label: median(runs) for label, runs in samples.items()}
    ratio = p50["plughost stdio"] / p50["direct stdio"]
    others = [
        label
        for label in p50
        if "direct" not in label and "plughost" not in label and label != FLOOR
    ]
    cheapest = all(p50["plughost stdio"] < p50[label] for label in others)
    within = "within" if ratio <= 1.5 else "more than"
    below = "below" if cheapest else "not below"
    http = p50["plughost HTTP"] / p50["direct HTTP"]
    asking = p50[ASKING] / p50["plughost stdio"]
    floor = p50[FLOOR] / p50["direct stdio"]
    over_http = [label for label in others if "HTTP" in label]
    cheapest_http = all(p50["plughost HTTP"] < p50[label] for label in over_http)
    return [
        f"Over stdio plughost's p50 is {ratio:.2f} times the direct call's ({within} the",
        f"1.5 it aims for), {below} every other gateway's. Over HTTP it is {http:.2f} times",
        f"the direct call's ({'within' if http <= 1.5 else 'more than'} the 1.5 it aims for),",
        f"{'below' if cheapest_http else 'not below'} every other gateway's over HTTP.",
        f"A client that offers sampling and elicitation pays {asking:.2f} times the p50 of",
        "one that offers nothing, through the same plughost over stdio.",
        "A Python relay that only parses each line and rewrites request ids, checking",
        f"nothing, is at {floor:.2f} times the direct call: what a gateway written in",
        "Python on asyncio costs before it checks anything; plughost's checks and bookkeeping add",
        f"{(p50['plughost stdio'] - p50[FLOOR]) * 1000:.2f} ms over it.",
    ]


def report(samples: dict[str, list[float]], cpu: dict[str, float], calls: int, warmup: int) -> str:
    direct = {
        "stdio": median(samples["direct stdio"]),
        "HTTP": median(samples["direct HTTP"]),
    }
    rows = []
    for label, runs in samples.items():
        p50, p99 = median(runs), percentile(runs, 99)
        own = f"{cpu[label] * 1000:.2f} ms" if label in cpu else "?"
        rows.append(
            f"| {label} | {p50 * 1000:.2f} ms | {p99 * 1000:.2f} ms "
            f"| {p50 / direct['stdio']:.2f}x | {p50 / direct['HTTP']:.2f}x | {own} |"
        )
    return "\n".join(
        [
            "## MCP gateways: per-call cost",
            "",
            f"`{COMMAND} --calls {calls}` — {calls} calls of server-everything's `echo` per",
            f"contender after {warmup} unmeasured, interleaved call by call (in a shuffled",
            "order each round) over sessions held open, with the official MCP client",
            "(handshake-era protocol). `direct` is",
            "server-everything (npm, run with node) over stdio and over its own streamable",
            "HTTP transport; every gateway fronts the same server started over stdio:",
            "`plughost serve` with only an `[mcp]` table (the upstream sandboxed, as every",
            "stdio server plughost starts; HTTP with its bearer token), fastmcp's",
            "`create_proxy(..., mode='legacy')` served over stdio, and PyPI `mcp-proxy`",
            "serving it over streamable HTTP (both installed into throwaway virtualenvs at",
            "benchmark time).",
            "",
            *verdict(samples),
            "",
            "Over stdio a gateway call skips both MCP SDK sessions and wakes no task: the",
            "protocol reading the client's pipe splits its line as the loop reads it, routes",
            "the call with the registry's code and writes it into the upstream's pipe under",
            "an id of plughost's own, and the protocol reading the upstream's pipe checks",
            "the answer as the SDK checks it and writes it to the client as the check",
            'shaped it (docs/mcp.md, "The direct lane"). The answer goes out before the',
            "registry's record of the call is made, and a plain text answer (`echo`'s)",
            "before the SDK's models have checked it too: for that shape a few type tests",
            "give the same verdict and the same bytes, and the answer is typed for the",
            "record after the write. Timestamps taken inside a running gateway put the",
            "two pydantic validations at about 130 µs of the 190 µs between the",
            "upstream's line and the client's (20 µs in a warm loop: a process woken",
            "between two others finds its caches cold). What remains per call: parsing",
            "the client's line and the upstream's, the registry's routing and argument",
            "check, two event-loop turns, and two more pipe",
            "hops than a direct call, each the wake-up of another process. The relay below",
            "pays the same two hops with nothing checked: the distance from it to",
            "the direct call is what a second process in between costs on this machine",
            'before any work ("The stdio MCP gateway, profiled" below says where the CPU',
            "goes).",
            "`own CPU per call` is the user and system time of each contender's",
            "own process (not its upstream's) over the measured calls, steadier than",
            "latency on a shared machine. Measuring starts once every contender is quiet at",
            "rest: plughost loads its tool search model in a thread for some seconds after",
            "it starts, which would otherwise tax the first calls. Over HTTP the client's",
            "calls go through plughost's server session as before; the upstream side is",
            "forwarded all the same. plughost decides per request, before it builds any",
            "stream: an answer that is the first thing its call sends, within 0.1 s, goes",
            "out as one JSON body with no SSE response built for it (docs/mcp.md,",
            "streamable HTTP), while a call that reports progress, asks the client",
            "something or takes longer gets the SDK's resumable SSE stream. uvicorn parses",
            "HTTP with httptools rather than h11, and its connections have Nagle's",
            "algorithm off, so no response's body waits for the client's delayed ACK.",
            "mcp-proxy runs the SDK's JSON-only mode, which answers every request as JSON",
            "but can send neither progress nor a question to the client, nor resume a",
            "stream.",
            "",
            machine_line(),
            "",
            load_line(),
            "",
            "| path | p50 | p99 | p50 vs direct stdio | p50 vs direct HTTP | own CPU per call |",
            "|---|---|---|---|---|---|",
            *rows,
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--venvs", type=Path, default=VENVS)
    parser.add_argument("--no-write", action="store_true")
    options = parser.parse_args()
    if not EVERYTHING.exists():
        raise SystemExit("run scripts/install_test_mcp_servers.sh first (server-everything)")
    samples, cpu = asyncio.run(measure(options.calls, options.warmup, options.venvs))
    text = report(samples, cpu, options.calls, options.warmup)
    print(text)
    if not options.no_write:
        write_section("mcp-gateway", text)


if __name__ == "__main__":
    main()
