"""Start-up of ``plughost serve`` over MCP, cold and warm, next to its upstream alone.

What a client that starts a new server per session (langchain-mcp-adapters and
llama-index do so per call by default) waits for: from spawning the process to
the answer of its first ``tools/list``, and to the result of its first
``tools/call``. The commands are started in turn (interleaved, so machine noise
hits all alike), each driven over its pipes with newline-delimited JSON-RPC, or
over HTTP (the handshake-era protocol most clients speak):

- ``direct``: server-everything (npm), run with node;
- ``gateway``: ``plughost serve --mcp-stdio --no-watch --config up.toml``, whose
  ``up.toml`` has only an ``[mcp]`` table naming that same server (sandboxed, as
  every stdio server plughost starts), cold (no tool catalogue);
- ``cold`` and ``warm``: ``plughost serve --mcp-stdio`` with the example plugins
  (plugins_example/) and two upstreams (server-everything and mcp-server-time),
  without a tool catalogue (deleted before each start) and with the one the
  previous start left;
- ``http cold`` and ``http warm``: the same over streamable HTTP (``--mcp-http``),
  the client polling the port until it accepts.

Every first ``tools/list`` answer must list the upstream's tools.

Writes the ``mcp-startup`` section of docs/benchmarks.md.

Usage: ``.venv/bin/python scripts/bench_mcp_startup.py [--runs N] [--no-write]``
"""

from __future__ import annotations

import argparse
import json
import selectors
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchlib import ROOT, load_line, machine_line, median, percentile, write_section

COMMAND = ".venv/bin/python scripts/bench_mcp_startup.py"
EVERYTHING = ROOT / ".venv-mcp-servers" / "node" / "node_modules" / ".bin" / "mcp-server-everything"
TIME = ROOT / ".venv-mcp-servers" / "bin" / "mcp-server-time"
EXAMPLES = ROOT / "plugins_example"
CATALOGUE = "tool-catalogue.json"
"""serve's tool catalogue, beside the per-plugin data directories."""
DEADLINE_S = 60.0
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}


