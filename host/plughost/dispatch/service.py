"""ComponentDispatcher: commands, events, hooks and APIs behind one object the host owns.

:class:`~plughost.host.PluginHost` creates one, registers its ``api.*``
capabilities, and forwards ``dispatch_command``, ``emit_event``, ``run_hook``
and ``call_api`` to it; ``llm`` answers ``llm.*`` through the operator's chosen
plugin provider (:mod:`plughost.dispatch.llm_providers`), and ``gateways`` carries
messages in and out through message gateway plugins (:mod:`plughost.dispatch.gateways`).
Each call has a
deadline (``timeout``, by default the host's ``call_timeout``) that bounds the
handlers run in line; background
handlers (non-intercepting event handlers, observe hook handlers) each get
their own limit and are owned by :class:`~plughost.dispatch.calls.Background`
until they end or the host closes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any

from plughost.dispatch.apis import ApiDirectory, ApiOutcome, api_arguments
from plughost.dispatch.calls import Background, CircuitBreaker, ComponentCaller, Deadline
from plughost.dispatch.commands import CommandDispatcher, CommandOutcome
from plughost.dispatch.events import EventDispatcher, EventOutcome
from plughost.dispatch.gateways import MessageGateways
from plughost.dispatch.hooks import HookDispatcher, HookOutcome, HookSpec
from plughost.dispatch.llm_providers import LLMProviders
from plughost.plugins.components import ComponentRegistry
from plughost.settings import HostSettings

__all__ = ["ComponentDispatcher"]


class ComponentDispatcher:
    """Runs plugins' commands, event handlers, hook chains and APIs for the embedder."""

    def __init__(
        self,
        registry: ComponentRegistry,
        settings: Callable[[], HostSettings],
        config_of: Callable[[str], Mapping[str, Any]],
    ) -> None:
        """Dispatch over ``registry``; ``settings()`` is read at every call."""
        self._settings = settings
        self.background = Background()
        breaker = CircuitBreaker(
            lambda: settings().handler_failure_limit, lambda: settings().handler_cooldown
        )
        caller = ComponentCaller(registry, breaker)
        self.hooks = HookDispatcher(registry, caller, self.background)
        self.commands = CommandDispatcher(registry, caller, config_of, self.hooks)
        self.events = EventDispatcher(registry, caller, self.background)
        self.apis = ApiDirectory(registry, caller, settings)
        self.llm = LLMProviders(registry, ComponentCaller(registry), settings)
        self.gateways = MessageGateways(
            registry,
            ComponentCaller(registry),
            self.events,
            self.commands,
            self.background,
            settings,
        )

    def _deadline(self, timeout: float | None) -> Deadline:
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be positive seconds, got {timeout!r}")
        return Deadline(timeout if timeout is not None else self._settings().call_timeout)

    async def dispatch_command(
        self,
        text: str,
        *,
        message: Mapping[str, Any] | None = None,
        stream_id: str = "",
        group_id: str = "",
        user_id: str = "",
        platform: str = "",
        session_id: str = "",
        timeout: float | None = None,
    ) -> CommandOutcome:
        """Run the first enabled command ``text`` triggers (:mod:`plughost.dispatch.commands`)."""
        context = {
            "stream_id": stream_id,
            "group_id": group_id,
            "user_id": user_id,
            "platform": platform,
            "session_id": session_id,
        }
        deadline = self._deadline(timeout)
        return await self.commands.dispatch(
            text, message=message, context=context, deadline=deadline
        )

    async def emit_event(
        self,
        event_type: str | Enum,
        message: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        **extra: Any,
    ) -> EventOutcome:
        """Emit ``event_type`` to its handlers (see :mod:`plughost.dispatch.events`)."""
        name = str(getattr(event_type, "value", event_type))
        deadline = self._deadline(timeout)
        background = self._settings().call_timeout
        return await self.events.emit(name, message, extra, deadline, background)

    async def run_hook(
        self, hook: str, *, timeout: float | None = None, **kwargs: Any
    ) -> HookOutcome:
        """Run the chain of ``hook`` over ``kwargs`` (see :mod:`plughost.dispatch.hooks`)."""
        if not hook.strip():
            raise ValueError("run_hook needs a hook name, such as 'maisaka.planner.before_request'")
        deadline = self._deadline(timeout)
        return await self.hooks.run(hook.strip(), kwargs, deadline, self._settings().call_timeout)

    def register_hook_spec(self, spec: HookSpec) -> None:
        """Declare what a hook allows its handlers (abort, changing the payload, a limit)."""
        self.hooks.register_spec(spec)

    async def call_api(
        self,
        name: str,
        /,
        args: Mapping[str, Any] | None = None,
        *,
        version: str = "",
        timeout: float | None = None,
        **kwargs: Any,
    ) -> ApiOutcome:
        """Call any enabled plugin API by name (see :mod:`plughost.dispatch.apis`).

        The API gets ``args`` and ``kwargs`` together; an API whose own parameter
        is named ``args``, ``version`` or ``timeout`` takes it in ``args``
        (``name`` works as a keyword too).

        Raises:
            TypeError: ``args`` is not a mapping, or it and ``kwargs`` both give one argument.
        """
        arguments = api_arguments(args, kwargs)
        deadline = self._deadline(timeout)
        return await self.apis.call(
            None, name, arguments, version=version, timeout=deadline.seconds
        )

    async def drain(self, timeout: float = 10.0) -> bool:
        """Wait for the background handlers started so far; False if ``timeout`` passed first."""
        return await self.background.drain(timeout)

    async def aclose(self) -> None:
        """Cancel background handlers still running."""
        await self.background.aclose()
