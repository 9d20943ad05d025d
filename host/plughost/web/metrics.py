"""``GET /metrics``: the host's figures in the Prometheus text format.

Counters and histograms are fed as things happen (each registry call through a
call observer, each restart and reload through the event bus); gauges are read
from the host when Prometheus scrapes (runner memory and state, plugin states,
MCP upstream connections). Each console has its own
:class:`prometheus_client.CollectorRegistry`, so two hosts in one process never
mix their figures.

==========================================  =======================================
metric                                      labels
==========================================  =======================================
plughost_tool_calls_total                   tool, source (plugin id or provider)
plughost_tool_errors_total                  tool, code (the result's error_code, if known)
plughost_tool_call_seconds (histogram)      tool
plughost_runner_restarts_total              plugin (each plugin the runner served)
plughost_runner_crashes_total               plugin (each plugin the runner served)
plughost_reloads_total                      plugin, outcome (succeeded, failed...)
plughost_runner_memory_bytes                runner (resident, with its children)
plughost_runner_up                          runner (1 while ready)
plughost_plugins                            state (loaded, failed, starting...)
plughost_mcp_server_up                      server (1 while connected)
plughost_mcp_server_failures                server (connect failures in a row)
plughost_network_denied                     kind (plugin, mcp), name: refused connections
plughost_sandbox_protections                kind (plugin, mcp), name: protections in force
==========================================  =======================================

Label values that others choose (error codes, called names, remote runner ids)
come from bounded sets (:mod:`plughost.web.labels`), so no plugin or client can
make the series grow without end.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from plughost.events import EventKind, LifecycleEvent
from plughost.host import PluginHost
from plughost.runners.supervisor import RunnerState
from plughost.status import PluginStatus
from plughost.web.labels import NO_SUCH_TOOL, LabelValues, error_code
from plughost.web.snapshot import mcp_servers, runner_process
from plughost_sdk.models import ToolExecutionResult, ToolSpec

__all__ = ["ConsoleMetrics", "call_source"]

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_RELOAD_OUTCOMES = {
    EventKind.RELOAD_SUCCEEDED: "succeeded",
    EventKind.RELOAD_FAILED: "failed",
    EventKind.RELOAD_ROLLED_BACK: "rolled_back",
}


def call_source(spec: ToolSpec | None) -> str:
    """Whom a call is counted against: its plugin, else its provider."""
    if spec is None:
        return "(no such tool)"
    plugin_id = spec.metadata.get("plugin_id")
    return plugin_id if isinstance(plugin_id, str) else spec.provider_name or "(unknown)"


class ConsoleMetrics:
    """The console's Prometheus registry and the observers that feed it."""

    def __init__(self, host: PluginHost) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self._calls = Counter(
            "plughost_tool_calls",
            "Tool calls through the registry, by tool and source",
            ["tool", "source"],
            registry=self.registry,
        )
        self._errors = Counter(
            "plughost_tool_errors",
            "Failed tool calls, by tool and error code",
            ["tool", "code"],
            registry=self.registry,
        )
        self._latency = Histogram(
            "plughost_tool_call_seconds",
            "Tool call duration through the registry, argument checks included",
            ["tool"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        # By plugin, not by runner: a reload starts a runner of a new id, and a
        # plugin's crashes before and after it are one series.
        self._restarts = Counter(
            "plughost_runner_restarts",
            "Runner restarts after a crash, by each plugin the runner served",
            ["plugin"],
            registry=self.registry,
        )
        self._crashes = Counter(
            "plughost_runner_crashes",
            "Runner crashes, by each plugin the runner served",
            ["plugin"],
            registry=self.registry,
        )
        self._reloads = Counter(
            "plughost_reloads",
            "Plugin reloads by outcome",
            ["plugin", "outcome"],
            registry=self.registry,
        )
        self.registry.register(_HostCollector(host))
        self._tool = LabelValues()
        self._source = LabelValues()
        self._plugin = LabelValues()

    def observe_call(
        self, spec: ToolSpec | None, result: ToolExecutionResult, seconds: float
    ) -> None:
        """A registry call observer: count the call, its error code and its duration."""
        tool = self._tool(spec.name) if spec is not None else NO_SUCH_TOOL
        self._calls.labels(tool, self._source(call_source(spec))).inc()
        self._latency.labels(tool).observe(seconds)
        if not result.success:
            self._errors.labels(tool, error_code(result.error_code)).inc()

    def observe_event(self, event: LifecycleEvent) -> None:
        """An event bus callback: count restarts, crashes and reloads."""
        if event.kind is EventKind.RUNNER_RESTARTED:
            for plugin in self._served(event):
                self._restarts.labels(plugin).inc()
        elif event.kind is EventKind.RUNNER_CRASHED:
            for plugin in self._served(event):
                self._crashes.labels(plugin).inc()
        elif event.kind in _RELOAD_OUTCOMES:
            plugin = self._plugin(event.plugin_id or "")
            self._reloads.labels(plugin, _RELOAD_OUTCOMES[event.kind]).inc()

    def _served(self, event: LifecycleEvent) -> list[str]:
        """The plugins a runner event concerns, as bounded label values."""
        plugins = event.details.get("plugins")
        if not isinstance(plugins, list) or not plugins:
            plugins = [event.plugin_id or "(unknown)"]
        return [self._plugin(str(plugin)) for plugin in plugins]

    def render(self) -> bytes:
        """Every metric in the Prometheus text format."""
        return generate_latest(self.registry)


class _HostCollector(Collector):
    """Gauges read from the host at scrape time."""

    def __init__(self, host: PluginHost) -> None:
        self._host = host

    def describe(self) -> list[Metric]:
        # Nothing to check against other collectors, and describing must not scrape.
        return []

    def collect(self) -> Iterator[Metric]:
        yield from self._runners()
        states = GaugeMetricFamily("plughost_plugins", "Plugins by state", labels=["state"])
        counts: dict[str, int] = {}
        rows = self._host.status()
        for row in rows:
            counts[row.state] = counts.get(row.state, 0) + 1
        for state, count in sorted(counts.items()):
            states.add_metric([state], count)
        yield states
        yield from self._mcp()
        yield from self._sandbox(rows)

    def _sandbox(self, rows: list[PluginStatus]) -> Iterator[Metric]:
        labels = ["kind", "name"]
        denied = GaugeMetricFamily(
            "plughost_network_denied",
            "Connections the sandbox refused (no network grant covered them)",
            labels=labels,
        )
        protections = GaugeMetricFamily(
            "plughost_sandbox_protections",
            "Protections the process runs under (0: none)",
            labels=labels,
        )
        for row in rows:
            denied.add_metric(["plugin", row.plugin_id], row.denied)
            protections.add_metric(["plugin", row.plugin_id], len(row.sandbox))
        for server in mcp_servers(self._host):
            if server["transport"] == "stdio":
                denied.add_metric(["mcp", server["name"]], server["denied"])
                protections.add_metric(["mcp", server["name"]], len(server["sandbox"]))
        yield denied
        yield protections

    def _runners(self) -> Iterator[Metric]:
        memory = GaugeMetricFamily(
            "plughost_runner_memory_bytes",
            "Resident memory of a runner process and its children",
            labels=["runner"],
        )
        up = GaugeMetricFamily("plughost_runner_up", "1 while a runner is ready", labels=["runner"])
        for runner in self._host.runners():
            up.add_metric([runner.runner_id], 1 if runner.state is RunnerState.READY else 0)
            info = runner_process(runner.pid) if runner.state is RunnerState.READY else None
            if info is not None:
                memory.add_metric([runner.runner_id], info.rss)
        yield memory
        yield up

    def _mcp(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "plughost_mcp_server_up",
            "1 while an upstream MCP server is connected",
            labels=["server"],
        )
        failures = GaugeMetricFamily(
            "plughost_mcp_server_failures",
            "Connect failures in a row of an upstream MCP server",
            labels=["server"],
        )
        for row in mcp_servers(self._host):
            up.add_metric([row["name"]], 1 if row["state"] == "connected" else 0)
            failures.add_metric([row["name"]], row["failures"])
        yield up
        yield failures
