"""``self.ctx``: what a plugin can ask of its host.

Every capability (``ctx.send.text``, ``ctx.db.query``, any ``ctx.<group>.<name>``)
is a call to the host through a :class:`CapabilityBridge` that the runner
provides. The host routes it to a handler the embedding application registered,
after checking the plugin's manifest lists it. ``ctx.call_tool`` is the
capability ``tools.call``, which the host answers itself (under the operator's
grants). ``ctx.llm.generate`` (``llm.generate``), ``ctx.elicit`` (``user.elicit``)
and ``ctx.resource_updated`` (``resources.updated``) are answered by the host's
MCP server when the call came from an MCP client that can answer them.
``ctx.config`` and ``ctx.paths`` are local: the runner keeps them current.
``ctx.report_progress`` is not a capability: it sends a ``progress`` event for
the call being served, and needs no manifest entry.

This module defines the interface only; it has no transport in it.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from plughost_sdk import wire
from plughost_sdk.models import ToolExecutionResult

__all__ = [
    "LLM_GENERATE",
    "RESOURCES_UPDATED",
    "USER_ELICIT",
    "CapabilityBridge",
    "CapabilityGroup",
    "LLMCapability",
    "PluginConfig",
    "PluginContext",
    "PluginPaths",
    "SendCapability",
]

_MISSING = object()

LLM_GENERATE = "llm.generate"
"""The capability behind ``ctx.llm.generate``."""
USER_ELICIT = "user.elicit"
"""The capability behind ``ctx.elicit``."""
RESOURCES_UPDATED = "resources.updated"
"""The capability behind ``ctx.resource_updated``."""


class CapabilityBridge(Protocol):
    """Carries a plugin's capability calls to the host; implemented by the runner."""

    async def call_capability(
        self, plugin_id: str, capability: str, args: dict[str, Any], timeout_ms: int | None
    ) -> Any:
        """Call ``capability`` (``group.name``) on the host and return its result.

        Raises:
            CapabilityError: denied by the manifest, not provided, or failed in the host.
        """
        ...

    def report_progress(self, progress: float, total: float | None, message: str | None) -> None:
        """Send a progress report for the tool call the current task serves; never blocks."""
        ...

    def is_cancelled(self) -> bool:
        """Whether the tool call the current task or thread serves was cancelled."""
        ...


class PluginConfig:
    """A read-only view of the plugin's ``config.toml``, kept current by the runner."""

    def __init__(self, data: Mapping[str, Any] | None = None, version: str = "") -> None:
        self._data: dict[str, Any] = dict(data or {})
        self.version = version

    def get(self, key: str, default: Any = None) -> Any:
        """Return the value at a dotted key (``"section.option"``), or ``default``."""
        node: Any = self._data
        for part in key.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node

    def get_all(self) -> dict[str, Any]:
        """Return a copy of the whole configuration."""
        return dict(self._data)

    def __getitem__(self, key: str) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key, _MISSING) is not _MISSING

    def _replace(self, data: Mapping[str, Any], version: str) -> None:
        self._data = dict(data)
        self.version = version


class PluginPaths:
    """A plugin's own data and temp directories; paths may not escape them."""

    def __init__(self, data_dir: Path, temp_dir: Path) -> None:
        self.data_dir = data_dir
        self.temp_dir = temp_dir

    def data(self, relative: str | Path = "") -> Path:
        """Resolve ``relative`` inside the data directory (created on demand)."""
        return self._resolve(self.data_dir, relative)

    def temp(self, relative: str | Path = "") -> Path:
        """Resolve ``relative`` inside the temp directory (created on demand)."""
        return self._resolve(self.temp_dir, relative)

    @staticmethod
    def _resolve(base: Path, relative: str | Path) -> Path:
        base.mkdir(parents=True, exist_ok=True)
        root = base.resolve()
        target = (root / relative).resolve()
        if target != root and root not in target.parents:
            raise ValueError(f"path {str(relative)!r} escapes the plugin's directory {root}")
        return target


class CapabilityGroup:
    """``ctx.<group>``: each attribute is a capability call ``<group>.<name>(**kwargs)``."""

    def __init__(self, ctx: PluginContext, group: str) -> None:
        self._ctx = ctx
        self._group = group

    def __getattr__(self, name: str) -> _CapabilityMethod:
        if name.startswith("_"):
            raise AttributeError(name)
        return _CapabilityMethod(self._ctx, f"{self._group}.{name}")


