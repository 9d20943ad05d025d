"""Commands, events, hook chains and APIs dispatched by the host to real runners.

One host with four plugins serves the tests that only read; each test uses its
own hook name or message, so they do not depend on each other's order.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

import pytest
import pytest_asyncio

from plughost.host import PluginHost
from plughost.runners.capabilities import CapabilityCall
from plughost_sdk import EventType
from tests.conftest import TEST_PLUGINS, fast_settings

PLUGINS = [TEST_PLUGINS / name for name in ("chat", "hooks_a", "hooks_b", "api_caller")]
T = TypeVar("T")


class Recorder:
    """The embedder's test.record capability: what background handlers saw."""

    def __init__(self) -> None:
        self.seen: list[Any] = []
        self.changed = asyncio.Event()

    async def __call__(self, call: CapabilityCall) -> bool:
        self.seen.append(call.args["seen"])
        self.changed.set()
        return True

    async def next(self, timeout: float = 10.0) -> Any:
        async with asyncio.timeout(timeout):
            while not self.seen:
                self.changed.clear()
                await self.changed.wait()
        return self.seen.pop(0)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[PluginHost]:
    settings = fast_settings(tmp_path_factory.mktemp("dispatch"))
    host = PluginHost(PLUGINS, settings=settings)
    try:
        await host.start()
        assert not host.problems, host.problems
        yield host
    finally:
        await host.aclose()


reads_shared = pytest.mark.asyncio(loop_scope="module")


def _message(text: str) -> dict[str, Any]:
    return {"processed_plain_text": text, "session_id": "s1", "trail": []}


# --- commands --------------------------------------------------------------------


@reads_shared
async def test_a_matching_command_handles_the_message_and_stops_processing(
    shared: PluginHost,
) -> None:
    outcome = await shared.dispatch_command("/weather Paris", stream_id="s1")

    assert outcome.handled
    assert outcome.command == "tests.chat.weather"
    assert outcome.success
    assert outcome.response == "sunny in Paris"
    assert outcome.matched_groups == {"city": "Paris"}
    assert outcome.continue_processing is False


@reads_shared
async def test_an_alias_prefix_triggers_a_command_that_lets_processing_continue(
    shared: PluginHost,
) -> None:
    outcome = await shared.dispatch_command("/echo hello there", stream_id="s9")

    assert outcome.command == "tests.chat.echo"
    assert outcome.response == "s9: hello there"
    assert outcome.continue_processing is True


@reads_shared
async def test_text_that_matches_no_command_is_not_handled(shared: PluginHost) -> None:
    outcome = await shared.dispatch_command("what is the weather in Paris?")

    assert outcome.handled is False
    assert outcome.command is None
    assert outcome.continue_processing is True


@reads_shared
async def test_a_raising_command_is_handled_as_failed_and_stops_processing(
    shared: PluginHost,
) -> None:
    outcome = await shared.dispatch_command("/boom")

    assert outcome.handled
    assert outcome.success is False
    assert outcome.error_code == "handler_failed"
    assert "the command broke" in outcome.error
    assert outcome.response == outcome.error
    assert outcome.continue_processing is False


