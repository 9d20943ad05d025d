"""Where each runner is, on the console's page in a real Chromium: replicas and a remote runner.

One ``plughost serve --web`` with two replicas of one plugin and a port for
remote runners, one ``plughost-runner --connect`` serving another plugin, and
one page loaded once: every change on it arrived live.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TEST_PLUGINS
from tests.integration.remote_helpers import PLUGIN_ID, issue, plugin_dir, start_runner, stop
from tests.integration.test_web_console import CHROMIUM, CHROMIUM_FLAGS, WAIT_MS, Served
from tests.integration.test_web_console import sync_api as playwright_api

expect = playwright_api.expect


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("where")


@pytest.fixture(scope="module")
def port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def served(work: Path, port: int) -> Iterator[Served]:
    plugins = work / "plugins"
    shutil.copytree(TEST_PLUGINS / "echo", plugins / "echo")
    config = work / "plughost.toml"
    config.write_text(
        '[host.plugin_replicas]\n"tests.echo" = 2\n'
        f'[host.remote]\nlisten = "tcp://127.0.0.1:{port}"\nkeys_dir = "keys"\n'
        "grace = 60.0\n"  # the lost runner stays listed while the page is checked
    )
    server = Served(plugins, work, "--config", str(config))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def runner(served: Served, work: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    served.wait_started()
    credential = issue(work / "keys", "browser-box", [PLUGIN_ID], work / "box.json")
    process = start_runner(
        f"tcp://127.0.0.1:{port}", credential, plugin_dir(work / "remote-plugins"), work
    )
    yield process
    stop(process)


@pytest.fixture(scope="module")
def page(served: Served, runner: subprocess.Popen[bytes]) -> Iterator[Any]:
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(served.wait_started())
        yield page
        context.close()
        browser.close()
    assert not errors, f"the page raised: {errors}"


def test_each_replica_shows_the_local_pid_it_runs_as(page: Any) -> None:
    row = page.locator('tr[data-plugin="tests.echo"]')
    expect(row.locator(".state")).to_have_text("loaded", timeout=WAIT_MS)
    members = row.locator(".where .member.local")
    expect(members).to_have_count(2, timeout=WAIT_MS)
    texts = members.all_inner_texts()
    assert all(re.fullmatch(r"local pid \d+", t) for t in texts) and len(set(texts)) == 2
    details = page.locator('tr[data-plugin-details="tests.echo"] .pool')
    expect(details).to_contain_text("pool of 2 runners")


def test_a_remote_runner_shows_its_address_and_credential_then_its_loss(
    page: Any, runner: subprocess.Popen[bytes]
) -> None:
    row = page.locator(f'tr[data-plugin="{PLUGIN_ID}"]')
    member = row.locator(".where .member.remote")
    expect(member).to_have_text(
        re.compile(r"^127\.0\.0\.1\S* \(credential browser-box, pid \d+ there\)$"), timeout=WAIT_MS
    )
    expect(member).to_have_attribute("data-state", "ready")

    stop(runner)

    expect(member).to_have_attribute("data-state", "lost", timeout=WAIT_MS)
    expect(member).to_have_class(re.compile(r"\bunhealthy\b"))