class _CapabilityMethod:
    def __init__(self, ctx: PluginContext, capability: str) -> None:
        self._ctx = ctx
        self._capability = capability

    async def __call__(self, *, timeout_ms: int | None = None, **kwargs: Any) -> Any:
        return await self._ctx.call_capability(self._capability, timeout_ms=timeout_ms, **kwargs)


class SendCapability(CapabilityGroup):
    """``ctx.send``: send messages to a chat stream."""

    def __init__(self, ctx: PluginContext) -> None:
        super().__init__(ctx, "send")

    async def text(self, text: str, stream_id: str, **options: Any) -> Any:
        """Send a text message to ``stream_id``; returns what the host's handler returned."""
        return await self._ctx.call_capability(
            "send.text", text=text, stream_id=stream_id, **options
        )

    async def image(self, image: bytes | str, stream_id: str, **options: Any) -> Any:
        """Send an image to ``stream_id``: raw bytes, or base64 text.

        The host's handler receives ``image_base64`` (base64 text), the argument
        MaiBot plugins send too, so one handler serves both kinds of plugin.
        """
        if isinstance(image, bytes | bytearray | memoryview):
            image = base64.b64encode(bytes(image)).decode("ascii")
        return await self._ctx.call_capability(
            "send.image", image_base64=image, stream_id=stream_id, **options
        )

    async def custom(self, message_type: str, content: Any, stream_id: str, **options: Any) -> Any:
        """Send a message of a host-defined type to ``stream_id``."""
        return await self._ctx.call_capability(
            "send.custom",
            message_type=message_type,
            content=content,
            stream_id=stream_id,
            **options,
        )


class LLMCapability(CapabilityGroup):
    """``ctx.llm``: ask a language model for a completion."""

    def __init__(self, ctx: PluginContext) -> None:
        super().__init__(ctx, "llm")

    async def generate(
        self,
        prompt: str | Sequence[Mapping[str, Any]],
        *,
        max_tokens: int = 1024,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: Sequence[str] | None = None,
        model_hint: str | None = None,
        timeout_ms: int | None = None,
    ) -> dict[str, Any]:
        """Ask the host's model (under ``plughost serve``, the MCP client's) for a completion.

        Args:
            prompt: The user's text, or a conversation: ``{"role": "user" |
                "assistant", "content": "..."}`` items, oldest first.
            max_tokens: The most tokens to generate.
            system_prompt: A system prompt the client may use.
            temperature: Sampling temperature, when the model takes one.
            stop_sequences: Where to stop generating.
            model_hint: A model name the client may prefer.
            timeout_ms: How long to wait (30 s by default).

        Returns:
            ``{"text": ..., "model": ..., "stop_reason": ...}``.

        Raises:
            CapabilityError: the manifest does not list ``llm.generate``, or no
                model can answer (served over MCP, the client does not offer
                sampling, and the host has no handler of its own).
        """
        if isinstance(prompt, str):
            messages = [{"role": "user", "content": prompt}]
        else:
            messages = [dict(message) for message in prompt]
        args: dict[str, Any] = {"messages": messages, "max_tokens": max_tokens}
        options = {
            "system_prompt": system_prompt,
            "temperature": temperature,
            "stop_sequences": list(stop_sequences) if stop_sequences is not None else None,
            "model_hint": model_hint,
        }
        args.update({key: value for key, value in options.items() if value is not None})
        value = await self._ctx.call_capability(LLM_GENERATE, timeout_ms=timeout_ms, **args)
        return dict(value) if isinstance(value, Mapping) else {"text": str(value)}


