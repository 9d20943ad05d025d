"""``maibot_sdk.context``: the ``self.ctx`` of a MaiBot plugin.

Same shape as MaiBot SDK 2.16's context: seventeen capability proxies
(``ctx.send``, ``ctx.llm``, ``ctx.api``...) whose methods take the same
positional and keyword arguments, put the same keyword arguments on the wire,
and unwrap the host's answer the same way (a bool for ``send.*``, the
documented key for the others, see :data:`RESULT_KEYS`).

Underneath, every call is one plughost capability call (``capability.call``
with ``{"capability", "args"}``), checked against the manifest and answered by
the embedder's handler for that name. :func:`bridge_rpc_call` adapts a
plughost :class:`~plughost_sdk.context.CapabilityBridge` to MaiBot's raw
``rpc_call`` seam, including the MaiBot runner's habit of taking an RPC timeout
out of the arguments (``rpc_timeout_ms``, ``_timeout_ms``, ``timeout_ms``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plughost_sdk.context import CapabilityBridge
from plughost_sdk.errors import CapabilityError
from plughost_sdk.maibot.capabilities.api import APICapability
from plughost_sdk.maibot.capabilities.chat import ChatCapability
from plughost_sdk.maibot.capabilities.component import ComponentCapability
from plughost_sdk.maibot.capabilities.config import ConfigCapability
from plughost_sdk.maibot.capabilities.database import DatabaseCapability
from plughost_sdk.maibot.capabilities.emoji import EmojiCapability
from plughost_sdk.maibot.capabilities.frequency import FrequencyCapability
from plughost_sdk.maibot.capabilities.gateway import GatewayCapability
from plughost_sdk.maibot.capabilities.knowledge import KnowledgeCapability
from plughost_sdk.maibot.capabilities.llm import LLMCapability
from plughost_sdk.maibot.capabilities.maisaka import MaisakaCapability
from plughost_sdk.maibot.capabilities.market import MarketCapability
from plughost_sdk.maibot.capabilities.message import MessageCapability
from plughost_sdk.maibot.capabilities.person import PersonCapability
from plughost_sdk.maibot.capabilities.render import RenderCapability
from plughost_sdk.maibot.capabilities.send import SendCapability
from plughost_sdk.maibot.capabilities.statistics import StatisticsCapability
from plughost_sdk.maibot.capabilities.tool import ToolCapability
from plughost_sdk.maibot.capabilities.webui import WebUICapability

__all__ = [
    "BOOLEAN_RESULT_CAPABILITIES",
    "RESULT_KEYS",
    "MaiBotCapabilityError",
    "PluginContext",
    "PluginPaths",
    "RpcCallFn",
    "bridge_rpc_call",
    "normalize_capability_result",
]

RpcCallFn = Callable[..., Awaitable[Any]]
"""``async (method, plugin_id, payload, timeout_ms=None) -> result``, MaiBot's raw RPC seam."""