def send(process: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()


def answer(process: subprocess.Popen[bytes], wanted: int, lines: list[bytes]) -> dict[str, Any]:
    """Read stdout until the response with id ``wanted``; fail past the deadline."""
    assert process.stdout is not None
    deadline = time.monotonic() + DEADLINE_S
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        buffer = b""
        while True:
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                message = json.loads(line)
                if message.get("id") == wanted:
                    lines.append(buffer)
                    return message  # type: ignore[no-any-return]
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                raise SystemExit(f"no answer to request {wanted} within {DEADLINE_S:g} s")
            chunk = process.stdout.read1(65536)  # type: ignore[attr-defined]
            if not chunk:
                raise SystemExit(f"the server closed stdout before answering request {wanted}")
            buffer += chunk


def one_start(argv: list[str], tool: str, forget: Path | None = None) -> Sample:
    """Spawn, list, call, close stdin; return the times (s) and the number of tools listed.

    The times: to the ``tools/list`` answer and to the ``tools/call`` result from the
    spawn, and from closing stdin to the process's exit (what a client that opens a
    session per call, and waits for its server to end, pays after each call).
    ``forget``, if given, is deleted first (the tool catalogue, for a cold start).
    """
    if forget is not None:
        forget.unlink(missing_ok=True)
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        rest: list[bytes] = []
        send(process, INITIALIZE)
        send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        listed = answer(process, 2, rest)
        to_list = time.perf_counter() - started
        arguments = {"message": "hello"}
        call = {"name": tool, "arguments": arguments}
        send(process, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
        result = answer(process, 3, rest)
        to_result = time.perf_counter() - started
        if "error" in result or result["result"].get("isError"):
            raise SystemExit(f"{tool} failed: {result}")
        names = [t["name"] for t in listed["result"]["tools"]]
        if tool not in names:
            raise SystemExit(f"the first tools/list lacks {tool}: {names}")
        assert process.stdin is not None
        closed = time.perf_counter()
        process.stdin.close()
        process.wait(DEADLINE_S)
        return to_list, to_result, len(names), time.perf_counter() - closed
    finally:
        assert process.stdin is not None
        process.stdin.close()
        _reap(process, 10)


def _reap(process: subprocess.Popen[bytes], seconds: float) -> None:
    """Wait for a server told to end; kill it past ``seconds``."""
    try:
        process.wait(seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def one_http_start(argv: list[str], tool: str, forget: Path | None = None) -> Sample:
    """As :func:`one_start`, over streamable HTTP: ``argv`` is ``serve`` without the transport.

    The client polls the port until it accepts, as a client started beside the
    server would, then sends the same requests as HTTP POSTs.
    """
    import httpx

    if forget is not None:
        forget.unlink(missing_ok=True)
    port = _free_port()
    token_file = Path(argv[-1]).parent / "mcp-token"
    address = f"127.0.0.1:{port}"
    started = time.perf_counter()
    process = subprocess.Popen(
        [*argv, "--mcp-http", address, "--mcp-token-file", str(token_file)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, process)
        headers = {
            "Authorization": f"Bearer {token_file.read_text().strip()}",
            "Accept": "application/json, text/event-stream",
        }
        url = f"http://{address}/mcp"
        with httpx.Client(headers=headers, timeout=DEADLINE_S) as http:
            reply = http.post(url, json=INITIALIZE)
            http.headers["mcp-session-id"] = reply.headers["mcp-session-id"]
            http.headers["mcp-protocol-version"] = "2025-11-25"
            http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
            listed = _http_answer(
                http.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            )
            to_list = time.perf_counter() - started
            call = {"name": tool, "arguments": {"message": "hello"}}
            message = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}
            result = _http_answer(http.post(url, json=message))
            to_result = time.perf_counter() - started
        if "error" in result or result["result"].get("isError"):
            raise SystemExit(f"{tool} failed over HTTP: {result}")
        return to_list, to_result, len(listed["result"]["tools"]), None  # a client ends no server
    finally:
        process.terminate()
        _reap(process, 30)


def _http_answer(reply: Any) -> dict[str, Any]:
    """The JSON-RPC response in a streamable HTTP reply: a JSON body or SSE ``data:`` lines."""
    reply.raise_for_status()
    if reply.headers.get("content-type", "").startswith("application/json"):
        return reply.json()  # type: ignore[no-any-return]
    for line in reply.text.splitlines():
        data = line[5:].strip() if line.startswith("data:") else ""
        if data:  # an event without data primes the stream
            message = json.loads(data)
            if "id" in message:
                return message  # type: ignore[no-any-return]
    raise SystemExit(f"no JSON-RPC response in the reply: {reply.text[:200]!r}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"serve exited with {process.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.005)  # a client's poll for the port, not a synchronisation
    raise SystemExit(f"nothing listened on port {port} within {DEADLINE_S:g} s")


def _config(folder: Path, plugins: Path | None, servers: str) -> Path:
    """A serve config in ``folder``, whose data (and tool catalogue) stay in it."""
    folder.mkdir()
    host = [f"data_dir = {json.dumps(str(folder / 'data' / 'plugins'))}"]
    host.append(f"temp_dir = {json.dumps(str(folder / 'temp'))}")
    if plugins is not None:
        host.append(f"plugin_dirs = [{json.dumps(str(plugins))}]")
    path = folder / "up.toml"
    path.write_text("[host]\n" + "\n".join(host) + "\n" + servers)
    return path


Sample = tuple[float, float, int, float | None]
"""To the first list, to the first result, tools listed, from closing stdin to the exit."""
Start = tuple[Callable[..., Sample], list[str], str, Path | None]


def _starts(folder: Path) -> dict[str, Start]:
    """Each contender: its command, the tool it calls, and what to delete before it starts."""
    everything = f'command = "node"\nargs = [{json.dumps(str(EVERYTHING))}]\n'
    upstreams = f"[mcp.servers.time]\ncommand = {json.dumps(str(TIME))}\n"
    gateway = _config(folder / "gateway", None, f"[mcp.servers.everything]\n{everything}")
    gateway_warm = _config(folder / "gateway-warm", None, f"[mcp.servers.everything]\n{everything}")
    both = f"[mcp.servers.everything]\n{everything}{upstreams}"
    cold = _config(folder / "cold", EXAMPLES, both)
    warm = _config(folder / "warm", EXAMPLES, both)
    http_cold = _config(folder / "http-cold", EXAMPLES, both)
    http_warm = _config(folder / "http-warm", EXAMPLES, both)
    serve = [sys.executable, "-m", "plughost", "serve", "--no-watch", "--config"]
    stdio, http = one_start, one_http_start
    tool = "mcp_everything_echo"
    return {
        "direct": (stdio, ["node", str(EVERYTHING)], "echo", None),
        "gateway": (stdio, [*serve, str(gateway), "--mcp-stdio"], tool, _forget(gateway)),
        "gateway warm": (stdio, [*serve, str(gateway_warm), "--mcp-stdio"], tool, None),
        "cold": (stdio, [*serve, str(cold), "--mcp-stdio"], tool, _forget(cold)),
        "warm": (stdio, [*serve, str(warm), "--mcp-stdio"], tool, None),
        "http cold": (http, [*serve, str(http_cold)], tool, _forget(http_cold)),
        "http warm": (http, [*serve, str(http_warm)], tool, None),
    }


def _forget(config: Path) -> Path:
    """The tool catalogue of ``config``, deleted before each start for a cold one."""
    return config.parent / "data" / CATALOGUE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--no-write", action="store_true")
    options = parser.parse_args()
    if not EVERYTHING.exists():
        raise SystemExit("run scripts/install_test_mcp_servers.sh first (server-everything)")
    if not TIME.exists():
        raise SystemExit("run scripts/install_test_mcp_servers.sh first (mcp-server-time)")
    with tempfile.TemporaryDirectory() as folder:
        starts = _starts(Path(folder))
        samples: dict[str, list[Sample]] = {name: [] for name in starts}
        for run, *start in starts.values():
            run(*start)  # warm the disk caches once, unmeasured; leaves a catalogue
        for _ in range(options.runs):
            for name, (run, *start) in starts.items():
                samples[name].append(run(*start))
    rows = []
    base_list = median([s[0] for s in samples["direct"]])
    base_result = median([s[1] for s in samples["direct"]])
    for name, runs in samples.items():
        to_list = median([s[0] for s in runs])
        to_result = median([s[1] for s in runs])
        p90 = percentile([s[0] for s in runs], 90)
        tools = runs[0][2]
        exits = [s[3] for s in runs if s[3] is not None]
        exit_ms = f"{median(exits) * 1000:.0f} ms" if exits else "(HTTP)"
        rows.append(
            f"| {name} | {tools} | {to_list * 1000:.0f} ms | {p90 * 1000:.0f} ms "
            f"| {to_list / base_list:.2f}x | {to_result * 1000:.0f} ms "
            f"| {to_result / base_result:.2f}x | {exit_ms} |"
        )
    text = "\n".join(
        [
            "## MCP gateway start-up",
            "",
            f"`{COMMAND}` — median of {options.runs} starts each, interleaved: from",
            "spawning the process to the answer of its first `tools/list`, and to the result",
            "of its first `tools/call` (`echo`), with the handshake-era protocol.",
            "`direct` is server-everything (npm, run with node) alone; `gateway` is",
            "`plughost serve --mcp-stdio` with a config holding only an `[mcp]` table that",
            "names the same server (started sandboxed, as every stdio server plughost starts),",
            "without a tool catalogue (`gateway warm`: with the one the previous start",
            "left); `cold` and `warm` serve the example plugins",
            "(plugins_example/) and two upstreams (server-everything and mcp-server-time),",
            "`cold` with its tool catalogue deleted before each start, `warm` with the one",
            "the previous start left. `http cold` and `http warm` are the same two over",
            "streamable HTTP (`--mcp-http`): the client polls the port until it accepts,",
            "then posts the same requests.",
            "",
            "Warm over stdio, `initialize` and `tools/list` are answered before serve has",
            "imported the MCP SDK, from the last start's answers (`mcp-first-answers.json`,",
            "which holds while the catalogue would serve the same list); warm over HTTP,",
            "`tools/list` is answered from the catalogue while the runners and the",
            "upstream connections start (the port is open from",
            "the start). The first `tools/call`, to server-everything, runs as soon as",
            "server-everything has connected, whatever mcp-server-time (a Python server",
            "started sandboxed, the slower) and the plugins' runners are doing: its result",
            "is bounded by that one upstream's start, which competes for the CPUs with the",
            "runners'. Cold (`gateway` included), only",
            "`initialize` is answered first, and `tools/list` waits for the live list:",
            "the runners' start and the slowest upstream's connection. Every plughost row",
            "keeps the memo of the upstreams' last launch (`mcp-launch.json`; only the",
            "catalogue is deleted), so serve starts them, sandboxed, before it imports the",
            "MCP SDK, and their start overlaps its imports. What a pure gateway still pays is",
            "mostly the interpreter importing pydantic and the MCP SDK (`python -X importtime",
            "-m plughost serve`). plughost lists more tools: server-everything",
            "offers more to a client that can sample and elicit, its resources and prompts",
            "become tools, and serve adds `tool_search`. `stdin closed to exit` is what a",
            "client that opens a session per call and waits for its server's end pays",
            "after each call: serve ends once its host is closed, without waiting for work",
            "that no longer matters (the tool search model still loading, say), but it does",
            "wait for its upstreams to end: closing their stdin, then SIGTERM after 2 s, as",
            "the MCP specification's shutdown asks. No configuration here names `[mcp] roots`,",
            "so plughost offers server-everything no roots, as `direct`'s client does: offered",
            "them, it asks for them as its input ends and waits for that SIGTERM (2.07 s to",
            "exit instead of 0.26 to 0.36 s, measured before that changed).",
            "",
            machine_line(),
            "",
            load_line(),
            "",
            "| start | tools listed | first `tools/list` | p90 | vs direct "
            "| first result | vs direct | stdin closed to exit |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
        ]
    )
    print(text)
    if not options.no_write:
        write_section("mcp-startup", text)


if __name__ == "__main__":
    main()
