"""The operator's console in a real headless Chromium, over ``plughost serve --web``.

One ``plughost serve`` process on a copy of the example plugins, one browser
and one page serve every test here; the page is loaded once and never
reloaded, so whatever changes on it arrived live. Chromium is Debian's
(``scripts/install_test_browser.sh``); Playwright drives it and never downloads
a browser of its own.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
WAIT_MS = 20_000
RESTART_WINDOW = 1.0  # short, so a test sees a restart leave the window and stay counted

if not CHROMIUM.exists():
    pytest.skip(
        f"no Chromium at {CHROMIUM}: run scripts/install_test_browser.sh (Debian's chromium)",
        allow_module_level=True,
    )
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="Playwright for Python is not installed (pip install playwright)"
)
expect = sync_api.expect


class Served:
    """A ``plughost serve --web`` process, started at once, and the console address it prints."""

    def __init__(self, plugins: Path, workdir: Path, *extra: str) -> None:
        command = [sys.executable, "-m", "plughost", "serve", "--plugins", str(plugins)]
        command += ["--web", "127.0.0.1:0", "--log-format", "json", *extra]
        self.process = subprocess.Popen(
            command,
            cwd=workdir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._started = threading.Event()
        self.login_url = ""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def wait_started(self) -> str:
        """The console's login URL, once serve printed it."""
        if not self._started.wait(30):
            raise AssertionError("serve printed no web.started line:\n" + "".join(self.lines))
        return self.login_url

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)
            if line.startswith('{"event": "web.started"'):
                self.login_url = json.loads(line)["login_url"]
                self._started.set()

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join(5)
        if self.process.stderr is not None:
            self.process.stderr.close()


@pytest.fixture(scope="module")
def plugins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("console") / "plugins"
    shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


