"""Benchmark component dispatch: a command, an event, a hook chain and an API, next to a tool call.

One plugin, written to a temporary folder, declares one of each: a command, an
intercepting event handler, a blocking hook handler, an API and a tool, all
trivial, so what is timed is the host's dispatch plus one round trip to the
plugin's runner. A tool call through ``host.invoke`` (the same round trip
through the tool registry) is the baseline. A second plugin adds 100 commands
that never match, to time matching a message against many patterns.

It writes the section ``dispatch`` of docs/benchmarks.md.

Usage: .venv/bin/python scripts/bench_dispatch.py [--calls N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import benchlib

from plughost.host import PluginHost
from plughost.settings import HostSettings

MANIFEST = """{{"manifest_version": 2, "id": "bench.{name}", "version": "1.0.0",
  "name": "{name}", "author": {{"name": "bench"}},
  "plughost_sdk": {{"min_version": "0.1.0", "max_version": "0.99.99"}}}}
"""

COMPONENTS = textwrap.dedent(
    """
    from typing import Any
    from plughost_sdk import API, Command, EventHandler, EventType, HookHandler, Plugin, Tool

    class Bench(Plugin):
        @Command("ping", pattern=r"^/ping")
        async def ping(self, **kwargs: Any) -> Any:
            return True, "pong", True

        @EventHandler("mark", event_type=EventType.ON_MESSAGE_PRE_PROCESS, intercept_message=True)
        async def mark(self, message: dict, **kwargs: Any) -> Any:
            return {"modified_message": {**message, "marked": True}}

        @HookHandler("bench.hook")
        async def rewrite(self, **kwargs: Any) -> Any:
            return {"modified_kwargs": {**kwargs, "seen": True}}

        @API("echo", public=True)
        async def echo(self, value: Any = None) -> Any:
            return value

        @Tool(
            "echo_tool",
            brief_description="Echo the value",
            parameters={"value": {"type": "integer", "description": "Any number"}},
        )
        async def echo_tool(self, value: Any = None, **kwargs: Any) -> Any:
            return {"value": value}

    def create_plugin() -> Bench:
        return Bench()
    """
)

MANY = "from typing import Any\nfrom plughost_sdk import Command, Plugin\n\nclass Many(Plugin):\n"
MANY += "".join(
    f"    @Command('c{n}', pattern=r'^/never{n}\\b')\n"
    f"    async def c{n}(self, **kwargs: Any) -> Any:\n        return True, 'x', True\n\n"
    for n in range(100)
)
MANY += "\ndef create_plugin() -> Many:\n    return Many()\n"


def _write(root: Path, name: str, source: str) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "_manifest.json").write_text(MANIFEST.format(name=name), encoding="utf-8")
    (folder / "plugin.py").write_text(source, encoding="utf-8")
    return folder


async def _time(calls: int, call: Callable[[], Awaitable[bool]]) -> tuple[list[float], int]:
    for _ in range(min(50, calls)):  # warm up: caches, the runner's first calls
        await call()
    samples, failed = [], 0
    for _ in range(calls):
        started = time.perf_counter()
        ok = await call()
        samples.append((time.perf_counter() - started) * 1000)
        failed += 0 if ok else 1
    return samples, failed


async def measure(calls: int) -> dict[str, tuple[list[float], int]]:
    with tempfile.TemporaryDirectory(prefix="plughost-bench-dispatch-") as scratch:
        root = Path(scratch)
        folders = [_write(root, "one", COMPONENTS), _write(root, "many", MANY)]
        settings = HostSettings(data_dir=root / "data", temp_dir=root / "temp")
        async with PluginHost(folders, settings=settings) as host:
            if host.problems:
                raise SystemExit(f"plugins failed to load: {host.problems}")
            message = {"processed_plain_text": "hello"}

            async def tool() -> bool:
                return (await host.invoke("echo_tool", {"value": 1})).success

            async def command() -> bool:
                return (await host.dispatch_command("/ping")).success

            async def no_match() -> bool:
                return not (await host.dispatch_command("just chatting")).handled

            async def event() -> bool:
                outcome = await host.emit_event("on_message_pre_process", message)
                return bool(outcome.message and outcome.message.get("marked"))

            async def hook() -> bool:
                return bool((await host.run_hook("bench.hook", x=1)).kwargs.get("seen"))

            async def api() -> bool:
                return (await host.call_api("bench.one.echo", value=1)).result == 1

            cases: dict[str, Callable[[], Awaitable[bool]]] = {
                "tool call (baseline): host.invoke": tool,
                "command: dispatch_command, matched": command,
                "no command matches (101 patterns, no runner call)": no_match,
                "event: emit_event, 1 intercepting handler": event,
                "hook: run_hook, 1 blocking handler": hook,
                "API: call_api": api,
            }
            return {name: await _time(calls, case) for name, case in cases.items()}


def report(results: dict[str, tuple[list[float], int]], calls: int) -> str:
    base = benchlib.median(results["tool call (baseline): host.invoke"][0])
    lines = [
        "## Component dispatch: commands, events, hooks, APIs",
        "",
        "Command: `.venv/bin/python scripts/bench_dispatch.py`",
        "",
        benchlib.machine_line(),
        "",
        f"{calls} sequential calls per case, after a warm-up, against one plugin whose "
        "command, event handler, hook handler, API and tool are trivial, so each case is "
        "the host's dispatch plus one round trip to the plugin's runner; a second plugin "
        "holds 100 commands that never match.",
        "",
        f"1-minute load average when it ended: {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} CPUs (above the CPU count, p99s mostly measure other processes).",
        "",
        "| case | p50 | p99 | p50 vs a tool call | failed |",
        "|---|---|---|---|---|",
    ]
    for name, (samples, failed) in results.items():
        p50, p99 = benchlib.median(samples), benchlib.percentile(samples, 99)
        lines.append(f"| {name} | {p50:.3f} ms | {p99:.3f} ms | {p50 / base:.2f}x | {failed} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    results = asyncio.run(measure(args.calls))
    text = report(results, args.calls)
    print(text)
    if not args.no_write:
        benchlib.write_section("dispatch", text)
    if any(failed for _, failed in results.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