RESULT_KEYS: dict[str, str] = {
    "webui.claim_upload": "upload",
    "api.call": "result",
    "api.get": "api",
    "api.list": "apis",
    "chat.get_all_streams": "streams",
    "chat.get_avatar": "avatar",
    "chat.get_group_streams": "streams",
    "chat.get_private_streams": "streams",
    "chat.get_stream_by_group_id": "stream",
    "chat.get_stream_by_user_id": "stream",
    "component.get_all_plugins": "plugins",
    "component.get_plugin_info": "plugin",
    "component.list_loaded_plugins": "plugins",
    "component.list_registered_plugins": "plugins",
    "config.get": "value",
    "config.get_all": "value",
    "config.get_plugin": "value",
    "database.count": "count",
    "database.delete": "result",
    "database.get": "result",
    "database.query": "result",
    "database.save": "result",
    "emoji.get_all": "emojis",
    "emoji.get_by_description": "emoji",
    "emoji.get_count": "count",
    "emoji.get_emotions": "emotions",
    "emoji.get_info": "info",
    "emoji.get_random": "emojis",
    "frequency.get_adjust": "value",
    "frequency.get_current_talk_value": "value",
    "knowledge.search": "content",
    "llm.get_available_models": "models",
    "market.search": "result",
    "market.get_detail": "result",
    "market.get_readme": "result",
    "message.build_readable": "text",
    "message.count_new": "count",
    "message.get_by_id": "message",
    "message.get_by_time": "messages",
    "message.get_by_time_in_chat": "messages",
    "message.get_recent": "messages",
    "person.get_id": "person_id",
    "person.get_id_by_name": "person_id",
    "person.get_value": "value",
    "render.html2png": "result",
    "statistics.local.message_trend": "series",
    "statistics.local.model_trend": "series",
    "statistics.local.models": "models",
    "statistics.local.online_time_trend": "series",
    "statistics.local.token_distribution": "distribution",
    "statistics.local.token_trend": "series",
    "statistics.local.tool_trend": "series",
    "tool.get_definitions": "tools",
}
"""The key of the host's ``{"success": ..., key: value}`` answer a proxy returns."""

SEND_CAPABILITIES = frozenset(
    {"send.command", "send.custom", "send.emoji", "send.forward", "send.hybrid"}
    | {"send.image", "send.text"}
)
BOOLEAN_RESULT_CAPABILITIES = SEND_CAPABILITIES | {"frequency.set_adjust"}
"""Capabilities whose proxy returns the host's ``success`` as a bool."""

RAW_HOST_METHODS = frozenset(
    {"cap.call", "host.route_message", "host.update_message_gateway_state"}
)
_RPC_TIMEOUT_KEYS = ("rpc_timeout_ms", "_timeout_ms", "timeout_ms")


class MaiBotCapabilityError(CapabilityError, RuntimeError):
    """A refused or failed capability call; a RuntimeError, as MaiBot raises."""


def normalize_capability_result(
    capability: str, result: Any, *, return_details: bool = False
) -> Any:
    """Unwrap a host answer the way MaiBot's SDK does.

    Only an answer shaped ``{"success": ..., ...}`` is unwrapped; anything else
    is returned as it came.
    """
    if not isinstance(result, dict) or "success" not in result:
        return result
    key = RESULT_KEYS.get(capability)
    if key is not None and key in result:
        return result[key]
    if return_details and capability in SEND_CAPABILITIES:
        return {
            "sent": bool(result.get("sent", result.get("success"))),
            "message_id": result.get("message_id"),
        }
    if capability in BOOLEAN_RESULT_CAPABILITIES:
        return bool(result.get("success"))
    return result


def bridge_rpc_call(bridge: CapabilityBridge, plugin_id: str) -> RpcCallFn:
    """MaiBot's ``rpc_call`` seam over a plughost capability bridge.

    ``cap.call`` becomes the capability it names; the two gateway methods become
    the capabilities ``host.route_message`` and ``host.update_message_gateway_state``.
    The plugin id is the bridge's, whatever the caller passes.
    """

    async def rpc_call(
        method: str,
        caller: str = "",
        payload: dict[str, Any] | None = None,
        timeout_ms: int | None = None,
    ) -> Any:
        del caller  # one plugin cannot act as another
        body = dict(payload or {})
        if method == "cap.call":
            capability = str(body.get("capability") or "")
            args = dict(body.get("args") or {})
            if timeout_ms is None:
                timeout_ms = _pop_rpc_timeout(capability, args)
        else:
            capability, args = method, body
        try:
            return await bridge.call_capability(plugin_id, capability, args, timeout_ms)
        except CapabilityError as exc:
            raise MaiBotCapabilityError(exc.code, str(exc)) from None

    return rpc_call


