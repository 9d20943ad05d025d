"""Benchmark the plughost command's start-up beside ``python -c pass`` in the same run.

Run as ``.venv/bin/python scripts/bench_cli.py``; it replaces the "cli" section of
docs/benchmarks.md.

Each command runs ``RUNS`` times, alternating with the baseline so that a busy
moment costs both alike; the medians and their ratio are reported. Targets:
``plughost --help`` within 6x ``python -c pass``; ``plughost tools`` and
``plughost call`` on one plugin within 0.5 s wall clock (these start a real
runner, so they include the runner's interpreter and the plugin's import).
``plughost serve`` on the example plugins is timed until its ``serve.started``
event (every plugin started), without and with ``--mcp-stdio``: only the
second imports the MCP SDK.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS))

from benchlib import ROOT, load_line, machine_line, median, write_section  # noqa: E402

COMMAND = ".venv/bin/python scripts/bench_cli.py"
RUNS = 15
PLUGHOST = str(ROOT / ".venv" / "bin" / "plughost")
PLUGIN = ROOT / "plugins_example" / "unit_converter"
HELP_TARGET_RATIO = 6.0
ONE_SHOT_TARGET_S = 0.5


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.decode()[-2000:]}")
    return elapsed


def timed_serve(argv: list[str], data: Path) -> float:
    """Seconds from spawning ``plughost serve`` to its ``serve.started`` event (then stopped)."""
    start = time.perf_counter()
    # stdin held open: with --mcp-stdio, its end would end serve.
    serving = subprocess.Popen(
        [*argv, "--no-watch", "--log-format", "json"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=data,
    )
    assert serving.stderr is not None
    lines = []
    try:
        for line in serving.stderr:
            if b'"serve.started"' in line:
                return time.perf_counter() - start
            lines.append(line)
        raise SystemExit(f"{' '.join(argv)} ended before it started: {b''.join(lines)[-2000:]!r}")
    finally:
        serving.send_signal(signal.SIGTERM)
        serving.communicate(timeout=60)


def _verdict(name: str, value: float, base: float) -> str:
    if name == "plughost --help":
        met = value / base <= HELP_TARGET_RATIO
        return f"target <= {HELP_TARGET_RATIO:g}x: {'met' if met else 'missed'}"
    if "1 plugin" in name:
        met = value <= ONE_SHOT_TARGET_S
        return f"target <= {ONE_SHOT_TARGET_S} s: {'met' if met else 'missed'}"
    if "serve" in name:
        return "measured"
    return "baseline"


def main() -> None:
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory() as data_folder:
        plugins, data = Path(folder), Path(data_folder)  # serve's data directory: its cwd
        (plugins / PLUGIN.name).symlink_to(PLUGIN)
        args = json.dumps({"value": 1, "from_unit": "m", "to_unit": "cm"})
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "plughost --help": [PLUGHOST, "--help"],
            "plughost tools (1 plugin)": [PLUGHOST, "tools", "--plugins", str(plugins)],
            "plughost call (1 plugin)": [
                *(PLUGHOST, "call", "unit_convert", "--plugins", str(plugins), "--args", args)
            ],
        }
        examples = str(ROOT / "plugins_example")
        serves = {
            "plughost serve (examples, until started)": [PLUGHOST, "serve", "--plugins", examples],
            "plughost serve --mcp-stdio (the same)": [
                *(PLUGHOST, "serve", "--plugins", examples, "--mcp-stdio")
            ],
        }
        samples: dict[str, list[float]] = {name: [] for name in [*commands, *serves]}
        for argv in commands.values():  # warm the page cache and .pyc files
            timed(argv)
        for argv in serves.values():
            timed_serve(argv, data)
        for _ in range(RUNS):
            for name, argv in commands.items():
                samples[name].append(timed(argv))
            for name, argv in serves.items():
                samples[name].append(timed_serve(argv, data))
    base = median(samples["python -c pass"])
    rows = []
    for name, values in samples.items():
        m = median(values)
        verdict = _verdict(name, m, base)
        rows.append(f"| `{name}` | {m * 1000:.0f} ms | {m / base:.1f}x | {verdict} |")
        print(f"{name:28s} median {m * 1000:7.1f} ms  {m / base:5.1f}x  {verdict}")
    write_section(
        "cli",
        "\n".join(
            [
                "## CLI start-up",
                "",
                f"`{COMMAND}` — median wall clock of {RUNS} runs each, interleaved with the",
                "baseline. The one-plugin commands start a real runner and load",
                "`plugins_example/unit_converter` in it. `plughost serve` runs on",
                "`plugins_example/` until its `serve.started` event (every plugin started,",
                "the table printed); without `--mcp-stdio` or `[mcp]` servers it never",
                "imports the MCP SDK, with `--mcp-stdio` it does.",
                "",
                machine_line(),
                "",
                load_line(),
                "",
                "| command | median | vs `python -c pass` | |",
                "|---|---|---|---|",
                *rows,
                "",
                "Which modules each command imports is pinned by",
                "`tests/host/cli/test_lazy_imports.py` (an import graph, not a timing).",
            ]
        ),
    )


if __name__ == "__main__":
    main()
