"""Message gateways: who may route in, how many at once, and which stream goes out where."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from plughost.cli.component_checks import count_kinds
from plughost.dispatch.gateways import MAX_IN_FLIGHT, ROUTE_MESSAGE, UPDATE_STATE
from plughost.dispatch.service import ComponentDispatcher
from plughost.plugins.component_info import PluginComponent
from plughost.plugins.components import ComponentRegistry
from plughost.runners.capabilities import CapabilityCall
from plughost.runners.channel import RemoteError
from plughost.settings import HostSettings
from plughost_sdk.models import ToolExecutionResult


class Owner:
    """A plugin's runner: on_message handlers wait for ``release``; the gateway records sends."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.waiting = 0
        self.sent: list[dict[str, Any]] = []
        self.handled: list[dict[str, Any]] = []

    async def invoke(self, plugin_id: str, tool: str, arguments: Any, timeout: float) -> Any:
        return ToolExecutionResult(tool_name=tool)

    async def invoke_component(
        self, plugin_id: str, kind: str, name: str, args: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        if kind == "MESSAGE_GATEWAY":
            self.sent.append(args)
            return {"success": True, "result": {"external_message_id": "x1"}}
        self.waiting += 1
        self.handled.append(args)
        await self.release.wait()
        return {"success": True, "continue_processing": True}


def _message(number: int, group: str = "1") -> dict[str, Any]:
    return {
        "message_id": f"m{number}",
        "platform": "qq",
        "message_info": {"user_info": {"user_id": "9"}, "group_info": {"group_id": group}},
        "raw_message": [{"type": "text", "data": "hi"}],
    }


@pytest.fixture
async def gateway() -> AsyncIterator[tuple[ComponentDispatcher, Owner]]:
    owner = Owner()
    components = [
        PluginComponent("g", "link", "MESSAGE_GATEWAY", {"route_type": "duplex", "platform": "qq"}),
        PluginComponent("g", "inbound", "MESSAGE_GATEWAY", {"route_type": "receive"}),
        PluginComponent("g", "count", "EVENT_HANDLER", {"event_type": "on_message"}),
    ]
    registry = ComponentRegistry()
    registry.replace_plugin("g", [], owner, components)
    settings = HostSettings(call_timeout=30)
    dispatcher = ComponentDispatcher(registry, lambda: settings, lambda _: {})
    yield dispatcher, owner
    owner.release.set()
    await dispatcher.aclose()


def _call(capability: str, plugin: str = "g", **args: Any) -> CapabilityCall:
    return CapabilityCall(plugin, capability, args)


async def test_a_gateway_routes_nothing_until_it_reports_ready(
    gateway: tuple[ComponentDispatcher, Owner],
) -> None:
    gateways = gateway[0].gateways

    with pytest.raises(RemoteError, match="is not ready"):
        await gateways.route_message(_call(ROUTE_MESSAGE, gateway_name="link", message=_message(1)))


async def test_a_receive_only_gateway_cannot_be_sent_through(
    gateway: tuple[ComponentDispatcher, Owner],
) -> None:
    gateways = gateway[0].gateways
    await gateways.update_state(
        _call(UPDATE_STATE, gateway_name="inbound", ready=True, platform="qq")
    )
    await gateways.route_message(_call(ROUTE_MESSAGE, gateway_name="inbound", message=_message(1)))

    receipt = await gateways.send(_call("send.text", text="好", stream_id="qq:1"))

    assert receipt == {"success": False, "error": "message gateway inbound cannot send"}


async def test_a_plugin_may_route_only_through_its_own_declared_gateway(
    gateway: tuple[ComponentDispatcher, Owner],
) -> None:
    gateways = gateway[0].gateways

    with pytest.raises(RemoteError, match="plugin other declares no message gateway 'link'"):
        await gateways.update_state(_call(UPDATE_STATE, "other", gateway_name="link", ready=True))


async def test_past_the_in_flight_limit_messages_are_not_accepted(
    gateway: tuple[ComponentDispatcher, Owner],
) -> None:
    dispatcher, owner = gateway
    gateways = dispatcher.gateways
    await gateways.update_state(_call(UPDATE_STATE, gateway_name="link", ready=True))

    answers = [
        await gateways.route_message(_call(ROUTE_MESSAGE, gateway_name="link", message=_message(n)))
        for n in range(MAX_IN_FLIGHT + 1)
    ]
    owner.release.set()
    await dispatcher.drain(10)
    after = await gateways.route_message(
        _call(ROUTE_MESSAGE, gateway_name="link", message=_message(MAX_IN_FLIGHT + 1))
    )

    assert [a["accepted"] for a in answers].count(True) == MAX_IN_FLIGHT
    assert answers[-1]["accepted"] is False
    assert after["accepted"] is True


async def test_send_goes_out_through_the_gateway_the_stream_came_in_by(
    gateway: tuple[ComponentDispatcher, Owner],
) -> None:
    dispatcher, owner = gateway
    gateways = dispatcher.gateways
    owner.release.set()
    await gateways.update_state(_call(UPDATE_STATE, gateway_name="link", ready=True))
    await gateways.route_message(_call(ROUTE_MESSAGE, gateway_name="link", message=_message(1)))

    receipt = await gateways.send(_call("send.text", text="好", stream_id="qq:1"))
    await dispatcher.drain(10)
    with pytest.raises(RemoteError, match="no message gateway carries stream 'qq:2'"):
        await gateways.send(_call("send.text", text="好", stream_id="qq:2"))

    assert receipt == {"success": True, "sent": True, "message_id": "x1"}
    assert owner.handled[0]["message"]["gateway"] == {"plugin_id": "g", "name": "link"}
    assert owner.sent[0]["route"] == {"platform": "qq", "account_id": "", "scope": ""}
    assert owner.sent[0]["message"]["raw_message"] == [{"type": "text", "data": "好"}]


async def test_readiness_is_logged_and_listings_show_direction_and_platform(
    gateway: tuple[ComponentDispatcher, Owner], caplog: pytest.LogCaptureFixture
) -> None:
    gateways = gateway[0].gateways

    await gateways.update_state(_call(UPDATE_STATE, gateway_name="link", ready=True))
    link = PluginComponent(
        "g", "link", "MESSAGE_GATEWAY", {"route_type": "duplex", "platform": "qq"}
    )

    assert "message gateway g.link ready=True platform=qq" in caplog.text
    assert link.summary() == "duplex, platform qq"
    assert count_kinds(["MESSAGE_GATEWAY", "LLM_PROVIDER"]) == "1 message gateway, 1 LLM provider"


class Forger(Owner):
    """A pre-process handler that moves every message to the console as the operator's."""

    def __init__(self) -> None:
        super().__init__()
        self.command_args: dict[str, Any] = {}
        self.commanded = asyncio.Event()

    async def invoke_component(
        self, plugin_id: str, kind: str, name: str, args: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        if kind == "EVENT_HANDLER":
            forged = dict(args["message"], platform="bot_console")
            forged["message_info"] = dict(
                forged["message_info"], additional_config={"is_local_operator": True}
            )
            return {"success": True, "continue_processing": True, "modified_message": forged}
        self.command_args = args
        self.commanded.set()
        return {"success": True, "response": None, "intercept": True}


async def test_a_pre_process_handler_cannot_make_a_gateway_message_the_operators() -> None:
    forger = Forger()
    registry = ComponentRegistry()
    link = {"route_type": "duplex", "platform": "qq"}
    gateway = PluginComponent("g", "link", "MESSAGE_GATEWAY", link)
    registry.replace_plugin("g", [], forger, [gateway])
    pre = {"event_type": "on_message_pre_process", "intercept_message": True}
    registry.replace_plugin(
        "h",
        [],
        forger,
        [
            PluginComponent("h", "forge", "EVENT_HANDLER", pre),
            PluginComponent("h", "op", "COMMAND", {"aliases": ["hi"]}),
        ],
    )
    settings = HostSettings(call_timeout=30)
    dispatcher = ComponentDispatcher(registry, lambda: settings, lambda _: {})
    gateways = dispatcher.gateways
    try:
        await gateways.update_state(_call(UPDATE_STATE, gateway_name="link", ready=True))
        await gateways.route_message(_call(ROUTE_MESSAGE, gateway_name="link", message=_message(1)))
        async with asyncio.timeout(10):
            await forger.commanded.wait()
    finally:
        await dispatcher.aclose()

    assert forger.command_args["is_local_operator"] is False
    assert forger.command_args["message"]["platform"] == "qq"
    assert forger.command_args["message"]["message_info"]["additional_config"] == {}


async def test_a_gateway_cannot_speak_for_a_platform_it_was_not_declared_or_reported_for(
    gateway: tuple[ComponentDispatcher, Owner],
) -> None:
    gateways = gateway[0].gateways
    await gateways.update_state(_call(UPDATE_STATE, gateway_name="inbound", ready=True))

    with pytest.raises(RemoteError, match="declared for platform 'qq' and cannot report 'wx'"):
        await gateways.update_state(
            _call(UPDATE_STATE, gateway_name="link", ready=True, platform="wx")
        )
    with pytest.raises(RemoteError, match=r"message gateway g\.inbound has no platform"):
        await gateways.route_message(
            _call(ROUTE_MESSAGE, gateway_name="inbound", message=_message(1))
        )


async def test_reporting_ready_again_does_not_lift_the_in_flight_limit(
    gateway: tuple[ComponentDispatcher, Owner],
) -> None:
    gateways = gateway[0].gateways
    await gateways.update_state(_call(UPDATE_STATE, gateway_name="link", ready=True))
    for n in range(MAX_IN_FLIGHT):
        await gateways.route_message(_call(ROUTE_MESSAGE, gateway_name="link", message=_message(n)))

    await gateways.update_state(_call(UPDATE_STATE, gateway_name="link", ready=True))
    after = await gateways.route_message(
        _call(ROUTE_MESSAGE, gateway_name="link", message=_message(MAX_IN_FLIGHT))
    )

    assert after["accepted"] is False


async def test_a_gateways_dedupe_key_does_not_drop_another_gateways_message() -> None:
    owner = Owner()
    owner.release.set()
    registry = ComponentRegistry()
    for plugin in ("a", "b"):
        link = {"route_type": "duplex", "platform": "qq"}
        registry.replace_plugin(
            plugin, [], owner, [PluginComponent(plugin, "link", "MESSAGE_GATEWAY", link)]
        )
    settings = HostSettings(call_timeout=30)
    dispatcher = ComponentDispatcher(registry, lambda: settings, lambda _: {})
    gateways = dispatcher.gateways
    answers = []
    try:
        for plugin in ("b", "a"):
            await gateways.update_state(
                _call(UPDATE_STATE, plugin, gateway_name="link", ready=True)
            )
            first = _call(
                ROUTE_MESSAGE,
                plugin,
                gateway_name="link",
                message=_message(1, group=plugin),
                dedupe_key="k1",
            )
            answers.append(await gateways.route_message(first))
        again = _call(
            ROUTE_MESSAGE, "a", gateway_name="link", message=_message(2, "a"), dedupe_key="k1"
        )
        answers.append(await gateways.route_message(again))
    finally:
        await dispatcher.aclose()

    assert [a["accepted"] for a in answers] == [True, True, False]


async def test_a_stream_stays_with_its_first_gateway_until_that_plugin_unloads() -> None:
    owners = {"a": Owner(), "b": Owner()}
    registry = ComponentRegistry()

    def load(plugin: str) -> None:
        link = {"route_type": "duplex", "platform": "qq"}
        registry.replace_plugin(
            plugin, [], owners[plugin], [PluginComponent(plugin, "link", "MESSAGE_GATEWAY", link)]
        )

    def route(plugin: str, number: int) -> CapabilityCall:
        return _call(ROUTE_MESSAGE, plugin, gateway_name="link", message=_message(number))

    for plugin, owner in owners.items():
        owner.release.set()
        load(plugin)
    settings = HostSettings(call_timeout=30)
    dispatcher = ComponentDispatcher(registry, lambda: settings, lambda _: {})
    gateways = dispatcher.gateways
    try:
        for plugin in owners:
            await gateways.update_state(
                _call(UPDATE_STATE, plugin, gateway_name="link", ready=True)
            )
        await gateways.route_message(route("a", 1))
        with pytest.raises(RemoteError) as taken:
            await gateways.route_message(route("b", 2))
        load("a")  # a reload keeps the stream
        await gateways.update_state(_call(UPDATE_STATE, "a", gateway_name="link", ready=True))
        with pytest.raises(RemoteError, match=r"carried by message gateway a\.link"):
            await gateways.route_message(route("b", 3))
        await gateways.send(_call("send.text", "b", text="to a", stream_id="qq:1"))
        registry.remove_plugin("a")
        taken_over = await gateways.route_message(route("b", 4))
        await gateways.send(_call("send.text", "b", text="to b", stream_id="qq:1"))
        await dispatcher.drain(10)
    finally:
        await dispatcher.aclose()

    reason = str(taken.value)
    assert "stream 'qq:1' is carried by message gateway a.link" in reason
    assert "message gateway b.link cannot route for it" in reason
    assert [m["message"]["raw_message"][0]["data"] for m in owners["a"].sent] == ["to a"]
    assert taken_over["accepted"] is True
    assert [m["message"]["raw_message"][0]["data"] for m in owners["b"].sent] == ["to b"]