async def _timed(work: Awaitable[T]) -> tuple[T, float]:
    """What ``work`` returns, and how many seconds it took."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    done = await work
    return done, loop.time() - started


@reads_shared
async def test_a_command_past_its_timeout_fails_with_timeout_in_time(shared: PluginHost) -> None:
    _, quick = await _timed(shared.dispatch_command("/weather Paris"))
    outcome, elapsed = await _timed(shared.dispatch_command("/slow"))  # timeout_ms=300

    assert outcome.error_code == "timeout"
    assert "did not finish within 0.3 s" in outcome.error
    # Given up at its timeout, not when its 30 s sleep ends.
    assert elapsed < 3 * 0.3 + quick, f"{elapsed:.2f} s, a quick command {quick:.3f} s"


# --- events ----------------------------------------------------------------------


@reads_shared
async def test_intercepting_handlers_run_by_weight_and_each_sees_the_last_change(
    shared: PluginHost,
) -> None:
    outcome = await shared.emit_event(EventType.ON_MESSAGE_PRE_PROCESS, _message("hi"))

    assert outcome.continue_processing
    assert [r.handler for r in outcome.results] == ["tests.chat.tagger", "tests.chat.spam_filter"]
    assert outcome.message is not None
    assert outcome.message["processed_plain_text"] == "hi [tagged]"
    assert outcome.message["trail"] == ["tagger", "spam_filter"]


@reads_shared
async def test_an_intercepting_handler_stops_the_message_and_no_later_handler_runs(
    shared: PluginHost,
) -> None:
    outcome = await shared.emit_event("on_message_pre_process", _message("buy spam now"))

    assert outcome.continue_processing is False
    assert outcome.stopped_by == "tests.chat.spam_filter"
    assert outcome.message is not None
    assert outcome.message["trail"] == ["tagger"]
    assert outcome.background == 0


@reads_shared
async def test_background_handlers_get_the_message_and_their_failures_are_only_logged(
    shared: PluginHost, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = Recorder()
    shared.register_capability("test.record", recorder)
    with caplog.at_level(logging.WARNING, logger="plughost.dispatch.calls"):
        outcome = await shared.emit_event(EventType.ON_MESSAGE, _message("hello bot"))
        seen = await recorder.next()
        assert await shared.drain_background(10.0)

    assert outcome.continue_processing
    assert outcome.background == 2
    assert outcome.errors == []
    assert seen == "hello bot"
    assert "background event handler tests.chat.broken_listener failed" in caplog.text
    assert "the listener broke" in caplog.text


@reads_shared
async def test_an_event_without_handlers_passes_the_message_through(shared: PluginHost) -> None:
    outcome = await shared.emit_event(EventType.AFTER_SEND, _message("sent"))

    assert outcome.continue_processing
    assert outcome.results == []
    assert outcome.message == _message("sent")


# --- hooks -----------------------------------------------------------------------


@reads_shared
async def test_the_planner_hook_rewrites_the_request_payload(shared: PluginHost) -> None:
    outcome = await shared.run_hook(
        "maisaka.planner.before_request", items=["user: hi"], tool_definitions=[], session_id="s1"
    )

    assert outcome.kwargs == {
        "items": ["user: hi", "reminder: be brief"],
        "tool_definitions": [],
        "session_id": "s1",
    }
    assert not outcome.aborted


@reads_shared
async def test_blocking_handlers_run_by_slot_then_plugin_and_observers_get_a_copy(
    shared: PluginHost,
) -> None:
    recorder = Recorder()
    shared.register_capability("test.record", recorder)
    outcome = await shared.run_hook("test.order", trail=[])
    observed = await recorder.next()

    assert outcome.kwargs["trail"] == ["a_early", "b_early", "b_normal", "a_late"]
    assert outcome.ran == [
        "tests.hooks_a.a_early",
        "tests.hooks_b.b_early",
        "tests.hooks_b.b_normal",
        "tests.hooks_a.a_late",
    ]
    assert outcome.observers == 1
    assert observed == ["a_early", "b_early", "b_normal", "a_late", "observer was here"]
    assert "observer was here" not in outcome.kwargs["trail"]


@reads_shared
async def test_a_handler_returning_abort_stops_the_chain(shared: PluginHost) -> None:
    outcome = await shared.run_hook("test.abort_action", trail=[])

    assert outcome.aborted
    assert outcome.stopped_by == "tests.hooks_a.stop_here"
    assert outcome.custom_results == ["stopped on purpose"]
    assert outcome.kwargs["trail"] == []


@reads_shared
async def test_error_policy_abort_stops_the_chain_at_the_failing_handler(
    shared: PluginHost,
) -> None:
    outcome = await shared.run_hook("test.abort_policy", trail=[])

    assert outcome.aborted
    assert outcome.stopped_by == "tests.hooks_a.fails_abort"
    assert outcome.kwargs["trail"] == []
    assert len(outcome.errors) == 1
    assert "tests.hooks_a.fails_abort (abort)" in outcome.errors[0]
    assert "abort-policy handler failed" in outcome.errors[0]


@reads_shared
async def test_error_policy_skip_goes_on_with_the_payload_unchanged_and_warns(
    shared: PluginHost, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="plughost.dispatch.hooks"):
        outcome = await shared.run_hook("test.skip_policy", trail=["start"])

    assert not outcome.aborted
    assert outcome.kwargs["trail"] == ["start", "b"]
    assert "tests.hooks_a.fails_skip (skip)" in outcome.errors[0]
    (record,) = [r for r in caplog.records if "skip_policy" in r.getMessage()]
    assert record.levelno == logging.WARNING


@reads_shared
async def test_error_policy_log_goes_on_and_logs_an_error(
    shared: PluginHost, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="plughost.dispatch.hooks"):
        outcome = await shared.run_hook("test.log_policy", trail=[])

    assert not outcome.aborted
    assert outcome.kwargs["trail"] == ["b"]
    (record,) = [r for r in caplog.records if "log_policy" in r.getMessage()]
    assert record.levelno == logging.ERROR
    assert "log-policy handler failed" in record.getMessage()


@reads_shared
async def test_a_handler_past_its_timeout_ms_is_skipped_and_the_chain_goes_on(
    shared: PluginHost,
) -> None:
    _, quick = await _timed(shared.run_hook("test.order", trail=[]))
    outcome, elapsed = await _timed(shared.run_hook("test.timeout", trail=[]))  # timeout_ms=200

    assert outcome.kwargs["trail"] == ["b"]
    assert "did not finish within 0.2 s" in outcome.errors[0]
    # Skipped at its timeout, not when its 30 s sleep ends.
    assert elapsed < 3 * 0.2 + quick, f"{elapsed:.2f} s, a quick chain {quick:.3f} s"


@reads_shared
async def test_a_hook_spec_that_forbids_abort_turns_an_abort_into_an_error(
    shared: PluginHost,
) -> None:
    from plughost.dispatch.hooks import HookSpec

    shared.register_hook_spec(HookSpec("test.abort_action", allow_abort=False))
    try:
        outcome = await shared.run_hook("test.abort_action", trail=[])
    finally:
        shared.register_hook_spec(HookSpec("test.abort_action"))

    assert not outcome.aborted
    assert outcome.kwargs["trail"] == ["b"]
    assert "cannot be aborted" in outcome.errors[0]


@reads_shared
async def test_a_disabled_command_or_handler_is_passed_over_until_enabled_again(
    shared: PluginHost,
) -> None:
    shared.components.set_component_enabled("COMMAND:tests.chat.weather", False)
    shared.components.set_component_enabled("EVENT_HANDLER:tests.chat.tagger", False)
    try:
        command = await shared.dispatch_command("/weather Paris")
        event = await shared.emit_event(EventType.ON_MESSAGE_PRE_PROCESS, _message("hi"))
    finally:
        shared.components.set_component_enabled("COMMAND:tests.chat.weather", True)
        shared.components.set_component_enabled("EVENT_HANDLER:tests.chat.tagger", True)
    again = await shared.dispatch_command("/weather Paris")

    assert command.handled is False
    assert [r.handler for r in event.results] == ["tests.chat.spam_filter"]
    assert again.handled


@reads_shared
async def test_a_hook_nobody_handles_returns_the_payload(shared: PluginHost) -> None:
    outcome = await shared.run_hook("nobody.listens", x=1)

    assert outcome.kwargs == {"x": 1}
    assert outcome.ran == []


# --- APIs ------------------------------------------------------------------------


@reads_shared
async def test_the_embedder_calls_an_api_by_full_or_short_name(shared: PluginHost) -> None:
    full = await shared.call_api("tests.chat.add", a=2, b=3)
    short = await shared.call_api("add", a=1, b=1)
    private = await shared.call_api("tests.chat.secret")

    assert (full.success, full.result, full.api) == (True, 5, "tests.chat.add")
    assert short.result == 2
    assert private.result == "hidden"


@reads_shared
async def test_an_unknown_api_is_a_failed_outcome_not_an_exception(shared: PluginHost) -> None:
    outcome = await shared.call_api("tests.chat.nope")

    assert not outcome.success
    assert outcome.error_code == "api_not_found"


async def _relay(host: PluginHost, api_name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await host.invoke("call_api", {"api_name": api_name, "args": args})
    assert result.success, result.error_message
    seen: dict[str, Any] = result.structured_content
    return seen


@reads_shared
async def test_a_plugin_calls_its_own_api_without_a_grant(shared: PluginHost) -> None:
    seen = await _relay(shared, "double", {"n": 21})

    assert seen["answer"] == {"success": True, "result": 42}


@reads_shared
async def test_a_plugin_calling_anothers_api_without_a_grant_is_refused_with_the_fix(
    shared: PluginHost,
) -> None:
    seen = await _relay(shared, "tests.chat.add", {"a": 1, "b": 2})

    assert seen["code"] == "capability_denied"
    assert "[host.api_grants]" in seen["reason"]
    assert '"tests.api_caller" = ["tests.chat.add"]' in seen["reason"]


@reads_shared
async def test_a_granted_public_api_answers_and_a_private_one_stays_closed(
    shared: PluginHost,
) -> None:
    shared.settings.api_grants["tests.api_caller"] = ["tests.chat.*"]
    try:
        public = await _relay(shared, "add", {"a": 1, "b": 2})
        private = await _relay(shared, "tests.chat.secret", {})
    finally:
        shared.settings.api_grants.pop("tests.api_caller")

    assert public["answer"] == {"success": True, "result": 3}
    assert private["answer"]["success"] is False
    assert "is not public" in private["answer"]["error"]
