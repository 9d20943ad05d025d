"""Take the console's screenshots in docs/ from a real run, in Debian's Chromium.

Starts ``plughost serve --web`` on a copy of the example plugins and drives the
page with Playwright (as the browser tests do) through four moments:

``console-at-rest.png``     every plugin loaded, nothing called yet
``console.png``             under load: calls at a varying pace with an idle pause
                            (the chart's gap), one runner killed and restarted
``console-failed-try.png``  "try" on a tool far down the list, called with a city
                            it does not know: what the operator sees at once
``console-gave-up.png``     a runner killed until the restart policy gives up on it

    .venv/bin/python scripts/screenshot_console.py [--out-dir docs] [--seconds 20]
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
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, sync_playwright

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
VIEWPORT = {"width": 1400, "height": 900}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=ROOT / "docs")
    parser.add_argument("--seconds", type=float, default=20.0, help="each burst of calls")
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        plugins = Path(tmp) / "plugins"
        shutil.copytree(
            ROOT / "plugins_example", plugins, ignore=shutil.ignore_patterns("__pycache__")
        )
        command = [sys.executable, "-m", "plughost", "serve", "--plugins", str(plugins)]
        command += ["--web", "127.0.0.1:0", "--log-format", "json"]
        serve = subprocess.Popen(command, cwd=tmp, stderr=subprocess.PIPE, text=True)
        try:
            _take(_login_url(serve), args.out_dir, args.seconds)
        finally:
            serve.send_signal(signal.SIGINT)
            serve.wait(20)
    return 0


def _take(login_url: str, out: Path, seconds: float) -> None:
    _wait_for(login_url, lambda plugins: all(p["state"] == "loaded" for p in plugins))
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(login_url)
        page.locator('tr[data-plugin] .state:text("loaded")').first.wait_for()
        page.wait_for_timeout(1500)  # one overview tick more, so every figure is fresh
        _shot(page, out / "console-at-rest.png", full=True)

        _calls(login_url, seconds, crash="plughost.example-units")
        time.sleep(seconds)  # idle: the chart shows a gap here
        stop = threading.Event()
        load = threading.Thread(target=_keep_calling, args=(login_url, stop), daemon=True)
        load.start()
        time.sleep(seconds)
        _shot(page, out / "console.png", full=True)

        page.click('tr[data-tool="get_weather"] button.try')
        page.fill("#try-fields input[name=city]", "Atlantis")
        page.click("#try-form button[type=submit]")
        page.locator("#try-result .outcome").wait_for()
        page.wait_for_timeout(700)  # the highlight fades
        _shot(page, out / "console-failed-try.png", full=False)
        stop.set()
        load.join()

        _give_up(login_url, "plughost.example-notifier")
        page.evaluate("window.scrollTo(0, 0)")
        page.locator('tr[data-plugin="plughost.example-notifier"] .state:text("gave up")').wait_for(
            timeout=60_000
        )
        page.wait_for_timeout(1200)
        _shot(page, out / "console-gave-up.png", full=False)
        browser.close()


def _shot(page: Page, path: Path, *, full: bool) -> None:
    page.screenshot(path=str(path), full_page=full)
    print(f"wrote {path}")


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


def _call_one(login_url: str) -> None:
    tool, arguments = random.choice(CALLS)
    _api(login_url, "/api/call", {"tool": tool, "arguments": arguments})
    time.sleep(random.uniform(0.05, 0.5))


def _calls(login_url: str, seconds: float, crash: str) -> None:
    """Call the example tools at a varying pace, and crash ``crash``'s runner halfway."""
    deadline = time.monotonic() + seconds
    crashed = False
    while time.monotonic() < deadline:
        _call_one(login_url)
        if not crashed and time.monotonic() > deadline - seconds / 2:
            crashed = True
            os.kill(_pid(login_url, crash), signal.SIGKILL)
    _wait_for(login_url, lambda plugins: all(p["state"] == "loaded" for p in plugins))


def _keep_calling(login_url: str, stop: threading.Event) -> None:
    while not stop.is_set():
        _call_one(login_url)


def _give_up(login_url: str, plugin_id: str) -> None:
    """Kill ``plugin_id``'s runner each time it is back, until the host gives up on it."""
    for _ in range(20):
        pid = _pid(login_url, plugin_id)
        os.kill(pid, signal.SIGKILL)
        _wait_for(login_url, lambda plugins, pid=pid: _back_or_gone(_row(plugins, plugin_id), pid))
        if _row(_api(login_url, "/api/overview")["plugins"], plugin_id)["state"] == "gave up":
            return
    raise SystemExit(f"the host did not give up on {plugin_id}")


def _row(plugins: list[dict[str, Any]], plugin_id: str) -> dict[str, Any]:
    return next(p for p in plugins if p["plugin_id"] == plugin_id)


def _back_or_gone(row: dict[str, Any], killed: int) -> bool:
    return row["state"] == "gave up" or row["pid"] not in (killed, None)


def _pid(login_url: str, plugin_id: str) -> int:
    for _ in range(300):
        plugins = _api(login_url, "/api/overview")["plugins"]
        pid = next((p["pid"] for p in plugins if p["plugin_id"] == plugin_id), None)
        if pid:
            return int(pid)
        time.sleep(0.1)
    raise SystemExit(f"{plugin_id} has no runner")


def _wait_for(login_url: str, ready: Any) -> bool:
    for _ in range(600):
        plugins = _api(login_url, "/api/overview")["plugins"]
        if plugins and ready(plugins):
            return True
        time.sleep(0.1)
    raise SystemExit("the plugins did not reach the state waited for")


if __name__ == "__main__":
    sys.exit(main())
