"""Match a message's text against every enabled command and run the first match in its runner.

Matching is MaiBot's: commands are tried in registry order (plugin id, then the
order the plugin reported them); a command matches when its pattern is found
in the text (``re.search``; named groups become ``matched_groups``) or, failing
that, when the text starts with one of its aliases. Patterns are matched by RE2
in linear time, never by Python's ``re``
(:mod:`plughost.plugins.command_patterns`), and off the loop: RE2 releases the
GIL, so no pattern and message stall the host. A pattern the host refuses never
matches (its plugin fails at load, and ``plughost check`` reports it).

A command gets ``text``, the context (``stream_id``, ``group_id``, ``user_id``,
``platform``), ``is_local_operator`` (:func:`is_local_operator`),
``matched_groups``, ``message`` and ``plugin_config``, as MaiBot passes them.

The outcome says whether a command handled the message and whether the bot
should keep processing it: a command's ``intercept`` (its third return value)
stops processing, and so does a command that failed (raised, timed out,
crashed its runner), so a broken command is never followed by the bot
answering the same message as if it were chat. What counts as success and
which text is the response is the runner's reading of the return value; a
MaiBot plugin's is MaiBot's (success unless it raised; a raised one stops
processing only when its metadata intercepts). A command that never answered
(timed out, crashed its runner) has its error as the response, as in MaiBot.
A failed command is logged as a warning with its response.

Around the command, as MaiBot's bot does, run two named hooks when a plugin
handles them: ``chat.command.before_execute`` (``message``, ``command_name``,
``plugin_id``, ``matched_groups``; aborting it skips the command, which counts as
handled and stops processing, and it may change ``matched_groups``) and
``chat.command.after_execute`` (the same plus ``success``, ``response``,
``intercept_message_level``, a bool as MaiBot sends it, and ``continue_process``;
it may change ``success``, ``response`` and ``continue_process``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from plughost.dispatch.calls import ComponentCaller, Deadline, PerVersion
from plughost.dispatch.hooks import HookDispatcher, HookOutcome
from plughost.plugins.command_patterns import CommandPattern
from plughost.plugins.component_info import PluginComponent
from plughost.plugins.components import ComponentRegistry

__all__ = ["AFTER", "BEFORE", "CommandDispatcher", "CommandOutcome", "is_local_operator"]

log = logging.getLogger(__name__)

BEFORE = "chat.command.before_execute"
"""Run before a matched command, as MaiBot does: may abort it or change its matched groups."""
AFTER = "chat.command.after_execute"
"""Run after it: may change ``success``, ``response`` and ``continue_process``."""

_Row = tuple[PluginComponent, CommandPattern | None, tuple[str, ...]]
"""A command, its compiled pattern and its aliases."""


@dataclass(frozen=True, slots=True)
class CommandOutcome:
    """What dispatching one message to the commands did.

    Attributes:
        handled: A command matched and was run (whatever its result).
        command: The command that matched, ``plugin_id.name``; None when none did.
        success: The command ran and reported success.
        response: The text the command returned (for the bot to send, if it wants).
        continue_processing: Whether the bot should go on with the message
            (false when the command intercepts it or failed).
        matched_groups: The pattern's named groups.
        error: Why the command failed, or ``""``.
        error_code: ``timeout``, ``plugin_crashed``, ``handler_failed``...; None on success.
    """

    handled: bool
    command: str | None = None
    success: bool = False
    response: str | None = None
    continue_processing: bool = True
    matched_groups: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    error_code: str | None = None


class CommandDispatcher:
    """Finds and runs the command a message's text triggers."""

    def __init__(
        self,
        registry: ComponentRegistry,
        caller: ComponentCaller,
        config_of: Callable[[str], Mapping[str, Any]],
        hooks: HookDispatcher | None = None,
    ) -> None:
        self._registry = registry
        self._caller = caller
        self._config_of = config_of
        self._hooks = hooks
        self._cache = PerVersion(registry)

    def _table(self) -> list[_Row]:
        return [
            (c, c.compiled, c.aliases)
            for c in self._registry.components("COMMAND")
            if self._registry.component_enabled(c)
        ]

    def _rows(self, session_id: str) -> list[_Row]:
        """The enabled commands in order, less those switched off in ``session_id``."""
        rows: list[_Row] = self._cache.get("commands", self._table)
        if not session_id:
            return rows
        return [r for r in rows if not self._registry.disabled_in_session(r[0], session_id)]

    def match(
        self, text: str, session_id: str = ""
    ) -> tuple[PluginComponent, dict[str, Any]] | None:
        """The first enabled command ``text`` triggers, with its named groups.

        A command the operator switched off in ``session_id`` is passed over there.
        """
        return _first_match(self._rows(session_id), text)

    async def dispatch(
        self,
        text: str,
        *,
        message: Mapping[str, Any] | None,
        context: Mapping[str, str],
        deadline: Deadline,
    ) -> CommandOutcome:
        """Run the command ``text`` triggers, if any; never raises.

        The session whose switched-off commands are passed over is ``session_id``
        in ``context``, else its ``stream_id``.
        """
        session = context.get("session_id") or context.get("stream_id", "")
        rows = self._rows(session)  # read on the loop; only RE2 runs in the worker thread
        found = await asyncio.to_thread(_first_match, rows, text) if rows else None
        if found is None:
            return CommandOutcome(handled=False)
        command, groups = found
        before = await self._around(BEFORE, command, message, groups, deadline)
        if before is not None and before.aborted:
            return CommandOutcome(
                handled=True,
                command=command.full_name,
                continue_processing=False,
                matched_groups=groups,
                error=f"{BEFORE} was aborted by {before.stopped_by}",
                error_code="aborted",
            )
        if before is not None:
            message = before.kwargs.get("message", message)
            changed = before.kwargs.get("matched_groups")
            groups = dict(changed) if isinstance(changed, dict) else groups
        outcome = await self._run(command, text, message, groups, context, deadline)
        return await self._after(command, message, outcome, deadline)

    async def _run(
        self,
        command: PluginComponent,
        text: str,
        message: Mapping[str, Any] | None,
        groups: dict[str, Any],
        context: Mapping[str, str],
        deadline: Deadline,
    ) -> CommandOutcome:
        args: dict[str, Any] = {
            "text": text,
            **{k: v for k, v in context.items() if k != "session_id"},
            "is_local_operator": is_local_operator(message),
            "matched_groups": groups,
            "message": dict(message) if message is not None else None,
            "plugin_config": dict(self._config_of(command.plugin_id)),
        }
        timeout = deadline.budget(command.timeout_ms, deadline.seconds)
        reply = await self._caller.call(command, args, timeout)
        # A command that never answered (timeout, crash) replies with why, as in MaiBot.
        response = reply.get("response", reply.get("error") or None)
        return CommandOutcome(
            handled=True,
            command=command.full_name,
            success=bool(reply.get("success", False)),
            response=None if response is None else str(response),
            continue_processing=not bool(reply.get("intercept", True)),
            matched_groups=groups,
            error=str(reply.get("error") or ""),
            error_code=reply.get("error_code"),
        )

    async def _around(
        self,
        hook: str,
        command: PluginComponent,
        message: Mapping[str, Any] | None,
        groups: dict[str, Any],
        deadline: Deadline,
        **extra: Any,
    ) -> HookOutcome | None:
        """Run MaiBot's command hook ``hook`` when some plugin handles it; None otherwise."""
        if self._hooks is None or not self._hooks.handlers(hook):
            return None
        payload = {
            "message": dict(message) if message is not None else None,
            "command_name": command.name,
            "plugin_id": command.plugin_id,
            "matched_groups": dict(groups),
            **extra,
        }
        return await self._hooks.run(hook, payload, deadline, deadline.seconds)

    async def _after(
        self,
        command: PluginComponent,
        message: Mapping[str, Any] | None,
        outcome: CommandOutcome,
        deadline: Deadline,
    ) -> CommandOutcome:
        after = await self._around(
            AFTER,
            command,
            message,
            outcome.matched_groups,
            deadline,
            success=outcome.success,
            response=outcome.response,
            intercept_message_level=not outcome.continue_processing,
            continue_process=outcome.continue_processing,
        )
        if after is not None:
            result = after.kwargs
            response = result.get("response", outcome.response)
            outcome = dataclasses.replace(
                outcome,
                success=bool(result.get("success", outcome.success)),
                response=None if response is None else str(response),
                continue_processing=bool(
                    result.get("continue_process", outcome.continue_processing)
                ),
            )
        if outcome.success:
            log.debug("command %s ran continue=%s", outcome.command, outcome.continue_processing)
        else:
            log.warning("command %s failed: %s", outcome.command, outcome.response)
        return outcome


def is_local_operator(message: Mapping[str, Any] | None) -> bool:
    """Whether ``message`` comes from the bot's own console, as MaiBot decides it.

    True only for platform ``bot_console`` with ``is_local_operator`` set to true
    in the message's ``message_info.additional_config``: the embedding
    application marks its own console's messages so.
    """
    if message is None or message.get("platform") != "bot_console":
        return False
    info = message.get("message_info")
    extra = info.get("additional_config") if isinstance(info, Mapping) else None
    return isinstance(extra, Mapping) and extra.get("is_local_operator") is True


def _first_match(rows: Sequence[_Row], text: str) -> tuple[PluginComponent, dict[str, Any]] | None:
    """The first row ``text`` triggers, with the pattern's named groups."""
    for command, pattern, aliases in rows:
        if pattern is not None and (groups := pattern.search(text)) is not None:
            return command, groups
        if aliases and text.startswith(aliases):
            return command, {}
    return None
