"""What every command gets besides its text, and what a failed one replies (in-memory owner)."""

from __future__ import annotations

from typing import Any

import pytest

from plughost.dispatch.commands import is_local_operator
from plughost.dispatch.service import ComponentDispatcher
from plughost.plugins.component_info import PluginComponent
from plughost.plugins.components import ComponentRegistry
from plughost.settings import HostSettings


class RecordingOwner:
    """Answers every command call with ``reply`` and keeps the arguments it was given."""

    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply
        self.args: list[dict[str, Any]] = []

    async def invoke_component(
        self, plugin_id: str, kind: str, name: str, args: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        self.args.append(args)
        return dict(self.reply)


def _dispatcher(owner: RecordingOwner) -> ComponentDispatcher:
    registry = ComponentRegistry()
    command = PluginComponent("p.a", "go", "COMMAND", {"command_pattern": r"^/go"})
    registry.replace_plugin("p.a", [], owner, [command])  # type: ignore[arg-type]
    settings = HostSettings()
    return ComponentDispatcher(registry, lambda: settings, lambda _: {})


def _message(platform: str, extra: dict[str, Any] | None) -> dict[str, Any]:
    info: dict[str, Any] = {"user_info": {"user_id": "1"}}
    if extra is not None:
        info["additional_config"] = extra
    return {"platform": platform, "message_info": info}


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (_message("bot_console", {"is_local_operator": True}), True),
        (_message("qq", {"is_local_operator": True}), False),
        (_message("bot_console", {"is_local_operator": "true"}), False),
        (_message("bot_console", {}), False),
        (_message("bot_console", None), False),
        ({"platform": "bot_console", "message_info": "odd"}, False),
        (None, False),
    ],
)
def test_only_a_console_message_marked_so_is_from_the_local_operator(
    message: dict[str, Any] | None, expected: bool
) -> None:
    assert is_local_operator(message) is expected


async def test_every_command_gets_is_local_operator_from_its_message() -> None:
    owner = RecordingOwner({"success": True, "response": "ok", "intercept": False})
    dispatcher = _dispatcher(owner)
    try:
        console = _message("bot_console", {"is_local_operator": True})
        await dispatcher.dispatch_command("/go", message=console, platform="bot_console")
        await dispatcher.dispatch_command("/go", message=_message("qq", None), platform="qq")
        await dispatcher.dispatch_command("/go")
    finally:
        await dispatcher.aclose()

    assert [args["is_local_operator"] for args in owner.args] == [True, False, False]


async def test_a_command_that_never_answered_replies_with_its_error() -> None:
    owner = RecordingOwner(
        {"success": False, "error": "it crashed", "error_code": "plugin_crashed"}
    )
    dispatcher = _dispatcher(owner)
    try:
        outcome = await dispatcher.dispatch_command("/go")
    finally:
        await dispatcher.aclose()

    assert (outcome.success, outcome.response, outcome.continue_processing) == (
        False,
        "it crashed",
        False,
    )
