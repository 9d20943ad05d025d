"""Which message gateway carries which chat stream, and what each gateway already routed.

A stream keeps MaiBot's id (``platform:group_id``, or ``platform:private:user_id``),
so two gateways of one platform name the same chat alike. The gateway that
first routes a message from a stream is bound to it: its ``send.*`` go out
there, and another gateway routing for that stream is refused, so a plugin
cannot take a chat over by routing one made-up message from it. The binding
lasts while the owner's plugin declares that gateway (across its reloads) and
is released when it unloads (:meth:`GatewayStreams.keep_only`).

Each gateway's memory is bounded on its own, oldest first: the message keys
it routed (:data:`MAX_SEEN`) and the streams it is bound to
(:data:`MAX_STREAMS`), so a gateway flooding unique messages drops only its own.
Nothing here checks a message or calls a runner (:mod:`plughost.dispatch.gateways`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Final

from plughost.dispatch.gateway_messages import InboundMessage
from plughost.plugins.component_info import PluginComponent

__all__ = ["MAX_SEEN", "MAX_STREAMS", "GatewayStreams", "Stream"]

MAX_STREAMS: Final = 10_000
"""Streams one gateway is bound to, at most; past that its oldest is released."""
MAX_SEEN: Final = 4096
"""Message keys one gateway is remembered to have routed, at most."""


@dataclass(frozen=True, slots=True)
class Stream:
    """A chat stream and the gateway bound to it."""

    plugin_id: str
    gateway: str
    key: str
    platform: str
    group_id: str
    user_id: str

    @property
    def full_name(self) -> str:
        return f"{self.plugin_id}.{self.gateway}"


@dataclass(slots=True)
class _Memory:
    """One gateway's own: the message keys it routed, the streams bound to it (oldest first)."""

    seen: OrderedDict[str, None] = field(default_factory=OrderedDict)
    streams: OrderedDict[str, None] = field(default_factory=OrderedDict)


class GatewayStreams:
    """Stream bindings and each gateway's seen messages, bounded per gateway."""

    def __init__(self, max_streams: int = MAX_STREAMS, max_seen: int = MAX_SEEN) -> None:
        self._max_streams = max_streams
        self._max_seen = max_seen
        self._streams: dict[str, Stream] = {}
        self._memories: dict[str, _Memory] = {}

    def get(self, stream_id: str) -> Stream | None:
        """The stream and its gateway, if a gateway is bound to it."""
        return self._streams.get(stream_id)

    def refusal(self, stream_id: str, gateway: PluginComponent) -> str | None:
        """Why ``gateway`` may not route for ``stream_id`` (another is bound to it), or None."""
        bound = self._streams.get(stream_id)
        if bound is None or bound.key == gateway.key:
            return None
        return (
            f"stream {stream_id!r} is carried by message gateway {bound.full_name}, which "
            f"routed it first, so message gateway {gateway.full_name} cannot route for it "
            f"while plugin {bound.plugin_id} declares {bound.gateway!r}"
        )

    def seen(self, gateway: PluginComponent, key: str) -> bool:
        """Whether ``gateway`` already routed a message under ``key``."""
        memory = self._memories.get(gateway.key)
        return memory is not None and key in memory.seen

    def remember(self, gateway: PluginComponent, key: str, inbound: InboundMessage) -> None:
        """Mark ``key`` seen for ``gateway`` and bind its stream to it (if not already)."""
        memory = self._memories.setdefault(gateway.key, _Memory())
        memory.seen[key] = None
        if len(memory.seen) > self._max_seen:
            memory.seen.popitem(last=False)
        stream_id = inbound.stream_id
        bound = self._streams.setdefault(
            stream_id,
            Stream(
                gateway.plugin_id,
                gateway.name,
                gateway.key,
                inbound.platform,
                inbound.group_id,
                inbound.user_id,
            ),
        )
        if bound.key != gateway.key:
            return  # refused by :meth:`refusal` before it got here
        memory.streams[stream_id] = None
        memory.streams.move_to_end(stream_id)
        if len(memory.streams) > self._max_streams:
            oldest, _ = memory.streams.popitem(last=False)
            self._streams.pop(oldest, None)

    def keep_only(self, gateways: Collection[str]) -> None:
        """Forget every gateway whose key is not in ``gateways``, releasing its streams."""
        for key in [k for k in self._memories if k not in gateways]:
            for stream_id in self._memories.pop(key).streams:
                self._streams.pop(stream_id, None)
