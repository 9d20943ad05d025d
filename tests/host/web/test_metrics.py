"""ConsoleMetrics: counters fed by events, gauges read from the host at scrape time."""

from __future__ import annotations

import sys
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from plughost.events import EventKind, LifecycleEvent
from plughost.host import PluginHost
from plughost.mcp.config import MCPServerConfig
from plughost.mcp.provider import MCPToolProvider
from plughost.web.labels import MAX_VALUES
from plughost.web.metrics import ConsoleMetrics

DEMO_SERVER = Path(__file__).resolve().parents[2] / "mcp_servers" / "demo_server.py"

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _scrape(metrics: ConsoleMetrics) -> Samples:
    found: Samples = {}
    for family in text_string_to_metric_families(metrics.render().decode()):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_restarts_crashes_and_reloads_are_counted_from_events() -> None:
    metrics = ConsoleMetrics(PluginHost([]))
    for kind in (EventKind.RUNNER_CRASHED, EventKind.RUNNER_RESTARTED, EventKind.RUNNER_CRASHED):
        metrics.observe_event(LifecycleEvent(kind, "", plugin_id="p", runner_id="runner-p"))
    metrics.observe_event(LifecycleEvent(EventKind.RELOAD_SUCCEEDED, "", plugin_id="p"))
    metrics.observe_event(LifecycleEvent(EventKind.RELOAD_FAILED, "", plugin_id="p"))
    metrics.observe_event(LifecycleEvent(EventKind.RELOAD_FAILED, "", plugin_id="p"))

    found = _scrape(metrics)

    assert found[("plughost_runner_crashes_total", (("plugin", "p"),))] == 2
    assert found[("plughost_runner_restarts_total", (("plugin", "p"),))] == 1
    assert found[("plughost_reloads_total", (("outcome", "succeeded"), ("plugin", "p")))] == 1
    assert found[("plughost_reloads_total", (("outcome", "failed"), ("plugin", "p")))] == 2


async def test_upstream_mcp_servers_show_as_up_or_down_with_their_failures() -> None:
    host = PluginHost([])
    servers = {
        "files": MCPServerConfig(command="/nonexistent/mcp-server-files", retry_delay=30),
        "demo": MCPServerConfig(command=sys.executable, args=[str(DEMO_SERVER), "stdio"]),
    }
    host.tools.register_provider(MCPToolProvider(servers))
    metrics = ConsoleMetrics(host)
    before = _scrape(metrics)

    await host.tools.list_tools()  # the first listing connects, and fails
    after = _scrape(metrics)
    await host.tools.close()

    up = ("plughost_mcp_server_up", (("server", "files"),))
    failures = ("plughost_mcp_server_failures", (("server", "files"),))
    assert before[up] == 0
    assert before[failures] == 0
    assert after[up] == 0
    assert after[failures] == 1
    assert before[("plughost_mcp_server_up", (("server", "demo"),))] == 0
    assert after[("plughost_mcp_server_up", (("server", "demo"),))] == 1


def test_runner_and_plugin_labels_keep_their_first_values_then_count_the_rest_as_other() -> None:
    metrics = ConsoleMetrics(PluginHost([]))
    for n in range(MAX_VALUES + 500):  # a remote runner picks its own id, each time anew
        crashed = LifecycleEvent(EventKind.RUNNER_CRASHED, "", runner_id=f"r{n}", plugin_id=f"p{n}")
        metrics.observe_event(crashed)
        metrics.observe_event(LifecycleEvent(EventKind.RELOAD_FAILED, "", plugin_id=f"p{n}"))

    found = _scrape(metrics)

    crashes = {
        labels: v
        for (name, labels), v in found.items()
        if name.startswith("plughost_runner_crashes_total")
    }
    reloads = {labels: v for (name, labels), v in found.items() if name == "plughost_reloads_total"}
    assert len(crashes) == len(reloads) == MAX_VALUES + 1
    assert crashes[(("plugin", "p0"),)] == 1
    assert crashes[(("plugin", "other"),)] == 500
    assert reloads[(("outcome", "failed"), ("plugin", "other"))] == 500


def test_a_plugins_crashes_are_one_series_across_the_runners_its_reloads_start() -> None:
    metrics = ConsoleMetrics(PluginHost([]))
    for runner in ("runner-p", "runner-p-2", "runner-p-3"):  # a reload starts a new runner
        metrics.observe_event(
            LifecycleEvent(EventKind.RUNNER_CRASHED, "", plugin_id="p", runner_id=runner)
        )
    shared = {"plugins": ["a", "b"]}  # a runner serving two plugins
    metrics.observe_event(
        LifecycleEvent(EventKind.RUNNER_CRASHED, "", runner_id="runner-all", details=shared)
    )

    found = _scrape(metrics)

    crashes = {k: v for k, v in found.items() if k[0] == "plughost_runner_crashes_total"}
    assert crashes == {
        ("plughost_runner_crashes_total", (("plugin", "p"),)): 3,
        ("plughost_runner_crashes_total", (("plugin", "a"),)): 1,
        ("plughost_runner_crashes_total", (("plugin", "b"),)): 1,
    }
