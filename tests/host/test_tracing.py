"""OpenTelemetry spans: a traced call is a tool_call span with a runner_call child; else nothing."""

from __future__ import annotations

import subprocess
import sys

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from plughost.tracing import start_span, tracing
from tests.conftest import TEST_PLUGINS, HostFactory


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> InMemorySpanExporter:
    """An SDK as a traced program would set up, without touching the process-wide provider."""
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)  # what set_tracer_provider sets
    monkeypatch.setattr(trace, "get_tracer", lambda name, *_, **__: provider.get_tracer(name))
    return spans


async def test_a_plugin_call_is_a_tool_call_span_around_a_runner_call_span(
    make_host: HostFactory, exporter: InMemorySpanExporter
) -> None:
    async with make_host([TEST_PLUGINS / "echo"]) as host:
        with trace.get_tracer("bot").start_as_current_span("turn"):
            await host.invoke("echo", {"text": "hi"})
        pid = host.runner_for("tests.echo").pid  # type: ignore[union-attr]

    spans = {span.name: span for span in exporter.get_finished_spans()}
    call, runner, turn = spans["plughost.tool_call"], spans["plughost.runner_call"], spans["turn"]
    assert call.parent is not None
    assert call.parent.span_id == turn.context.span_id
    assert runner.parent is not None
    assert runner.parent.span_id == call.context.span_id
    assert call.attributes["plughost.tool"] == "echo"
    assert call.attributes["plughost.plugin_id"] == "tests.echo"
    assert runner.attributes["plughost.runner_pid"] == pid
    assert call.status.is_ok


async def test_a_failed_call_marks_its_span_with_the_error_code(
    make_host: HostFactory, exporter: InMemorySpanExporter
) -> None:
    async with make_host([TEST_PLUGINS / "echo"]) as host:
        await host.invoke("fail", {"message": "no"})

    (call,) = [s for s in exporter.get_finished_spans() if s.name == "plughost.tool_call"]
    assert call.attributes["plughost.error_code"] == "tool_error"
    assert call.status.status_code is trace.StatusCode.ERROR


def test_without_an_sdk_no_span_is_made() -> None:
    assert not tracing()
    with start_span("plughost.tool_call", {}) as span:
        assert span is None


def test_without_a_provider_the_api_is_not_asked_on_every_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The API's get_tracer_provider() reads the environment while nothing is installed;
    # plughost reads the API's global instead (the MCP SDK imports the API).
    def asked() -> None:
        raise AssertionError("get_tracer_provider() was called")

    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    monkeypatch.setattr(trace, "get_tracer_provider", asked)

    with start_span("plughost.tool_call", {}) as span:
        assert span is None


def test_an_installed_provider_is_found_without_asking_the_api(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    monkeypatch.setattr(trace, "get_tracer", lambda name, *_, **__: provider.get_tracer(name))

    assert tracing()
    with start_span("plughost.tool_call", {"plughost.tool": "echo"}) as span:
        assert span is not None

    assert [s.name for s in spans.get_finished_spans()] == ["plughost.tool_call"]


def test_the_registry_does_not_import_opentelemetry_on_its_own() -> None:
    code = (
        "import sys, plughost.tools.registry, plughost.plugins.provider;"
        "sys.exit('opentelemetry' in sys.modules)"
    )

    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