@pytest.fixture(scope="module")
def served(plugins: Path) -> Iterator[Served]:
    config = plugins.parent / "plughost.toml"
    config.write_text(f"[host.runner]\nrestart_window = {RESTART_WINDOW}\n")
    server = Served(plugins, plugins.parent, "--config", str(config))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def page(served: Served, browser: Any) -> Iterator[Any]:
    """One page for the whole module, loaded once: every later change on it came live."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(served.wait_started())  # serve started first; Chromium launched meanwhile
    yield page
    context.close()
    assert not errors, f"the page raised: {errors}"


def _example_ids() -> list[str]:
    return sorted(
        json.loads((folder / "_manifest.json").read_text())["id"]
        for folder in EXAMPLES.iterdir()
        if (folder / "_manifest.json").exists()
    )


def test_the_page_shows_every_example_plugin_loaded(page: Any) -> None:
    for plugin_id in _example_ids():
        row = page.locator(f'tr[data-plugin="{plugin_id}"]')
        expect(row.locator(".state")).to_have_text("loaded", timeout=WAIT_MS)
        expect(row.locator(".pid")).to_have_text(_digits())
    expect(page.locator("#live")).to_have_text("live")


def test_a_runner_crash_and_its_restart_appear_without_reloading_the_page(page: Any) -> None:
    row = page.locator('tr[data-plugin="plughost.example-units"]')
    expect(row.locator(".state")).to_have_text("loaded", timeout=WAIT_MS)
    old_pid = int(row.locator(".pid").inner_text())

    os.kill(old_pid, signal.SIGKILL)

    feed = page.locator("#feed")
    expect(feed.locator('li[data-kind="runner.crashed"]')).to_have_count(1, timeout=WAIT_MS)
    expect(row.locator(".restarts")).to_have_text("1", timeout=WAIT_MS)
    expect(row.locator(".state")).to_have_text("loaded", timeout=WAIT_MS)
    expect(row.locator(".pid")).not_to_have_text(str(old_pid), timeout=WAIT_MS)
    expect(row.locator(".pid")).to_have_text(_digits())


def test_editing_a_plugin_shows_the_reload_and_the_new_version(page: Any, plugins: Path) -> None:
    row = page.locator('tr[data-plugin="plughost.example-greeter"]')
    expect(row.locator(".state")).to_have_text("loaded", timeout=WAIT_MS)
    manifest = plugins / "legacy_greeter" / "_manifest.json"
    data = json.loads(manifest.read_text())
    data["version"] = "1.0.1"

    edited = manifest.with_suffix(".tmp")
    edited.write_text(json.dumps(data))
    edited.replace(manifest)  # one complete edit, as an editor saves

    feed = page.locator("#feed")
    expect(feed.locator('li[data-kind="reload.succeeded"]').first).to_be_visible(timeout=WAIT_MS)
    expect(row.locator("td").nth(1)).to_have_text("1.0.1", timeout=WAIT_MS)


def test_a_tools_schema_and_the_form_for_an_image_result_show_the_image(page: Any) -> None:
    tool = page.locator('tr[data-tool="render_swatch"]')
    tool.locator("summary").click(timeout=WAIT_MS)
    expect(tool.locator("pre")).to_contain_text('"end_color"')
    tool.locator("button.try").click()
    page.fill("#try-fields input[name=color]", "green")
    page.fill("#try-fields input[name=width]", "40")
    page.click("#try-form button[type=submit]")

    image = page.locator("#try-result img")
    expect(image).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#try-result .outcome")).to_have_text("success")
    assert image.evaluate("img => img.complete && img.naturalWidth") == 40


def test_without_its_token_the_page_shows_nothing_until_the_token_is_given(
    served: Served, browser: Any
) -> None:
    base, _, token = served.wait_started().partition("#token=")
    context = browser.new_context()
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(base)  # no fragment: the console's address without its token

    expect(page.locator("#feed")).to_contain_text("needs its token", timeout=WAIT_MS)
    expect(page.locator("#plugins tbody tr")).to_have_count(0)
    page.fill("#token", token)
    page.locator("#token").dispatch_event("change")

    row = page.locator('tr[data-plugin="plughost.example-units"]')
    expect(row.locator(".state")).to_have_text("loaded", timeout=WAIT_MS)
    expect(page.locator("#live")).to_have_text("live")
    context.close()
    assert not errors, f"the page raised: {errors}"


def test_the_strip_and_each_row_say_at_a_glance_how_things_are(page: Any) -> None:
    ids = _example_ids()
    loaded = page.locator('[data-tile="loaded"]')
    expect(loaded.locator(".value")).to_have_text(f"{len(ids)} / {len(ids)}", timeout=WAIT_MS)
    expect(loaded).to_have_class(re.compile(r"\bok\b"))
    expect(page.locator('[data-tile="attention"] .value')).to_have_text("0")
    expect(page.locator('[data-tile="sandbox"] .value')).to_have_text(re.compile(r"^\d+ / \d+$"))

    row = page.locator('tr[data-plugin="plughost.example-chat-guard"]')
    expect(row).to_have_class(re.compile(r"\btone-ok\b"))
    # Found and read in one script run: the live page redraws its rows, and a row
    # detached between the two has no computed style at all.
    glyph = page.evaluate(
        "() => getComputedStyle(document.querySelector("
        "'tr[data-plugin=\"plughost.example-chat-guard\"] .state'), '::before').content"
    )
    assert glyph not in ("", "none", "normal", '""')
    expect(row.locator("td.id")).to_have_attribute(
        "title", re.compile("^plughost.example-chat-guard\n")
    )
    expect(row.locator("td.memory")).to_have_css("white-space", "nowrap")
    details = page.locator('tr[data-plugin-details="plughost.example-chat-guard"]')
    expect(details).not_to_contain_text('["')  # no raw JSON arrays
    expect(details.locator(".chip", has_text="components")).to_have_text("3 components")
    host_set = page.locator('[data-tile="sandbox"] .value').inner_text().split(" / ")[0]
    badge = f"sandbox {host_set}/{host_set}" if host_set != "0" else "no sandbox"
    expect(details.locator("details.sandbox summary")).to_have_text(badge)


def test_a_failed_try_shows_its_error_code_and_message_without_a_click(page: Any) -> None:
    page.locator('tr[data-tool="get_weather"] button.try').click(timeout=WAIT_MS)
    page.fill("#try-fields input[name=city]", "Atlantis")
    page.click("#try-form button[type=submit]")

    result = page.locator("#try-result .result.failed")
    expect(result.locator(".outcome")).to_have_text("failed", timeout=WAIT_MS)
    expect(result.locator(".error-code")).to_have_text("tool_error")
    message = result.locator(".error-message")
    expect(message).to_be_visible()
    expect(message).to_contain_text("No weather data for 'Atlantis'. Known cities:")
    expect(message).to_be_in_viewport()


def test_try_on_a_tool_far_down_brings_its_form_into_view_with_the_cursor_in_it(
    page: Any,
) -> None:
    page.set_viewport_size({"width": 1400, "height": 420})
    try:
        page.evaluate("window.scrollTo(0, 0)")
        last = page.locator('tr[data-tool="unit_convert"] button.try')
        last.scroll_into_view_if_needed(timeout=WAIT_MS)
        page.evaluate("window.scrollBy(0, 200)")  # the button near the top, the form far above
        last.click()

        first = page.locator("#try-fields [name]").first
        expect(first).to_have_attribute("name", "value")
        expect(first).to_be_focused()
        expect(first).to_be_in_viewport()
        expect(page.locator("#try-name")).to_be_in_viewport()
        expect(page.locator("#try-panel")).to_have_class(re.compile(r"\bflash\b"))
    finally:
        page.set_viewport_size({"width": 1400, "height": 1000})


def test_the_latency_line_breaks_where_no_call_was_made(page: Any) -> None:
    busy = [{"calls": 2, "errors": 1, "p50_ms": 4.0}, {"calls": 1, "errors": 0, "p50_ms": 6.0}]
    idle = [{"calls": 0, "errors": 0, "p50_ms": None}] * 3
    series = busy + idle + busy + idle[:1] + busy[:1]

    drawn = page.evaluate(
        """series => {
            const svg = chart({ bucket_seconds: 5, series });
            return {
                lines: [...svg.querySelectorAll("polyline.latency")].map(
                    (l) => l.getAttribute("points").split(" ").length),
                dots: svg.querySelectorAll("circle.latency-dot").length,
                failed: svg.querySelectorAll("rect.errors").length,
            };
        }""",
        series,
    )

    assert drawn == {"lines": [2, 2], "dots": 1, "failed": 3}


def test_a_restart_stays_counted_after_it_leaves_the_restart_window(page: Any) -> None:
    row = page.locator('tr[data-plugin="plughost.example-notifier"]')
    expect(row.locator(".state")).to_have_text("loaded", timeout=WAIT_MS)
    old_pid = int(row.locator(".pid").inner_text())

    os.kill(old_pid, signal.SIGKILL)

    restarts = row.locator(".restarts")
    expect(restarts).to_have_text("1", timeout=WAIT_MS)
    expect(row.locator(".pid")).not_to_have_text(str(old_pid), timeout=WAIT_MS)
    # Past the window (RESTART_WINDOW s) the restart is no longer recent, and still counted.
    expect(restarts).to_have_attribute("data-recent", "0", timeout=WAIT_MS)
    expect(restarts).to_have_text("1")
    expect(row.locator(".recent")).to_have_count(0)
    expect(page.locator('[data-tile="restarts"] .value')).to_have_text(re.compile(r"^\d+$"))


def _digits() -> re.Pattern[str]:
    return re.compile(r"^\d+$")
