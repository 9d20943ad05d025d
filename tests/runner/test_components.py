"""The runner's side of components: binding get_components() entries and reading return values."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from plughost_runner.plugins.components import call_component, component_handlers
from plughost_runner.plugins.invoker import Invoker
from plughost_sdk import API, Command, EventHandler, HookHandler, Plugin


class Sample(Plugin):
    @Command("hello", pattern="^/hello")
    async def hello(self, text: str) -> Any:
        return self.reply

    @Command("plain", pattern="^/plain", intercept_message_level=1)
    async def plain(self) -> Any:
        return True, "plain"

    @EventHandler("watch")
    async def watch(self, **kwargs: Any) -> Any:
        return self.reply

    @HookHandler("some.hook")
    def hook(self, **kwargs: Any) -> Any:
        return self.reply

    @API("api")
    async def api(self, x: int) -> Any:
        if x < 0:
            raise ValueError("x must not be negative")
        return x * 2

    reply: Any = None


@pytest.fixture
async def invoker() -> AsyncIterator[Invoker]:
    pool = Invoker(max_threads=2)
    yield pool
    pool.shutdown()


async def _call(invoker: Invoker, plugin: Sample, kind: str, name: str, **args: Any) -> Any:
    handler = component_handlers(plugin)[(kind, name)]
    return await call_component(invoker, "tests.sample", handler, args, 5.0)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ((False, "no", True), {"success": False, "response": "no", "intercept": True}),
        ((True, "yes", False), {"success": True, "response": "yes", "intercept": False}),
        ("just text", {"success": True, "response": "just text", "intercept": False}),
        (None, {"success": True, "response": None, "intercept": False}),
    ],
)
async def test_command_return_values_are_read_like_maibot(
    invoker: Invoker, value: Any, expected: dict[str, Any]
) -> None:
    plugin = Sample()
    plugin.reply = value

    reply = await _call(invoker, plugin, "COMMAND", "hello", text="/hello", extra="ignored")

    assert reply == {**expected, "error": ""}


async def test_a_two_tuple_takes_intercept_from_the_metadata(invoker: Invoker) -> None:
    reply = await _call(invoker, Sample(), "COMMAND", "plain")

    assert reply["intercept"] is True
    assert reply["response"] == "plain"


@pytest.mark.parametrize(
    ("value", "go_on", "modified"),
    [
        ({"blocked": True}, False, None),
        ({"continue_processing": False}, False, None),
        ({"modified_message": {"a": 1}}, True, {"a": 1}),
        (None, True, None),
    ],
)
async def test_event_handler_returns_are_read_like_maibot(
    invoker: Invoker, value: Any, go_on: bool, modified: Any
) -> None:
    plugin = Sample()
    plugin.reply = value

    reply = await _call(invoker, plugin, "EVENT_HANDLER", "watch", message={})

    assert reply["continue_processing"] is go_on
    assert reply.get("modified_message") == modified


async def test_a_sync_hook_handler_runs_in_a_thread_and_an_unknown_action_continues(
    invoker: Invoker,
) -> None:
    plugin = Sample()
    plugin.reply = {"action": "explode", "modified_kwargs": {"k": 1}}

    reply = await _call(invoker, plugin, "HOOK_HANDLER", "hook")

    assert reply["action"] == "continue"
    assert reply["modified_kwargs"] == {"k": 1}


async def test_an_api_returns_its_value_and_a_raising_one_reports_the_error(
    invoker: Invoker,
) -> None:
    good = await _call(invoker, Sample(), "API", "api", x=4)
    bad = await _call(invoker, Sample(), "API", "api", x=-1)

    assert good == {"success": True, "result": 8, "error": ""}
    assert bad["success"] is False
    assert bad["error"] == "ValueError: x must not be negative"


def test_an_entry_naming_a_missing_method_is_refused_naming_the_component() -> None:
    class Overridden(Sample):
        def get_components(self) -> list[dict[str, Any]]:
            return [{"name": "ghost", "type": "COMMAND", "metadata": {"handler_name": "nope"}}]

    with pytest.raises(ValueError, match="COMMAND component 'ghost' names method 'nope'"):
        component_handlers(Overridden())


def test_tool_entries_are_left_to_the_tool_declarations_and_lower_case_types_accepted() -> None:
    class Overridden(Sample):
        def get_components(self) -> list[dict[str, Any]]:
            return [
                {"name": "t", "type": "TOOL", "metadata": {"handler_name": "nope"}},
                {"name": "w", "type": "event_handler", "metadata": {"handler_name": "watch"}},
            ]

    assert list(component_handlers(Overridden())) == [("EVENT_HANDLER", "w")]


def test_a_refused_type_in_an_override_is_refused_with_the_reason() -> None:
    class Overridden(Sample):
        def get_components(self) -> list[dict[str, Any]]:
            return [{"name": "ext", "type": "REPLY_EXTENSION", "metadata": {}}]

    with pytest.raises(ValueError, match="'ext' of type REPLY_EXTENSION is not supported"):
        component_handlers(Overridden())


async def test_a_component_without_a_method_falls_back_to_invoke_component(
    invoker: Invoker,
) -> None:
    class Dynamic(Sample):
        def get_components(self) -> list[dict[str, Any]]:
            meta = {"handler_name": "", "version": "1", "public": True}
            return [{"name": "dyn", "type": "API", "metadata": meta}]

        async def invoke_component(self, component_name: str, **kwargs: Any) -> Any:
            return {"called": component_name, **kwargs}

    handler = component_handlers(Dynamic())[("API", "dyn")]
    reply = await call_component(invoker, "tests.sample", handler, {"q": 1}, 5.0)

    assert reply["result"] == {"called": "dyn", "q": 1}
