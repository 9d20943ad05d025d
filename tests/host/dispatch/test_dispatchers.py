"""The dispatchers' rules over an in-memory owner: order, copies, deadlines, refusals.

Real runners (tests/integration/test_dispatch.py) show the same rules end to end;
these pin the edges that need exact control of each handler's reply.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from plughost.dispatch.hook_catalog import (
    MAIBOT_HOOK_SPECS,
    PLANNER_HOOK_SPECS,
    closest_maibot_hook,
)
from plughost.dispatch.hooks import HookSpec
from plughost.dispatch.service import ComponentDispatcher
from plughost.plugins.component_info import PluginComponent
from plughost.plugins.components import ComponentRegistry
from plughost.settings import HostSettings
from plughost_sdk.models import ToolExecutionResult

Reply = Callable[[str, dict[str, Any]], Any]


class FakeOwner:
    """Answers component calls from a function of (name, args); records the calls."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.calls: list[tuple[str, dict[str, Any], float]] = []

    async def invoke(self, plugin_id: str, tool: str, arguments: Any, timeout: float) -> Any:
        return ToolExecutionResult(tool_name=tool)

    async def invoke_component(
        self, plugin_id: str, kind: str, name: str, args: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        self.calls.append((name, args, timeout))
        answer = self.reply(name, args)
        if asyncio.iscoroutine(answer):
            answer = await answer
        return dict(answer)


def hook(plugin: str, name: str, **metadata: Any) -> PluginComponent:
    return PluginComponent(plugin, name, "HOOK_HANDLER", {"hook": "h", **metadata})


def event(plugin: str, name: str, **metadata: Any) -> PluginComponent:
    meta = {"event_type": "on_message", "intercept_message": True, **metadata}
    return PluginComponent(plugin, name, "EVENT_HANDLER", meta)


@pytest.fixture
async def setup() -> AsyncIterator[Callable[..., ComponentDispatcher]]:
    made: list[ComponentDispatcher] = []

    def build(
        owners: dict[str, tuple[FakeOwner, list[PluginComponent]]], timeout: float = 5.0
    ) -> ComponentDispatcher:
        registry = ComponentRegistry()
        for plugin_id, (owner, components) in owners.items():
            registry.replace_plugin(plugin_id, [], owner, components)
        settings = HostSettings(call_timeout=timeout)
        dispatcher = ComponentDispatcher(registry, lambda: settings, lambda _: {})
        made.append(dispatcher)
        return dispatcher

    yield build
    for dispatcher in made:
        await dispatcher.aclose()


def trail(name: str, args: dict[str, Any]) -> dict[str, Any]:
    kwargs = {k: v for k, v in args.items() if k != "hook_name"}
    return {"success": True, "modified_kwargs": {**kwargs, "trail": [*args["trail"], name]}}


async def test_equal_slots_are_ordered_by_plugin_id_then_name(setup: Any) -> None:
    b = FakeOwner(trail)
    a = FakeOwner(trail)
    dispatcher = setup(
        {
            "p.b": (b, [hook("p.b", "x", order="normal"), hook("p.b", "a", order="normal")]),
            "p.a": (a, [hook("p.a", "z", order="normal"), hook("p.a", "y", order="late")]),
        }
    )

    outcome = await dispatcher.run_hook("h", trail=[])

    assert outcome.kwargs["trail"] == ["z", "a", "x", "y"]


async def test_observers_do_not_run_when_the_chain_is_aborted(setup: Any) -> None:
    owner = FakeOwner(lambda name, args: {"success": True, "action": "abort"})
    dispatcher = setup(
        {"p.a": (owner, [hook("p.a", "stop"), hook("p.a", "watch", mode="observe")])}
    )

    outcome = await dispatcher.run_hook("h", trail=[])
    await dispatcher.drain(5.0)

    assert outcome.aborted
    assert outcome.observers == 0
    assert [name for name, _, _ in owner.calls] == ["stop"]


async def test_a_spec_that_forbids_rewriting_keeps_the_payload(setup: Any) -> None:
    owner = FakeOwner(trail)
    dispatcher = setup({"p.a": (owner, [hook("p.a", "one")])})
    dispatcher.register_hook_spec(HookSpec("h", allow_kwargs_mutation=False))

    outcome = await dispatcher.run_hook("h", trail=[])

    assert outcome.kwargs == {"trail": []}
    assert "does not allow changing its arguments" in outcome.errors[0]


async def test_an_abort_policy_under_a_spec_that_forbids_abort_acts_as_skip(setup: Any) -> None:
    def reply(name: str, args: dict[str, Any]) -> dict[str, Any]:
        if name == "bad":
            return {"success": False, "error": "boom", "error_code": "handler_failed"}
        return trail(name, args)

    owner = FakeOwner(reply)
    dispatcher = setup(
        {
            "p.a": (
                owner,
                [hook("p.a", "bad", error_policy="abort"), hook("p.a", "ok", order="late")],
            )
        }
    )
    dispatcher.register_hook_spec(HookSpec("h", allow_abort=False))

    outcome = await dispatcher.run_hook("h", trail=[])

    assert not outcome.aborted
    assert outcome.kwargs["trail"] == ["ok"]


async def test_each_handler_gets_its_own_limit_cut_to_what_the_chain_has_left(
    setup: Any,
) -> None:
    async def slow(name: str, args: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0.3)
        return trail(name, args)

    owner = FakeOwner(slow)
    dispatcher = setup(
        {"p.a": (owner, [hook("p.a", "own", timeout_ms=250, order="early"), hook("p.a", "rest")])}
    )
    dispatcher.register_hook_spec(HookSpec("h", default_timeout_ms=100_000))

    # A deadline long beside the first handler's 0.3 s, so a loaded machine cannot
    # spend all of it before the second handler runs.
    await dispatcher.run_hook("h", timeout=5.0, trail=[])

    (_, _, own), (_, _, rest) = owner.calls
    assert own == pytest.approx(0.25)
    assert 1.0 < rest <= 4.7  # the 100 s default, cut to what is left of 5 s after 0.3 s


async def test_handlers_after_the_deadline_fail_with_timeout_without_being_called(
    setup: Any,
) -> None:
    async def slow(name: str, args: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0.25)  # the fake does not enforce limits: it overstays them
        return {"success": True, "continue_processing": True}

    owner = FakeOwner(slow)
    dispatcher = setup(
        {"p.a": (owner, [event("p.a", "first", weight=2), event("p.a", "second", weight=1)])}
    )

    outcome = await dispatcher.emit_event("on_message", {"t": 1}, timeout=0.2)

    assert [name for name, _, _ in owner.calls] == ["first"]
    assert [r.error_code for r in outcome.results] == [None, "timeout"]
    assert outcome.continue_processing


async def test_a_handler_that_stops_the_event_has_its_own_edit_dropped(setup: Any) -> None:
    def reply(name: str, args: dict[str, Any]) -> dict[str, Any]:
        edited = {**args["message"], "by": name}
        return {
            "success": True,
            "continue_processing": name != "stopper",
            "modified_message": edited,
        }

    owner = FakeOwner(reply)
    handlers = [event("p.a", "editor", weight=2), event("p.a", "stopper", weight=1)]
    dispatcher = setup({"p.a": (owner, handlers)})

    outcome = await dispatcher.emit_event("on_message", {"text": "hi"})

    assert outcome.stopped_by == "p.a.stopper"
    assert outcome.message == {"text": "hi", "by": "editor"}


async def test_background_handlers_each_get_a_deep_copy_of_the_final_message(
    setup: Any,
) -> None:
    def reply(name: str, args: dict[str, Any]) -> dict[str, Any]:
        args["message"]["nested"]["seen_by"].append(name)  # mutate the copy it got
        return {"success": True}

    owner = FakeOwner(reply)
    listeners = [event("p.a", n, intercept_message=False) for n in ("one", "two")]
    dispatcher = setup({"p.a": (owner, listeners)})
    message = {"nested": {"seen_by": []}}

    outcome = await dispatcher.emit_event("on_message", message)
    assert await dispatcher.drain(5.0)

    assert outcome.background == 2
    assert message == {"nested": {"seen_by": []}}
    assert sorted(args["message"]["nested"]["seen_by"][0] for _, args, _ in owner.calls) == [
        "one",
        "two",
    ]


async def test_a_plugin_that_is_gone_is_a_failed_handler_not_an_error(setup: Any) -> None:
    owner = FakeOwner(trail)
    dispatcher = setup({"p.a": (owner, [hook("p.a", "one")])})
    dispatcher.hooks._registry._owners.clear()  # the runner was dropped mid-dispatch

    outcome = await dispatcher.run_hook("h", trail=[])

    assert "plugin p.a is not loaded" in outcome.errors[0]


def test_the_planner_hook_specs_rewrite_but_never_abort() -> None:
    names = [spec.name for spec in PLANNER_HOOK_SPECS]

    assert names == ["maisaka.planner.before_request", "maisaka.planner.after_response"]
    assert all(s.allow_kwargs_mutation and not s.allow_abort for s in PLANNER_HOOK_SPECS)
    assert all(s.default_timeout_ms == 6000 for s in PLANNER_HOOK_SPECS)


def test_the_maibot_hook_catalog_names_each_hook_once_and_spots_misspellings() -> None:
    names = [spec.name for spec in MAIBOT_HOOK_SPECS]

    assert len(names) == len(set(names)) == 22
    after_send = next(s for s in MAIBOT_HOOK_SPECS if s.name == "send_service.after_send")
    assert (after_send.allow_abort, after_send.allow_kwargs_mutation) == (False, False)
    assert closest_maibot_hook("maisaka.planer.before_request") == "maisaka.planner.before_request"
    assert closest_maibot_hook("maisaka.planner.before_request") is None
    assert closest_maibot_hook("acme.my_own_hook") is None


async def test_a_non_positive_timeout_is_a_caller_mistake(setup: Any) -> None:
    dispatcher = setup({})

    with pytest.raises(ValueError, match="positive"):
        await dispatcher.run_hook("h", timeout=0)


async def test_a_handler_that_keeps_timing_out_is_skipped_for_the_cooldown_then_retried() -> None:
    from plughost.dispatch.calls import CircuitBreaker, ComponentCaller

    now = [100.0]
    replies = iter([{"success": False, "error": "slow", "error_code": "timeout"}] * 3)
    owner = FakeOwner(lambda name, args: next(replies, {"success": True}))
    registry = ComponentRegistry()
    handler = hook("p.a", "slow")
    registry.replace_plugin("p.a", [], owner, [handler])
    caller = ComponentCaller(registry, CircuitBreaker(lambda: 3, lambda: 60.0, lambda: now[0]))

    first = [await caller.call(handler, {}, 1.0, guarded=True) for _ in range(3)]
    skipped = await caller.call(handler, {}, 1.0, guarded=True)
    unguarded = await caller.call(handler, {}, 1.0)
    now[0] += 61
    again = await caller.call(handler, {}, 1.0, guarded=True)

    assert [r["error_code"] for r in first] == ["timeout"] * 3
    assert skipped["error_code"] == "circuit_open"
    assert "after 3 timeouts or crashes in a row" in skipped["error"]
    assert unguarded["success"] is True  # commands and APIs are never skipped
    assert again["success"] is True
    assert len(owner.calls) == 5


async def test_a_raising_handler_is_not_skipped_and_a_success_resets_the_count() -> None:
    from plughost.dispatch.calls import CircuitBreaker, ComponentCaller

    answers = [
        {"success": False, "error": "t", "error_code": "timeout"},
        {"success": False, "error": "t", "error_code": "timeout"},
        {"success": True},
        {"success": False, "error": "t", "error_code": "timeout"},
        {"success": False, "error": "boom"},
        {"success": False, "error": "t", "error_code": "timeout"},
        {"success": True},
    ]
    replies = iter(answers)
    owner = FakeOwner(lambda name, args: next(replies))
    registry = ComponentRegistry()
    handler = hook("p.a", "flaky")
    registry.replace_plugin("p.a", [], owner, [handler])
    caller = ComponentCaller(registry, CircuitBreaker(lambda: 3, lambda: 60.0, lambda: 0.0))

    codes = [(await caller.call(handler, {}, 1.0, guarded=True)).get("error_code") for _ in answers]

    assert "circuit_open" not in codes
    assert len(owner.calls) == len(answers)


async def test_a_command_or_handler_switched_off_in_one_session_still_runs_in_others(
    setup: Any,
) -> None:
    owner = FakeOwner(
        lambda name, args: (
            {"success": True, "response": name, "intercept": True}
            if name == "hello"
            else {"success": True, "continue_processing": True}
        )
    )
    command = PluginComponent("p.a", "hello", "COMMAND", {"command_pattern": "^/hello"})
    listener = event("p.a", "listen")
    dispatcher = setup({"p.a": (owner, [command, listener])})
    registry = dispatcher.hooks._registry
    registry.set_component_enabled_for_session("COMMAND:p.a.hello", "s1", False)
    registry.set_component_enabled_for_session("EVENT_HANDLER:p.a.listen", "s1", False)

    off = await dispatcher.dispatch_command("/hello", stream_id="s1")
    on = await dispatcher.dispatch_command("/hello", stream_id="s2")
    by_session = await dispatcher.dispatch_command("/hello", stream_id="x", session_id="s1")
    event_off = await dispatcher.emit_event("on_message", {"session_id": "s1"})
    event_on = await dispatcher.emit_event("on_message", {"session_id": "s2"})

    assert (off.handled, on.handled, by_session.handled) == (False, True, False)
    assert [r.handler for r in event_off.results] == []
    assert [r.handler for r in event_on.results] == ["p.a.listen"]
    assert "session_id" not in owner.calls[0][1]


def command_hooks_owner(before: dict[str, Any] | None, after: dict[str, Any] | None) -> FakeOwner:
    def reply(name: str, args: dict[str, Any]) -> dict[str, Any]:
        if name == "before":
            return {"success": True, **(before or {})}
        if name == "after":
            return {"success": True, **(after or {})}
        groups = args["matched_groups"]
        return {"success": True, "response": f"ran with {groups}", "intercept": True}

    return FakeOwner(reply)


def command_components(*hooks: str) -> list[PluginComponent]:
    command = PluginComponent("p.a", "go", "COMMAND", {"command_pattern": r"^/go (?P<x>\w+)"})
    found = [command]
    for name in hooks:
        hook_name = f"chat.command.{name}_execute"
        found.append(PluginComponent("p.a", name, "HOOK_HANDLER", {"hook": hook_name}))
    return found


async def test_an_aborted_before_execute_hook_skips_the_command_and_stops_processing(
    setup: Any,
) -> None:
    owner = command_hooks_owner({"action": "abort"}, None)
    dispatcher = setup({"p.a": (owner, command_components("before"))})

    outcome = await dispatcher.dispatch_command("/go now")

    assert (outcome.handled, outcome.continue_processing) == (True, False)
    assert outcome.error_code == "aborted"
    assert "chat.command.before_execute was aborted by p.a.before" in outcome.error
    assert [name for name, _, _ in owner.calls] == ["before"]


async def test_the_command_hooks_may_change_its_groups_and_its_result(setup: Any) -> None:
    before = {"modified_kwargs": {"matched_groups": {"x": "later"}}}
    after = {"modified_kwargs": {"response": "rewritten", "continue_process": True}}
    owner = command_hooks_owner(before, after)
    dispatcher = setup({"p.a": (owner, command_components("before", "after"))})

    outcome = await dispatcher.dispatch_command("/go now")

    ran = {name: args for name, args, _ in owner.calls}
    assert ran["go"]["matched_groups"] == {"x": "later"}
    assert ran["after"]["response"] == "ran with {'x': 'later'}"
    assert ran["after"]["continue_process"] is False
    assert (outcome.response, outcome.continue_processing) == ("rewritten", True)


async def test_without_command_hook_handlers_only_the_command_runs(setup: Any) -> None:
    owner = command_hooks_owner(None, None)
    dispatcher = setup({"p.a": (owner, command_components())})

    outcome = await dispatcher.dispatch_command("/go now")

    assert outcome.response == "ran with {'x': 'now'}"
    assert [name for name, _, _ in owner.calls] == ["go"]
