"""Take the README's screenshot of the operator's console from a real run.

Starts ``plughost serve --web`` on a copy of the example plugins, calls their
tools for a while through the console's own API (so the charts have something
to show), kills one runner so a crash and its restart appear, fills the
"try a tool" form for the image tool in Debian's Chromium (driven by
Playwright, as in the browser tests) and saves the page to docs/console.png.

    .venv/bin/python scripts/screenshot_console.py [--seconds 30] [--out docs/console.png]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
CALLS: list[tuple[str, dict[str, Any] | str]] = [
    ("get_weather", {"city": "Tokyo"}),
    ("get_weather", {"city": "Lisbon"}),
    ("search_web", {"query": "plugin isolation"}),
    ("unit_convert", {"value": 12, "from_unit": "km", "to_unit": "mi"}),
    ("unit_convert", {"value": "twelve", "from_unit": "km", "to_unit": "mi"}),
    ("render_swatch", {"color": "#1e90ff", "width": 64, "height": 32}),
    ("greet", {"target": "operators"}),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="how long to make calls")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "console.png")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        plugins = Path(tmp) / "plugins"
        shutil.copytree(
            ROOT / "plugins_example", plugins, ignore=shutil.ignore_patterns("__pycache__")
        )
        command = [sys.executable, "-m", "plughost", "serve", "--plugins", str(plugins)]
        command += ["--web", "127.0.0.1:0", "--log-format", "json"]
        serve = subprocess.Popen(command, cwd=tmp, stderr=subprocess.PIPE, text=True)
        try:
            login_url = _login_url(serve)
            _exercise(login_url, args.seconds)
            _screenshot(login_url, args.out)
        finally:
            serve.send_signal(signal.SIGINT)
            serve.wait(20)
    print(f"wrote {args.out}")
    return 0


def _login_url(serve: subprocess.Popen[str]) -> str:
    assert serve.stderr is not None
    for line in serve.stderr:
        if line.startswith('{"event": "web.started"'):
            return str(json.loads(line)["login_url"])
    raise SystemExit("plughost serve stopped before it served the console")


def _api(login_url: str, path: str, body: dict[str, Any] | None = None) -> Any:
    base, _, token = login_url.partition("#token=")
    request = urllib.request.Request(
        base.rstrip("/") + path,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"authorization": f"Bearer {token}", "content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def _exercise(login_url: str, seconds: float) -> None:
    """Call the example tools at a varying pace, and crash one runner halfway."""
    _wait_loaded(login_url)
    deadline = time.monotonic() + seconds
    crashed = False
    while time.monotonic() < deadline:
        tool, arguments = random.choice(CALLS)
        _api(login_url, "/api/call", {"tool": tool, "arguments": arguments})
        if not crashed and time.monotonic() > deadline - seconds / 2:
            crashed = True
            _kill_runner(login_url, "plughost.example-units")
        time.sleep(random.uniform(0.05, 0.6))
    _wait_loaded(login_url)


def _wait_loaded(login_url: str) -> None:
    for _ in range(200):
        plugins = _api(login_url, "/api/overview")["plugins"]
        if plugins and all(p["state"] == "loaded" for p in plugins):
            return
        time.sleep(0.1)
    raise SystemExit("the example plugins did not all load")


def _kill_runner(login_url: str, plugin_id: str) -> None:
    for plugin in _api(login_url, "/api/overview")["plugins"]:
        if plugin["plugin_id"] == plugin_id and plugin["pid"]:
            os.kill(plugin["pid"], signal.SIGKILL)


def _screenshot(login_url: str, out: Path) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(login_url)
        page.locator('tr[data-plugin] .state:text("loaded")').first.wait_for()
        page.click('tr[data-tool="render_swatch"] button.try')
        page.fill("#try-fields input[name=color]", "#1e90ff")
        page.fill("#try-fields input[name=end_color]", "#9333ea")
        page.fill("#try-fields input[name=width]", "240")
        page.click("#try-form button[type=submit]")
        page.locator("#try-result img").wait_for()
        page.wait_for_timeout(1500)  # one more overview tick, so every figure is fresh
        out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(out), full_page=True)
        browser.close()


if __name__ == "__main__":
    sys.exit(main())
