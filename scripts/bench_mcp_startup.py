"""Start-up of ``plughost serve --mcp-stdio`` as a pure gateway, next to its upstream alone.

What a client that starts a new server per session (langchain-mcp-adapters and
llama-index do so per call by default) waits for: from spawning the process to
the answer of its first ``tools/list``, and to the result of its first
``tools/call``. Two commands, started in turn (interleaved, so machine noise hits
both alike), each driven over its pipes with newline-delimited JSON-RPC (the
handshake-era protocol most clients speak):

- ``direct``: server-everything (npm), run with node;
- ``plughost``: ``plughost serve --mcp-stdio --no-watch --config up.toml``, whose
  ``up.toml`` has only an ``[mcp]`` table naming that same server (sandboxed, as
  every stdio server plughost starts); its first ``tools/list`` answer must list
  the upstream's tools.

Writes the ``mcp-startup`` section of docs/benchmarks.md.

Usage: ``.venv/bin/python scripts/bench_mcp_startup.py [--runs N] [--no-write]``
"""

from __future__ import annotations

import argparse
import json
import selectors
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import ROOT, load_line, machine_line, median, percentile, write_section

COMMAND = ".venv/bin/python scripts/bench_mcp_startup.py"
EVERYTHING = ROOT / ".venv-mcp-servers" / "node" / "node_modules" / ".bin" / "mcp-server-everything"
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


def one_start(argv: list[str], tool: str) -> tuple[float, float, int]:
    """Spawn, list, call; return (s to tools/list answer, s to tools/call result, tool count)."""
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
        return to_list, to_result, len(listed["result"]["tools"])
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--no-write", action="store_true")
    options = parser.parse_args()
    if not EVERYTHING.exists():
        raise SystemExit("run scripts/install_test_mcp_servers.sh first (server-everything)")
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "up.toml"
        config.write_text(
            f'[mcp.servers.everything]\ncommand = "node"\nargs = [{json.dumps(str(EVERYTHING))}]\n'
        )
        serve = [sys.executable, "-m", "plughost", "serve", "--no-watch", "--config", str(config)]
        starts = {
            "direct": (["node", str(EVERYTHING)], "echo"),
            "plughost": ([*serve, "--mcp-stdio"], "mcp_everything_echo"),
        }
        samples: dict[str, list[tuple[float, float, int]]] = {name: [] for name in starts}
        one_start(*starts["plughost"])  # warm the disk caches once, unmeasured
        for _ in range(options.runs):
            for name, (argv, tool) in starts.items():
                samples[name].append(one_start(argv, tool))
    rows = []
    base_list = median([s[0] for s in samples["direct"]])
    base_result = median([s[1] for s in samples["direct"]])
    for name, runs in samples.items():
        to_list = median([s[0] for s in runs])
        to_result = median([s[1] for s in runs])
        p90 = percentile([s[0] for s in runs], 90)
        tools = runs[0][2]
        rows.append(
            f"| {name} | {tools} | {to_list * 1000:.0f} ms | {p90 * 1000:.0f} ms "
            f"| {to_list / base_list:.2f}x | {to_result * 1000:.0f} ms "
            f"| {to_result / base_result:.2f}x |"
        )
    text = "\n".join(
        [
            "## MCP gateway start-up",
            "",
            f"`{COMMAND}` — median of {options.runs} starts each, interleaved: from",
            "spawning the process to the answer of its first `tools/list`, and to the result",
            "of its first `tools/call` (`echo`), over stdio with the handshake-era protocol.",
            "`direct` is server-everything (npm, run with node) alone; `plughost` is",
            "`plughost serve --mcp-stdio` with a config holding only an `[mcp]` table that",
            "names the same server (started sandboxed, as every stdio server plughost starts).",
            "",
            "A pure gateway starts no fork server (only runners use one), and its upstream",
            "servers connect while the host starts and builds `tool_search`. What remains is",
            "mostly the interpreter importing pydantic and the MCP SDK, and the upstream's",
            "start under plughost's sandbox launcher (`python -X importtime -m plughost serve`",
            "shows the first). plughost lists more tools: server-everything offers more to a",
            "client that can sample and elicit, its resources and prompts become tools, and",
            "serve adds `tool_search`.",
            "",
            machine_line(),
            "",
            load_line(),
            "",
            "| start | tools listed | first `tools/list` | p90 | vs direct "
            "| first result | vs direct |",
            "|---|---|---|---|---|---|---|",
            *rows,
        ]
    )
    print(text)
    if not options.no_write:
        write_section("mcp-startup", text)


if __name__ == "__main__":
    main()
