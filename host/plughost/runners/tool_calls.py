"""The built-in ``tools.call`` capability: a plugin calls a tool of the host, when allowed.

``await self.ctx.call_tool("web_search", {"query": "..."})`` in a plugin is the
capability call ``tools.call`` with ``name``, ``arguments`` and an optional
``timeout_ms``. :class:`~plughost.host.PluginHost` registers this handler on its
capability router. A call is checked in this order, each refusal reaching the
plugin as a ``CapabilityError`` with code ``capability_denied``:

1. **Manifest.** The caller's ``_manifest.json`` lists ``tools.call`` (or
   ``tools.*``, or ``*``); the router checks this before the handler runs.
2. **Grant.** The tool is the caller's own, or the operator granted it under
   ``[host.tool_grants]`` (:mod:`plughost.plugins.grants`). The grant is decided
   from the requested name before anything is said about the tool, so a
   caller without a grant cannot tell a missing tool from a forbidden one. It
   is read from the settings on every call; nothing is cached.
3. **Depth.** A tool called this way may call further tools; the chain may be
   at most ``tool_call_depth`` calls deep (see below).
4. **A live call.** The runner tags the call with the id of the tool call the
   plugin is serving; the host lets it through only while that call is still in
   flight on the plugin's runner. A background task the plugin started keeps the
   tag, so once its call has returned it is refused; so is a call from
   ``on_load`` or from a task that was never part of a call. A plugin that
   calls tools from background work on purpose is listed by the operator under
   ``[host] background_tool_calls``.

The call then goes through :meth:`ToolRegistry.invoke`, exactly like a model's
call: arguments are checked and cast, an unknown tool is a ``tool_not_found``
result with suggestions, and every failure of the tool is a failed result. The
result travels back in wire form (:func:`plughost_sdk.wire.result_to_wire`).

Depth and time. A capability call carries no link to the tool call the plugin
is serving, so the host tracks chains on its side: while a plugin serves a call
made through ``tools.call``, that call is *in progress* for the plugin, and a
``tools.call`` the plugin makes meanwhile extends the deepest chain in progress
for it (a plugin serving nothing nested starts a chain of depth 1). A loop
(A → B → A → ...) therefore ends at the limit whatever the plugins pass along;
a plugin serving several chains at once may reach the limit early, never late.
Each nested call runs for at most its ``timeout_ms``, at most ``call_timeout``,
and never past the latest deadline of the calls in progress for its caller, so
a whole chain ends within the budget of its first call.

What does not live here: the grant patterns (:mod:`plughost.plugins.grants`) and
the manifest check (:mod:`plughost.runners.capabilities`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from plughost.plugins.grants import grant_hint, granted_by, owning_plugin, tool_names
from plughost.runners.capabilities import CapabilityCall
from plughost.runners.channel import RemoteError
from plughost.settings import HostSettings
from plughost.tools.registry import ToolRegistry
from plughost_sdk import wire
from plughost_sdk.models import ToolExecutionResult, ToolInvocation, ToolSpec

__all__ = ["TOOLS_CALL", "ToolCallCapability"]

log = logging.getLogger(__name__)

TOOLS_CALL = "tools.call"
"""The capability name a plugin's manifest lists to use ``ctx.call_tool``."""


@dataclass(frozen=True, slots=True)
class _Nested:
    """A ``tools.call`` in progress in the plugin that serves it."""

    chain: tuple[str, ...]  # the calling plugins, first caller first
    deadline: float  # loop clock


@dataclass(frozen=True, slots=True)
class _Request:
    name: str
    arguments: dict[str, Any] | str
    timeout: float | None