def _pop_rpc_timeout(capability: str, args: dict[str, Any]) -> int | None:
    """Take the RPC timeout out of the arguments, as MaiBot's runner does."""
    for key in _RPC_TIMEOUT_KEYS:
        # render.html2png's timeout_ms is its own rendering budget, not the RPC's.
        if key in args and not (key == "timeout_ms" and capability == "render.html2png"):
            value = args.pop(key)
            return int(value) if value is not None else None
    return None


@dataclass(frozen=True)
class PluginPaths:
    """The directories a plugin is given: persistent data, and scratch space."""

    data_dir: Path
    runtime_dir: Path


class PluginContext:
    """``self.ctx`` of a MaiBot plugin: capability proxies, paths and a logger."""

    def __init__(
        self, plugin_id: str, rpc_call: RpcCallFn | None = None, paths: PluginPaths | None = None
    ) -> None:
        self._plugin_id = plugin_id
        self._rpc_call = rpc_call
        self._logger: logging.Logger | None = None
        self.paths = paths or PluginPaths(
            data_dir=Path("data") / "plugins" / plugin_id,
            runtime_dir=Path("temp") / "plugins" / plugin_id,
        )
        self.api = APICapability(self)
        self.webui = WebUICapability(self)
        self.gateway = GatewayCapability(self)
        self.send = SendCapability(self)
        self.db = DatabaseCapability(self)
        self.llm = LLMCapability(self)
        self.config = ConfigCapability(self)
        self.emoji = EmojiCapability(self)
        self.message = MessageCapability(self)
        self.frequency = FrequencyCapability(self)
        self.component = ComponentCapability(self)
        self.chat = ChatCapability(self)
        self.person = PersonCapability(self)
        self.render = RenderCapability(self)
        self.knowledge = KnowledgeCapability(self)
        self.tool = ToolCapability(self)
        self.statistics = StatisticsCapability(self)
        self.maisaka = MaisakaCapability(self)
        self.market = MarketCapability(self)

    @property
    def plugin_id(self) -> str:
        """The plugin's id."""
        return self._plugin_id

    @property
    def logger(self) -> logging.Logger:
        """The logger ``plugin.<id>``; its records reach the host's logs."""
        if self._logger is None:
            self._logger = logging.getLogger(f"plugin.{self._plugin_id}")
        return self._logger

    async def call_host_method(
        self,
        method: str,
        *,
        plugin_id: str = "",
        payload: dict[str, Any] | None = None,
        timeout_ms: int | None = None,
    ) -> Any:
        """Call one of the raw host methods MaiBot allows plugins.

        Raises:
            RuntimeError: the context has no connection to a host.
            PermissionError: ``method`` is not one of ``cap.call``,
                ``host.route_message``, ``host.update_message_gateway_state``.
        """
        if self._rpc_call is None:
            raise RuntimeError("this PluginContext is not connected to a host")
        name = str(method or "").strip()
        if name not in RAW_HOST_METHODS:
            raise PermissionError(
                f"plugins may not call the host method {name or '<empty>'!r}; use self.ctx's "
                "capability proxies"
            )
        if timeout_ms is None:
            return await self._rpc_call(name, plugin_id or self._plugin_id, payload)
        return await self._rpc_call(
            name, plugin_id or self._plugin_id, payload, timeout_ms=timeout_ms
        )

    async def call_capability(
        self, capability: str, timeout_ms: int | None = None, **kwargs: Any
    ) -> Any:
        """Call the capability ``capability`` with ``kwargs`` and unwrap the answer."""
        result = await self.call_host_method(
            "cap.call",
            payload={"capability": capability, "args": kwargs},
            timeout_ms=timeout_ms,
        )
        return normalize_capability_result(
            capability, result, return_details=bool(kwargs.get("return_details", False))
        )

    @staticmethod
    def _normalize_capability_result(
        capability: str, result: Any, *, return_details: bool = False
    ) -> Any:
        return normalize_capability_result(capability, result, return_details=return_details)