class PluginContext:
    """The ``self.ctx`` of a loaded plugin.

    Attributes:
        plugin_id: The plugin's id from its manifest.
        logger: A logger named ``plugin.<id>``; its records reach the host's logs.
        config: The plugin's configuration.
        paths: The plugin's data and temp directories.
        send: Message sending.
        llm: Model completions (``ctx.llm.generate``).
    """

    def __init__(
        self,
        plugin_id: str,
        bridge: CapabilityBridge,
        *,
        config: PluginConfig | None = None,
        paths: PluginPaths | None = None,
    ) -> None:
        self.plugin_id = plugin_id
        self.logger = logging.getLogger(f"plugin.{plugin_id}")
        self.config = config or PluginConfig()
        self.paths = paths
        self.send = SendCapability(self)
        self.llm = LLMCapability(self)
        self._bridge = bridge

    async def call_capability(
        self, capability: str, *, timeout_ms: int | None = None, **kwargs: Any
    ) -> Any:
        """Call any host capability by its full name, e.g. ``"db.query"``.

        Raises:
            CapabilityError: the manifest does not list it, no handler provides
                it, or the handler failed.
        """
        if "." not in capability:
            raise ValueError(f"capability names look like 'group.name', got {capability!r}")
        return await self._bridge.call_capability(
            self.plugin_id, capability, dict(kwargs), timeout_ms
        )

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> ToolExecutionResult:
        """Call a tool of the host (this plugin's own, or one the operator granted).

        The call goes through the host's tool registry, as a model's call does:
        the arguments are checked and cast first, and every failure of the tool
        (``tool_not_found``, ``invalid_arguments``, ``timeout``...) is a failed
        result, not an exception.

        Args:
            name: The tool's model-facing name.
            arguments: A dict, or the JSON text of one.
            timeout_ms: How long to wait (30 s by default, and never longer than
                what is left of the current call's deadline); the host also
                gives the called tool at most this, and at most its ``call_timeout``.

        Raises:
            CapabilityError: ``capability_denied`` when the manifest does not list
                ``tools.call``, the operator has not granted the tool, or the chain
                of nested calls is too deep; ``timeout`` when no answer came in time.
        """
        if isinstance(arguments, Mapping):
            arguments = dict(arguments)
        args = {"name": name, "arguments": arguments or {}, "timeout_ms": timeout_ms}
        value = await self._bridge.call_capability(self.plugin_id, "tools.call", args, timeout_ms)
        return wire.result_from_wire(value)

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Tell whoever called the current tool how far along it is.

        The report reaches the embedder's ``on_progress`` callback and, when the
        call came over MCP with a progress token, the MCP client as
        ``notifications/progress``. It is fire-and-forget: it never blocks and
        never raises for delivery problems, and reports may be dropped when the
        host is flooded. Call it from the tool's handler (async or sync); outside
        a tool call (``on_load``, a background task of your own) it does nothing.

        Args:
            progress: How much is done; it should grow with every report.
            total: How much there is in all, when known.
            message: A short human-readable status line.

        Raises:
            TypeError: ``progress`` or ``total`` is not a number.
        """
        for name, value in (("progress", progress), ("total", total)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float)
            ):
                raise TypeError(f"{name} must be a number, got {type(value).__name__}")
        text = None if message is None else str(message)
        total_value = None if total is None else float(total)
        self._bridge.report_progress(float(progress), total_value, text)

    async def elicit(
        self, message: str, schema: Mapping[str, Any], *, timeout_ms: int | None = 300_000
    ) -> dict[str, Any]:
        """Ask the user to fill in a form, through the MCP client (``elicitation/create``).

        Args:
            message: What to ask, shown to the user.
            schema: A flat JSON Schema object: ``{"type": "object", "properties":
                {...}, "required": [...]}`` with string, number, integer, boolean
                and enum properties.
            timeout_ms: How long to wait for the user (5 minutes by default).

        Returns:
            ``{"action": "accept" | "decline" | "cancel", "content": {...} | None}``.

        Raises:
            CapabilityError: the manifest does not list ``user.elicit``, or the call
                did not come from an MCP client that offers elicitation.
        """
        args = {"message": message, "schema": dict(schema)}
        value = await self.call_capability(USER_ELICIT, timeout_ms=timeout_ms, **args)
        return dict(value) if isinstance(value, Mapping) else {"action": "cancel"}

    async def resource_updated(self, uri: str) -> None:
        """Tell MCP clients subscribed to ``uri`` (one of this plugin's resources) that it changed.

        Raises:
            CapabilityError: the manifest does not list ``resources.updated``.
        """
        await self.call_capability(RESOURCES_UPDATED, uri=uri)

    @property
    def cancelled(self) -> bool:
        """Whether the tool call being served was cancelled or ran past its deadline.

        An ``async def`` handler is told by ``asyncio.CancelledError`` and needs
        no flag; a plain ``def`` handler runs in a thread that cannot be
        interrupted, so a long one checks this now and then and stops early.
        Outside a tool call it is False.
        """
        return self._bridge.is_cancelled()

    def capability(self, group: str) -> CapabilityGroup:
        """Return the capability group ``group`` (same as ``ctx.<group>``)."""
        return CapabilityGroup(self, group)

    def __getattr__(self, name: str) -> CapabilityGroup:
        if name.startswith("_"):
            raise AttributeError(name)
        return CapabilityGroup(self, name)
