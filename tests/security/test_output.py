"""A runner's output costs the host a bounded amount, whatever the plugin writes (real runners)."""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path

import pytest

from tests.conftest import TEST_PLUGINS, HostFactory

HOSTILE = TEST_PLUGINS / "hostile_output"
RUNNER_LOG = "plughost.runner.runner-tests-hostile_output"
RATE = 200  # runner.output_lines_per_second, the default


async def test_a_plugin_flooding_fd_1_gets_a_bounded_share_of_the_hosts_log(
    make_host: HostFactory, caplog: pytest.LogCaptureFixture
) -> None:
    async with make_host([HOSTILE]) as host:
        started = time.monotonic()
        flooded = await host.invoke("flood", {"seconds": 1.0})
        elapsed = time.monotonic() - started
        echo_lines = [
            r for r in caplog.records if r.name == RUNNER_LOG and r.getMessage().startswith("flood")
        ]
        drops = [r for r in caplog.records if "lines of output dropped" in r.getMessage()]

    assert flooded.success, flooded.error_message
    assert flooded.structured_content["written"] > len(echo_lines)
    assert len(echo_lines) <= RATE * 10 + RATE * (elapsed + 1)
    assert drops and drops[0].levelno == logging.WARNING


async def test_log_records_naming_plugins_the_runner_does_not_serve_create_no_loggers(
    make_host: HostFactory, caplog: pytest.LogCaptureFixture
) -> None:
    async with make_host([HOSTILE]) as host:
        sent = await host.invoke("loggers", {"count": 1000})
        # The forged records name plugins "ghost-0" .. "ghost-999" (not "plughost-...").
        forged = re.compile(r"(^|\.)ghost-\d+$")
        created = [n for n in logging.Logger.manager.loggerDict if forged.search(n)]
        forwarded = [r for r in caplog.records if r.name == RUNNER_LOG and r.getMessage() == "hi"]

    assert sent.content == "sent"
    assert created == []
    assert len(forwarded) == 1000  # kept, under the runner's own name


def _peak_rss_since_reset() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/self/status")


def _reset_peak_rss() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError as exc:
        pytest.skip(f"cannot reset the peak RSS here ({exc}): the measurement needs it")


async def test_a_frame_that_decodes_to_millions_of_objects_is_refused_cheaply(
    make_host: HostFactory,
) -> None:
    # Encoding the frame holds the runner's GIL for a while: not what is tested here.
    async with make_host([HOSTILE], heartbeat_interval=0.2, heartbeat_misses=10) as host:
        runner = host.runner_for("tests.hostile_output")
        assert runner is not None and runner._channel is not None
        before = runner._channel.rejected_frames
        _reset_peak_rss()
        baseline = _peak_rss_since_reset()
        sent = await host.invoke("bomb", {"count": 3_000_000})
        grown = _peak_rss_since_reset() - baseline
        rejected = runner._channel.rejected_frames - before
        still = await host.invoke("loggers", {"count": 1})

    assert sent.content == "sent"
    assert rejected == 1
    assert grown < 64 * 2**20, f"decoding cost the host {grown / 2**20:.0f} MiB"
    assert still.content == "sent"
