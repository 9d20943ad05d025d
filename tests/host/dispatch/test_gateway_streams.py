"""Stream bindings and seen messages are bounded per gateway, so a flood evicts only its own."""

from __future__ import annotations

from plughost.dispatch.gateway_messages import InboundMessage, read_inbound
from plughost.dispatch.gateway_streams import MAX_SEEN, MAX_STREAMS, GatewayStreams
from plughost.plugins.component_info import PluginComponent


def _gateway(plugin: str) -> PluginComponent:
    return PluginComponent(plugin, "link", "MESSAGE_GATEWAY", {"route_type": "duplex"})


def read_inbound_for(group: str) -> InboundMessage:
    return read_inbound(
        {
            "message_id": f"m-{group}",
            "platform": "qq",
            "message_info": {"user_info": {"user_id": "9"}, "group_info": {"group_id": group}},
        }
    )


def test_a_gateway_flooding_unique_messages_evicts_only_its_own_streams_and_keys() -> None:
    streams = GatewayStreams(max_streams=3, max_seen=3)
    quiet, flood = _gateway("quiet"), _gateway("flood")
    streams.remember(quiet, "q1", read_inbound_for("home"))

    for number in range(10):
        streams.remember(flood, f"f{number}", read_inbound_for(f"spam{number}"))

    home = streams.get("qq:home")
    assert home is not None and home.full_name == "quiet.link"
    assert streams.seen(quiet, "q1")
    assert not streams.seen(flood, "f0")  # the flood's own oldest are gone
    assert streams.seen(flood, "f9")
    assert streams.get("qq:spam0") is None
    assert streams.get("qq:spam9") is not None


def test_unloading_a_gateway_releases_its_streams_to_the_next_that_routes_them() -> None:
    streams = GatewayStreams()
    first, second = _gateway("first"), _gateway("second")
    streams.remember(first, "k", read_inbound_for("1"))
    refused = streams.refusal("qq:1", second)

    streams.keep_only({second.key})

    assert refused is not None and "first.link" in refused and "second.link" in refused
    assert streams.refusal("qq:1", second) is None
    assert not streams.seen(first, "k")


def test_each_gateway_keeps_its_last_4096_messages_and_10000_streams_as_documented() -> None:
    assert (MAX_SEEN, MAX_STREAMS) == (4096, 10_000)
