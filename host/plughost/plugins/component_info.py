"""PluginComponent: a plugin's command, handler, API, card, gateway or model client.

A runner reports each non-tool component in the dict shape of MaiBot's SDK
(``{"name", "type", "metadata"}``, see :mod:`plughost_sdk.components`); this
is that dict read once into typed accessors, so the dispatchers never parse
metadata themselves. An ``LLM_PROVIDER`` is named by its client type (MaiBot
lists providers apart from components; the runner reports them as components so
they are registered, listed, switched and reloaded like the rest). Tools are
:class:`~plughost.plugins.components.ToolComponent`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, get_args

from plughost.plugins.command_patterns import CommandPattern, CommandPatternError, compile_command

__all__ = ["ComponentKind", "PluginComponent"]

ComponentKind = Literal[
    "COMMAND",
    "EVENT_HANDLER",
    "HOOK_HANDLER",
    "API",
    "HOME_CARD",
    "MESSAGE_GATEWAY",
    "LLM_PROVIDER",
]
KINDS: frozenset[str] = frozenset(get_args(ComponentKind))


@dataclass(frozen=True)
class PluginComponent:
    """One non-tool component of one plugin; ``metadata`` is what the runner reported."""

    plugin_id: str
    name: str
    kind: ComponentKind
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, plugin_id: str, data: dict[str, Any]) -> PluginComponent:
        """Build from a runner's report.

        Raises:
            ValueError: an unknown type or a missing name.
        """
        kind = str(data.get("type", "")).upper()
        name = str(data.get("name") or "")
        if kind not in KINDS or not name:
            raise ValueError(f"plugin {plugin_id} reported a bad component: {data!r}")
        return cls(plugin_id, name, kind, dict(data.get("metadata") or {}))  # type: ignore[arg-type]

    def to_wire(self) -> dict[str, Any]:
        """The dict shape of MaiBot's SDK, for listings (``plughost components --json``)."""
        return {"name": self.name, "type": self.kind, "metadata": dict(self.metadata)}

    @property
    def full_name(self) -> str:
        """``plugin_id.name``: unique across the host within one kind."""
        return f"{self.plugin_id}.{self.name}"

    @property
    def key(self) -> str:
        """``KIND:plugin_id.name``: unique across the host (a tool may share the name)."""
        return f"{self.kind}:{self.full_name}"

    @property
    def description(self) -> str:
        """What the plugin says the component does."""
        return str(self.metadata.get("description") or "")

    @property
    def declared_enabled(self) -> bool:
        """Whether the plugin declared it enabled (the operator may still disable it)."""
        return bool(self.metadata.get("enabled", True))

    @property
    def timeout_ms(self) -> int:
        """The component's own time limit in ms (``timeout_ms`` metadata), or 0 for the default."""
        try:
            return max(0, int(self.metadata.get("timeout_ms") or 0))
        except (TypeError, ValueError):
            return 0

    # --- commands -------------------------------------------------------------------

    @property
    def pattern(self) -> str:
        """A command's regular expression (may be empty)."""
        return str(self.metadata.get("command_pattern") or "")

    @property
    def aliases(self) -> tuple[str, ...]:
        """A command's prefix aliases."""
        return tuple(str(a) for a in self.metadata.get("aliases") or () if str(a))

    @cached_property
    def compiled(self) -> CommandPattern | None:
        """A command's pattern compiled for RE2; None without one or when the host refuses it.

        Never Python's ``re``: see :mod:`plughost.plugins.command_patterns`.
        """
        if not self.pattern:
            return None
        try:
            return compile_command(self.pattern)
        except CommandPatternError:
            return None

    @property
    def pattern_error(self) -> str:
        """Why the host refuses a command's pattern, or ``""``."""
        if not self.pattern:
            return ""
        try:
            compile_command(self.pattern)
        except CommandPatternError as exc:
            return str(exc)
        return ""

    # --- event handlers -------------------------------------------------------------

    @property
    def event_type(self) -> str:
        """An event handler's event (``on_message_pre_process``)."""
        return str(self.metadata.get("event_type") or "")

    @property
    def intercepts(self) -> bool:
        """Whether an event handler runs in line and may stop or change the message."""
        return bool(self.metadata.get("intercept_message", False))

    @property
    def weight(self) -> int:
        """An event handler's weight: higher runs first."""
        try:
            return int(self.metadata.get("weight") or 0)
        except (TypeError, ValueError):
            return 0

    # --- hook handlers --------------------------------------------------------------

    @property
    def hook(self) -> str:
        """A hook handler's hook name."""
        return str(self.metadata.get("hook") or "")

    @property
    def mode(self) -> str:
        """``blocking`` or ``observe``."""
        return str(self.metadata.get("mode") or "blocking")

    @property
    def order(self) -> str:
        """``early``, ``normal`` or ``late``."""
        return str(self.metadata.get("order") or "normal")

    @property
    def error_policy(self) -> str:
        """``abort``, ``skip`` or ``log``."""
        return str(self.metadata.get("error_policy") or "skip")

    # --- APIs -----------------------------------------------------------------------

    @property
    def version(self) -> str:
        """An API's version."""
        return str(self.metadata.get("version") or "1")

    @property
    def public(self) -> bool:
        """Whether other plugins may call the API (with the operator's grant)."""
        return bool(self.metadata.get("public", False))

    # --- message gateways -----------------------------------------------------------

    @property
    def route_type(self) -> str:
        """A gateway's direction: ``send``, ``receive`` or ``duplex``."""
        return str(self.metadata.get("route_type") or "")

    @property
    def sends(self) -> bool:
        """Whether a gateway carries outbound messages."""
        return self.route_type in ("send", "duplex")

    @property
    def receives(self) -> bool:
        """Whether a gateway may route inbound messages."""
        return self.route_type in ("receive", "duplex")

    @property
    def platform(self) -> str:
        """The platform a gateway declared (it may report one at run time instead)."""
        return str(self.metadata.get("platform") or "")

    def summary(self) -> str:
        """One line for listings: what triggers it and how it runs."""
        if self.kind == "COMMAND":
            parts = [f"pattern {self.pattern!r}"] if self.pattern else []
            parts += [f"alias {a!r}" for a in self.aliases]
            return ", ".join(parts) or "no pattern or alias (never matches)"
        if self.kind == "EVENT_HANDLER":
            how = "intercepts" if self.intercepts else "background"
            return f"{self.event_type}, {how}, weight {self.weight}"
        if self.kind == "HOOK_HANDLER":
            limit = f", {self.timeout_ms} ms" if self.timeout_ms else ""
            return f"{self.hook}, {self.mode}/{self.order}, on error {self.error_policy}{limit}"
        if self.kind == "API":
            return f"version {self.version}, {'public' if self.public else 'private'}"
        if self.kind == "MESSAGE_GATEWAY":
            return f"{self.route_type}, platform {self.platform or '(reported when ready)'}"
        if self.kind == "LLM_PROVIDER":
            return f"client type {self.name}, version {self.metadata.get('version') or '?'}"
        return str(self.metadata.get("title") or "")
