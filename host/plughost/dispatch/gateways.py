"""Message gateway plugins: chat platforms in, ``send.*`` out, with no embedder code.

A plugin's ``@MessageGateway`` links the host to one chat platform, as in
MaiBot. The plugin reports the link ready (``ctx.gateway.update_state(name,
ready=True)``: the capability ``host.update_message_gateway_state``), then hands
in what arrives (``ctx.gateway.route_message(name, message)``:
``host.route_message``). Both need no manifest entry: only the plugin's own
declared gateways are accepted, as MaiBot accepts them. An accepted message,
checked and attributed to the gateway (:mod:`plughost.dispatch.gateway_messages`),
goes the way a bot sends a message, in the background: ``on_message_pre_process``
event handlers (which may drop or rewrite it), then commands, then ``on_message``
handlers. Its stream (``platform:group_id``, or ``platform:private:user_id``) is
remembered, so a plugin's ``send.text(text, stream_id)`` there goes back out
through the gateway's method when the embedder answers no ``send.*`` itself.
A stream belongs to the gateway that first routed it, until that gateway's
plugin unloads: another gateway routing for it is refused
(:mod:`plughost.dispatch.gateway_streams`).

Bounds, since the gateway is untrusted: a message's size and identifiers; a
repeated ``dedupe_key``/message id is not dispatched twice; at most
:data:`MAX_IN_FLIGHT` messages of one gateway are processed at once (past that
``accepted`` is false); each gateway is remembered routing at most
:data:`MAX_STREAMS` streams and its last :data:`MAX_SEEN` messages.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from plughost.dispatch.calls import Background, ComponentCaller, Deadline
from plughost.dispatch.commands import CommandDispatcher
from plughost.dispatch.events import EventDispatcher
from plughost.dispatch.gateway_messages import (
    InboundMessage,
    outbound_message,
    read_inbound,
    with_origin,
)
from plughost.dispatch.gateway_streams import MAX_SEEN, MAX_STREAMS, GatewayStreams
from plughost.plugins.component_info import PluginComponent
from plughost.plugins.components import ComponentRegistry
from plughost.runners.capabilities import CapabilityCall
from plughost.runners.channel import RemoteError
from plughost.settings import HostSettings
from plughost_sdk import wire

__all__ = [
    "MAX_IN_FLIGHT",
    "MAX_SEEN",
    "MAX_STREAMS",
    "ROUTE_MESSAGE",
    "UPDATE_STATE",
    "MessageGateways",
]

log = logging.getLogger(__name__)

ROUTE_MESSAGE: Final = "host.route_message"
UPDATE_STATE: Final = "host.update_message_gateway_state"
MAX_IN_FLIGHT: Final = 64


@dataclass(slots=True)
class _Link:
    """What a gateway reported about its link, for the component instance that reported it."""

    component: PluginComponent
    ready: bool
    platform: str
    account_id: str = ""
    scope: str = ""
    in_flight: int = 0


@dataclass(slots=True)
class MessageGateways:
    """Gateway states, inbound dispatch and the fallback ``send.*`` handler."""

    registry: ComponentRegistry
    caller: ComponentCaller
    events: EventDispatcher
    commands: CommandDispatcher
    background: Background
    settings: Callable[[], HostSettings]
    _links: dict[str, _Link] = field(default_factory=dict)
    _streams: GatewayStreams = field(default_factory=GatewayStreams)

    def __post_init__(self) -> None:
        self.registry.add_listener(self._forget_unloaded)

    def _forget_unloaded(self) -> None:
        """Release the streams and links of gateways no plugin declares any more."""
        live = {c.key for c in self.registry.components("MESSAGE_GATEWAY")}
        self._streams.keep_only(live)
        self._links = {k: v for k, v in self._links.items() if k in live}

    def _declared(self, call: CapabilityCall) -> PluginComponent:
        name = str(call.args.get("gateway_name") or "")
        for component in self.registry.components_of(call.plugin_id):
            if component.kind == "MESSAGE_GATEWAY" and component.name == name:
                return component
        raise _refused(
            f"plugin {call.plugin_id} declares no message gateway {name!r}; declare it with "
            "@MessageGateway before routing through it"
        )

    def _link(self, component: PluginComponent) -> _Link | None:
        link = self._links.get(component.key)
        return link if link is not None and link.component is component else None

    async def update_state(self, call: CapabilityCall) -> dict[str, Any]:
        """``host.update_message_gateway_state``: a gateway's link is up or down."""
        component = self._declared(call)
        platform = str(call.args.get("platform") or "") or component.platform
        if component.platform and platform != component.platform:
            raise _refused(
                f"message gateway {component.full_name} is declared for platform "
                f"{component.platform!r} and cannot report {platform!r}; declare another "
                "@MessageGateway for that platform"
            )
        # The same link is updated in place: its messages still in processing keep
        # counting, so reporting ready again does not lift the in-flight bound.
        link = self._link(component) or _Link(component, False, platform)
        link.ready = bool(call.args.get("ready"))
        link.platform = platform
        link.account_id = str(call.args.get("account_id") or "")
        link.scope = str(call.args.get("scope") or "")
        self._links[component.key] = link
        log.info(
            "message gateway %s ready=%s platform=%s",
            component.full_name,
            bool(call.args.get("ready")),
            platform,
        )
        return {"accepted": True}

    async def route_message(self, call: CapabilityCall) -> dict[str, Any]:
        """``host.route_message``: check one inbound message and dispatch it in the background."""
        component = self._declared(call)
        link = self._link(component)
        if not component.receives or link is None or not link.ready:
            why = (
                "is not ready (report it with update_state)"
                if component.receives
                else f"is declared {component.route_type!r}, not 'receive' or 'duplex'"
            )
            raise _refused(f"message gateway {component.full_name} cannot route messages in: {why}")
        try:
            inbound = read_inbound(call.args.get("message"))
        except ValueError as exc:
            raise RemoteError(wire.error_body("bad_payload", f"{ROUTE_MESSAGE}: {exc}")) from None
        if not link.platform:
            raise _refused(
                f"message gateway {component.full_name} has no platform, so any message "
                "would claim one; declare it (@MessageGateway(platform=...)) or report it "
                "with update_state(platform=...)"
            )
        if inbound.platform != link.platform:
            raise _refused(
                f"message gateway {component.full_name} serves platform {link.platform!r}, "
                f"not {inbound.platform!r}"
            )
        route = {"platform": inbound.platform, "account_id": link.account_id, "scope": link.scope}
        external = call.args.get("external_message_id") or inbound.message["message_id"]
        refusal = self._streams.refusal(inbound.stream_id, component)
        if refusal is not None:
            raise _refused(refusal)
        # Seen per gateway: one gateway's keys cannot mark another's messages as seen.
        key = str(call.args.get("dedupe_key") or external)
        if self._streams.seen(component, key) or link.in_flight >= MAX_IN_FLIGHT:
            return {"accepted": False, "route_key": route}
        self._streams.remember(component, key, inbound)
        inbound.message["gateway"] = {"plugin_id": call.plugin_id, "name": component.name}
        link.in_flight += 1
        self.background.start(
            f"message from gateway {component.full_name}", lambda: self._dispatch(link, inbound)
        )
        return {"accepted": True, "route_key": route}

    async def _dispatch(self, link: _Link, inbound: InboundMessage) -> dict[str, Any]:
        """The bot's message path: pre-process events, commands, then on_message handlers."""
        try:
            seconds = self.settings().call_timeout
            message = inbound.message
            pre = await self.events.emit(
                "on_message_pre_process", message, {}, Deadline(seconds), seconds
            )
            if not pre.continue_processing:
                return {"success": True}
            message = with_origin(pre.message or message, inbound.platform)
            text = str(message.get("processed_plain_text") or inbound.text)
            context = {
                "stream_id": inbound.stream_id,
                "group_id": inbound.group_id,
                "user_id": inbound.user_id,
                "platform": inbound.platform,
                "session_id": inbound.stream_id,
            }
            command = await self.commands.dispatch(
                text, message=message, context=context, deadline=Deadline(seconds)
            )
            if command.handled and not command.continue_processing:
                return {"success": True}
            await self.events.emit("on_message", message, {}, Deadline(seconds), seconds)
            return {"success": True}
        finally:
            link.in_flight -= 1

    async def send(self, call: CapabilityCall) -> dict[str, Any]:
        """``send.*`` when the embedder answers none: out through the stream's gateway."""
        stream_id = str(call.args.get("stream_id") or "")
        stream = self._streams.get(stream_id)
        if stream is None:
            raise _not_provided(
                f"{call.capability}: no message gateway carries stream {stream_id!r} (a stream "
                "is known once a gateway routed a message from it), and the embedder "
                "registered no handler for it"
            )
        component = next(
            (
                c
                for c in self.registry.components_of(stream.plugin_id)
                if c.kind == "MESSAGE_GATEWAY" and c.name == stream.gateway
            ),
            None,
        )
        link = self._link(component) if component is not None else None
        if component is None or link is None or not link.ready or not component.sends:
            return {"success": False, "error": f"message gateway {stream.gateway} cannot send"}
        message = outbound_message(
            call.capability, dict(call.args), stream.platform, stream.group_id, stream.user_id
        )
        route = {"platform": stream.platform, "account_id": link.account_id, "scope": link.scope}
        reply = await self.caller.call(
            component,
            {"message": message, "route": route, "metadata": {}},
            self.settings().call_timeout,
        )
        return _receipt(reply, message["message_id"], component.full_name)


def _receipt(reply: dict[str, Any], message_id: str, where: str) -> dict[str, Any]:
    """MaiBot's ``send.*`` answer from a gateway's reply (a dict receipt, text, or None)."""
    result = reply.get("result")
    failed = not reply.get("success", False) or (
        isinstance(result, dict) and result.get("success") is False
    )
    if failed:
        error = result.get("error") if isinstance(result, dict) else reply.get("error")
        return {"success": False, "error": f"message gateway {where}: {error or 'send failed'}"}
    external = ""
    if isinstance(result, dict):
        external = str(result.get("external_message_id") or result.get("message_id") or "")
    return {"success": True, "sent": True, "message_id": external or message_id}


def _refused(message: str) -> RemoteError:
    return RemoteError(wire.error_body("capability_denied", message))


def _not_provided(message: str) -> RemoteError:
    return RemoteError(wire.error_body("capability_not_provided", message))
