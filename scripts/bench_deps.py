"""Benchmark: installing a plugin's packages (aiohttp, pillow, beautifulsoup4), uv against pip.

Downloads the three packages' wheels (with their dependencies) from PyPI into a
temporary wheel directory first, untimed; every timed install then reads only
that directory (offline), so the network is not measured. For each installer:
a first install (empty cache) and a cached install (a new target, the cache of
the first) into a ``--target`` directory, as plughost's environments are. Then
the host's own path (:class:`plughost.dependencies.PluginEnvironments`): a
plugin's first start (uv, empty cache), another set's start with the cache warm,
and a second plugin asking for the same set (the environment reused).

Usage: .venv/bin/python scripts/bench_deps.py
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import load_line, machine_line, write_section

from plughost.dependencies import PluginEnvironments
from plughost.dependencies.installer import uv_binary
from plughost.events import EventBus
from plughost.plugins.source import read_plugin
from plughost.settings import DependencySettings, HostSettings

COMMAND = ".venv/bin/python scripts/bench_deps.py"
PACKAGES = ["aiohttp", "pillow", "beautifulsoup4"]
WHERE_THE_TIME_GOES = (
    "Where the time goes: uv unpacks each wheel once into its cache and links the files "
    "into each target from there, so a cached install is mostly file-system calls; pip "
    "unpacks every wheel again for each target, so its cache saves it nothing when the "
    "wheels are local. A set already installed costs only reading the plugin's "
    "requirements and finding the environment's marker file."
)


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - started


def uv_install(wheels: Path, target: Path, cache: Path) -> list[str]:
    return [
        *(uv_binary(), "pip", "install", "--target", str(target), "--python", sys.executable),
        *("--cache-dir", str(cache), "--offline", "--no-index", "--find-links", str(wheels)),
        *PACKAGES,
    ]


def pip_install(wheels: Path, target: Path, cache: Path) -> list[str]:
    return [
        *(sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--quiet"),
        *("--target", str(target), "--cache-dir", str(cache)),
        *("--no-index", "--find-links", str(wheels)),
        *PACKAGES,
    ]


def write_plugin(folder: Path, plugin_id: str, requirements: list[str]) -> Path:
    folder.mkdir(parents=True)
    manifest = {"manifest_version": 2, "id": plugin_id, "version": "1.0.0", "name": plugin_id}
    (folder / "_manifest.json").write_text(json.dumps({**manifest, "author": {"name": "b"}}))
    (folder / "plugin.py").write_text("")
    (folder / "requirements.txt").write_text("\n".join(requirements) + "\n")
    return folder


async def host_path(work: Path, wheels: Path) -> dict[str, float]:
    """The host's own install path: first, cache warm, environment reused."""
    settings = HostSettings(
        data_dir=work / "data",
        dependencies=DependencySettings(wheel_dir=wheels, offline=True),
    )
    store = PluginEnvironments(lambda: settings, EventBus(), lambda problem: None)
    timings = {}
    cases = {
        "first start (empty cache)": (["aiohttp", "pillow", "beautifulsoup4"], "bench.first"),
        "another set, cache warm": (["aiohttp", "pillow", "beautifulsoup4>=4"], "bench.warm"),
        "same set as a running plugin": (["aiohttp", "pillow", "beautifulsoup4"], "bench.same"),
    }
    for label, (requirements, plugin_id) in cases.items():
        source = read_plugin(write_plugin(work / "plugins" / plugin_id, plugin_id, requirements))
        started = time.perf_counter()
        await store.prepare(source)
        timings[label] = time.perf_counter() - started
    return timings


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        wheels = work / "wheels"
        download = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check"]
        download += ["--quiet", "--only-binary", ":all:", "--dest", str(wheels), *PACKAGES]
        print(f"downloading wheels: {timed(download):.1f} s", file=sys.stderr)
        count = len(list(wheels.glob("*.whl")))
        rows = []
        for name, command in (("uv", uv_install), ("pip", pip_install)):
            cache = work / f"cache-{name}"
            first = timed(command(wheels, work / f"{name}-first", cache))
            cached = timed(command(wheels, work / f"{name}-cached", cache))
            rows.append((name, first, cached))
            print(f"{name}: first {first:.2f} s, cached {cached:.2f} s", file=sys.stderr)
        host = asyncio.run(host_path(work, wheels))
    uv, pip = rows
    lines = [
        "## Plugin dependencies",
        "",
        f"Command: `{COMMAND}`",
        "",
        machine_line(),
        "",
        load_line(),
        "",
        f"One plugin needing {', '.join(PACKAGES)}: {count} wheels with their dependencies, "
        "downloaded from PyPI before timing; every install below reads only that wheel "
        "directory (offline), into a `--target` directory. One run each.",
        "",
        "| installer | first install (empty cache) | cached install (new target) |",
        "|---|---|---|",
        *(f"| {n} | {f:.2f} s | {c:.2f} s |" for n, f, c in rows),
        f"| pip / uv | {pip[1] / uv[1]:.1f}x | {pip[2] / uv[2]:.1f}x |",
        "",
        "The host's own path (`PluginEnvironments.prepare`: read the requirements, check them "
        "against the runner's packages, install with uv):",
        "",
        "| case | time |",
        "|---|---|",
        *(f"| {label} | {seconds:.2f} s |" for label, seconds in host.items()),
        "",
        WHERE_THE_TIME_GOES,
    ]
    write_section("deps", "\n".join(lines))


if __name__ == "__main__":
    main()
