"""``plughost check`` findings for commands, event handlers, hook handlers and APIs.

Each finding is ``(message, fix, severity)``. Errors are what can never work:
a command pattern that does not compile (the host skips it), a hook handler
with a mode, slot or error policy the host does not know. Warnings are what
probably does not do what the author meant: a command with neither pattern
nor alias (it never matches), an event no bot emits, a hook name one letter
away from a hook MaiBot runs.

What does not live here: loading the plugins and tools' findings (``checker``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from plughost.dispatch.hook_catalog import closest_maibot_hook
from plughost.plugins.command_patterns import FIX
from plughost.plugins.component_info import PluginComponent
from plughost_sdk.types import ErrorPolicy, EventType, HookMode, HookOrder

__all__ = ["component_findings", "count_kinds", "summarize", "word"]

Finding = tuple[str, str, Literal["error", "warning"]]

_WORDS = {
    "COMMAND": "command",
    "EVENT_HANDLER": "event handler",
    "HOOK_HANDLER": "hook handler",
    "API": "API",
    "HOME_CARD": "home card",
    "MESSAGE_GATEWAY": "message gateway",
    "LLM_PROVIDER": "LLM provider",
}


def component_findings(plugin_id: str, data: dict[str, Any]) -> list[Finding]:
    """What is wrong with one component as its runner reported it."""
    component = PluginComponent.from_wire(plugin_id, data)
    if component.kind == "COMMAND":
        return _command(component)
    if component.kind == "EVENT_HANDLER" and component.event_type not in set(EventType):
        known = ", ".join(e.value for e in EventType)
        fix = f"use one of the EventType values: {known}"
        return [(f"event type {component.event_type!r} is never emitted", fix, "warning")]
    if component.kind == "HOOK_HANDLER":
        return _hook(component)
    return []


def _command(command: PluginComponent) -> list[Finding]:
    if command.pattern_error:
        message = (
            f"pattern {command.pattern!r} is refused, so it never runs: {command.pattern_error}"
        )
        return [(message, f"correct the regular expression of @Command: {FIX}", "error")]
    if not command.pattern and not command.aliases:
        fix = "give @Command a pattern (a regular expression) or aliases (prefixes)"
        return [("has neither a pattern nor an alias, so it never runs", fix, "warning")]
    return []


def _hook(hook: PluginComponent) -> list[Finding]:
    found: list[Finding] = []
    close = closest_maibot_hook(hook.hook)
    if close is not None:
        message = f"hook {hook.hook!r} is not one MaiBot runs; did you mean {close!r}?"
        found.append(
            (message, f"use {close!r}, or ignore this if your application runs it", "warning")
        )
    for label, value, kind in (
        ("mode", hook.mode, HookMode),
        ("order", hook.order, HookOrder),
        ("error_policy", hook.error_policy, ErrorPolicy),
    ):
        allowed = [member.value for member in kind]
        if value not in allowed:
            fix = f"use one of: {', '.join(allowed)}"
            found.append((f"{label} {value!r} is not known to the host", fix, "error"))
    return found


def word(kind: str) -> str:
    """The readable noun of a component kind (``event handler``)."""
    return _WORDS.get(kind, kind.lower())


def summarize(components: list[dict[str, Any]]) -> str:
    """``2 commands, 1 hook handler``: what a plugin declares besides tools."""
    return count_kinds(str(data.get("type", "")) for data in components)


def count_kinds(kinds: Iterable[str]) -> str:
    """``5 commands, 1 hook handler`` from component types, in a fixed order."""
    found = list(kinds)
    parts = []
    for kind, noun in _WORDS.items():
        n = found.count(kind)
        if n:
            parts.append(f"{n} {noun}{'' if n == 1 else 's'}")
    return ", ".join(parts)