class ToolCallCapability:
    """Answers ``tools.call``: grant, depth, deadline, then the registry."""

    def __init__(self, registry: ToolRegistry, settings: Callable[[], HostSettings]) -> None:
        """Call tools of ``registry`` under the grants of ``settings()``, read at every call."""
        self._registry = registry
        self._settings = settings
        self._in_progress: dict[str, list[_Nested]] = {}

    async def __call__(self, call: CapabilityCall) -> dict[str, Any]:
        """Run one ``tools.call``; return the result in wire form.

        Raises:
            RemoteError: ``capability_denied``, for a tool not granted or a chain too deep.
            ValueError: malformed arguments (the plugin sees ``capability_failed``).
        """
        request = _parse(call.args)
        settings = self._settings()
        if not call.serving and call.plugin_id not in settings.background_tool_calls:
            raise _denied(_not_serving(call.plugin_id, request.name))
        spec = await self._registry.get_tool_spec(request.name)
        self._check_grant(call.plugin_id, request.name, spec, settings)
        parent = self._deepest(call.plugin_id)
        chain = (*parent.chain, call.plugin_id) if parent else (call.plugin_id,)
        if len(chain) > settings.tool_call_depth:
            raise _denied(_too_deep(chain, request.name, settings.tool_call_depth))
        budget = min(request.timeout or settings.call_timeout, settings.call_timeout)
        deadline = asyncio.get_running_loop().time() + budget
        if parent is not None:
            deadline = min(deadline, self._latest_deadline(call.plugin_id))
        target = owning_plugin(spec) if spec is not None else None
        result = await self._invoke(request, _Nested(chain, deadline), target)
        return wire.result_to_wire(result)

    def _check_grant(
        self, caller: str, name: str, spec: ToolSpec | None, settings: HostSettings
    ) -> None:
        if spec is not None and owning_plugin(spec) == caller:
            return
        names = tool_names(spec) if spec is not None else (name,)
        pattern = granted_by(settings.tool_grants.get(caller, ()), names)
        if pattern is not None:
            log.debug("tool call granted caller=%s tool=%s pattern=%s", caller, name, pattern)
            return
        log.warning("tool call denied caller=%s tool=%s", caller, name)
        raise _denied(
            f"plugin {caller} may not call tool {name}: it is not one of its own tools and "
            "the operator has not granted it. To allow it, add this line under "
            f"[host.tool_grants] in the host's configuration (or add the name to the "
            f"plugin's existing list there): {grant_hint(caller, name)}"
        )

    def _deepest(self, plugin_id: str) -> _Nested | None:
        return max(self._in_progress.get(plugin_id, ()), key=lambda n: len(n.chain), default=None)

    def _latest_deadline(self, plugin_id: str) -> float:
        return max(n.deadline for n in self._in_progress[plugin_id])

    async def _invoke(
        self, request: _Request, nested: _Nested, target: str | None
    ) -> ToolExecutionResult:
        """Call the tool before ``nested.deadline``, counting it as in progress in ``target``."""
        if target is not None:
            self._in_progress.setdefault(target, []).append(nested)
        invocation = ToolInvocation(tool_name=request.name, arguments=request.arguments)
        loop = asyncio.get_running_loop()
        budget = nested.deadline - loop.time()
        try:
            async with asyncio.timeout_at(nested.deadline):
                # A granted call is the operator's decision, not a model's: hidden
                # and undiscovered tools run too.
                return await self._registry.invoke(invocation, trusted=True, nested=True)
        except TimeoutError:
            message = f"tool {request.name} did not finish within {max(budget, 0):.3g} s"
            return ToolExecutionResult.failure(request.name, message, "timeout")
        finally:
            if target is not None:
                self._forget(target, nested)

    def _forget(self, plugin_id: str, nested: _Nested) -> None:
        calls = self._in_progress[plugin_id]
        calls.remove(nested)
        if not calls:
            del self._in_progress[plugin_id]


def _parse(args: dict[str, Any]) -> _Request:
    name, arguments, timeout_ms = args.get("name"), args.get("arguments"), args.get("timeout_ms")
    if not isinstance(name, str) or not name:
        raise ValueError("tools.call needs 'name': the model-facing name of the tool to call")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict | str):
        kind = type(arguments).__name__
        raise ValueError(f"tools.call 'arguments' must be a dict or a JSON string, not {kind}")
    if timeout_ms is None:
        return _Request(name, arguments, None)
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms <= 0:
        raise ValueError(f"tools.call 'timeout_ms' must be a positive integer, got {timeout_ms!r}")
    return _Request(name, arguments, timeout_ms / 1000)


def _not_serving(caller: str, name: str) -> str:
    return (
        f"plugin {caller} may not call tool {name} now: ctx.call_tool works only while the "
        "plugin serves a tool call, and the call this request came from has already "
        "returned (or there was none). A plugin that calls tools from background work "
        f"needs the operator to list it: background_tool_calls = [{json.dumps(caller)}] "
        "under [host]"
    )


def _too_deep(chain: tuple[str, ...], name: str, limit: int) -> str:
    path = " -> ".join(chain)
    return (
        f"plugin {chain[-1]} may not call tool {name}: the chain of tool calls "
        f"{path} -> {name} is deeper than {limit} nested calls (tool_call_depth under "
        "[host]); a plugin that calls tools which call it back needs a way to stop"
    )


def _denied(message: str) -> RemoteError:
    return RemoteError(wire.error_body("capability_denied", message))
