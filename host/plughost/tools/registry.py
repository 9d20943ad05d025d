"""ToolRegistry: providers in order, one merged view of their tools, one place that routes a call.

Rules:

- **Order.** Providers are held in registration order; tools are listed and
  defined in that order, so a model sees the same definition list (and the
  prompt cache stays valid) until the tool set really changes.
- **Replacement in place.** Registering a provider whose ``provider_name`` is
  already taken replaces the old provider *at its position*: reloading a
  plugin does not move its tools to the end of the list. The replaced
  provider is returned; closing it is the caller's job.
- **First name wins.** When two providers expose the same model-facing name,
  the first keeps it and one warning names both sources (provider and
  ``tool_id``). Disabled specs (``enabled=False``) are dropped first, so a
  disabled tool never shadows an enabled one.
- **The host's names win over plugins'.** A plugin provider's tool whose name
  is, or looks like, a name the host keeps (``tool_search``, a built-in's, an
  MCP server's) is refused whatever the provider order, and
  :attr:`ToolRegistry.name_guard` reports it once (:mod:`plughost.tools.reserved`).
- **Visibility, also at call time.** ``hidden`` tools are never listed or
  defined for the model, and :meth:`ToolRegistry.invoke` refuses them
  (``tool_not_visible``) unless the caller says it is trusted
  (``invoke(..., trusted=True)``: the embedder's own code, an operator's
  ``plughost call``, a plugin's granted ``ctx.call_tool``). ``deferred`` tools
  are listed like ``visible`` ones; a call gate added by the tool search layer
  (:meth:`ToolRegistry.add_call_gate`) refuses one that the conversation has
  not discovered yet. ``ToolRegistry(enforce_visibility=False)`` (the
  operator's ``enforce_tool_visibility = false``) runs every tool by name, as
  before.
- **One context per call.** The invocation's own ``session_id``,
  ``stream_id``, ``reasoning`` and ``metadata`` win over the execution
  context's and the context fills what they leave empty
  (:meth:`ToolInvocation.execution_context`); every provider receives the
  merged context and an invocation carrying the same fields.
- **Calls never raise.** :meth:`ToolRegistry.invoke` returns a failed result
  for an unknown tool (``tool_not_found``, with suggestions that are never
  executed), for bad arguments (``invalid_arguments``) and for any exception
  in a provider (``provider_error``). Only cancellation propagates.
- **Shutdown.** After :meth:`ToolRegistry.begin_shutdown` a new call is
  answered at once with ``shutting_down`` (calls a tool in flight makes on its
  own behalf, ``nested=True``, still run); :meth:`ToolRegistry.wait_idle`
  waits for the calls in flight to finish.
- **Observed and traced.** Call observers (:meth:`ToolRegistry.add_call_observer`)
  hear every call with its duration: the operator's console and its metrics
  count from there. When the program traces with OpenTelemetry, each call is a
  ``plughost.tool_call`` span (:mod:`plughost.tracing`).
- **Change tracking.** :attr:`ToolRegistry.version` grows on every register,
  unregister and :meth:`ToolRegistry.notify_changed`; listeners hear the
  provider name each time. A provider whose tool set changes calls
  ``registry.notify_changed(self.provider_name)``; a provider that defines
  ``bind_registry(registry)`` receives the registry when it is registered.
- **Cached view.** The merged ``name -> (provider, spec)`` view is cached per
  (version, availability context), for the 64 most recent contexts, so a
  call does not list every provider again, and calls that arrive while it is
  being built share that build (:mod:`plughost.tools.views`); a provider that
  failed to list makes the view uncacheable, so it is retried on the next call.

What does not live here: argument checking (:mod:`plughost.tools.arguments`) and
declared defaults (:mod:`plughost.tools.defaults`), filled in here before each call;
definition shapes (:mod:`plughost.tools.definitions`), concurrency between calls
(:mod:`plughost.tools.batching`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Collection
from typing import Any, Literal

from plughost.tools import views
from plughost.tools.arguments import ArgumentErrors, prepare_arguments
from plughost.tools.call_failures import (
    describe_span,
    not_found,
    provider_failed,
    provider_returned,
)
from plughost.tools.defaults import fill_defaults
from plughost.tools.definitions import to_definitions
from plughost.tools.provider import ChangeListener, ToolProvider
from plughost.tools.reserved import HostNames, NameGuard
from plughost.tools.views import Route, RouteMoved, View, ViewCache, same_tool
from plughost.tracing import start_span, tracing
from plughost_sdk.models import (
    ToolAvailabilityContext,
    ToolExecutionContext,
    ToolExecutionResult,
    ToolInvocation,
    ToolSpec,
)

__all__ = ["CallGate", "CallObserver", "ToolRegistry"]

log = logging.getLogger(__name__)

CallObserver = Callable[[ToolSpec | None, ToolExecutionResult, float], None]
"""Hears every call: the spec that ran (None for an unknown name), the result, seconds."""

_VIEW_CACHE_SIZE = 64
_MAX_WARNED = 4096

CallGate = Callable[[ToolSpec, ToolExecutionContext | None], Awaitable[ToolExecutionResult | None]]
"""Asked before an untrusted call runs: a failed result refuses the call, None lets it run."""


class ToolRegistry:
    """Holds tool providers in order and routes every call to the right one."""

    def __init__(self, *, enforce_visibility: bool = True) -> None:
        """Create an empty registry.

        Args:
            enforce_visibility: Refuse untrusted calls of hidden tools and let
                call gates refuse undiscovered deferred tools; False runs every
                tool by name.
        """
        self.enforce_visibility = enforce_visibility
        self._gates: list[CallGate] = []
        self._providers: list[ToolProvider] = []
        self._listeners: list[ChangeListener] = []
        self._resource_listeners: list[Callable[[str], None]] = []
        self._views = ViewCache(_VIEW_CACHE_SIZE)
        self._warned: set[tuple[str, str, str]] = set()
        self.name_guard = NameGuard()
        """Refuses plugin tools that take the host's names; add a listener to hear of it."""
        self._observers: list[CallObserver] = []
        self._version = 0
        self._inflight = 0
        self._shutting_down = False
        self._idle: asyncio.Event | None = None

    @property
    def version(self) -> int:
        """A counter that grows whenever the tool set may have changed."""
        return self._version

    @property
    def providers(self) -> tuple[ToolProvider, ...]:
        """The registered providers, in order."""
        return tuple(self._providers)

    def get_provider(self, provider_name: str) -> ToolProvider | None:
        """Return the provider registered under ``provider_name``, if any."""
        return next((p for p in self._providers if p.provider_name == provider_name), None)

    # --- providers ---------------------------------------------------------------------

    def register_provider(
        self, provider: ToolProvider, *, before: str | None = None
    ) -> ToolProvider | None:
        """Add a provider, or replace the one with the same name at its position.

        Provider order decides which tool wins a name both offer (the first) and
        the order of the definitions a model sees.

        Args:
            provider: Any object following :class:`ToolProvider`; if it has a
                ``bind_registry`` method, it is called with this registry first.
            before: Put a new provider just ahead of the provider of this name (e.g.
                built-ins ``before="plugins"``); by default it goes last. A
                replacement keeps its place unless ``before`` is given.

        Returns:
            The provider that was replaced, for the caller to close; else None.

        Raises:
            TypeError: If ``provider`` does not follow the ToolProvider protocol.
            ValueError: If its ``provider_name`` is empty, or ``before`` names no
                registered provider (or the provider itself).
        """
        if not isinstance(provider, ToolProvider):
            raise TypeError(
                f"{type(provider).__name__} is not a ToolProvider: it needs provider_name, "
                "provider_type, list_tools(), invoke() and close()"
            )
        name = provider.provider_name
        if not isinstance(name, str) or not name:
            raise ValueError("a provider needs a non-empty provider_name to be registered")
        anchor = self.get_provider(before) if before is not None else None
        if before is not None and (anchor is None or before == name):
            known = ", ".join(p.provider_name for p in self._providers) or "none"
            raise ValueError(
                f"cannot register {name!r} before {before!r}: no other provider has that "
                f"name (registered: {known})"
            )
        bind = getattr(provider, "bind_registry", None)
        if callable(bind):
            bind(self)
        replaced = self.get_provider(name)
        if replaced is not None and anchor is None:
            self._providers[self._providers.index(replaced)] = provider
        else:
            if replaced is not None:
                self._providers.remove(replaced)
            at = self._providers.index(anchor) if anchor is not None else len(self._providers)
            self._providers.insert(at, provider)
        log.info("tool provider registered provider=%s replaced=%s", name, replaced is not None)
        self._changed(name)
        return replaced

    def unregister_provider(self, provider_name: str) -> bool:
        """Remove a provider by name (without closing it); False if it was not there."""
        provider = self.get_provider(provider_name)
        if provider is None:
            return False
        self._providers.remove(provider)
        log.info("tool provider unregistered provider=%s", provider_name)
        self._changed(provider_name)
        return True

    async def close(self) -> None:
        """Close every provider; a failing one is logged and the rest still close."""
        for provider in list(self._providers):
            try:
                await provider.close()
            except Exception:
                log.exception("tool provider failed to close provider=%s", provider.provider_name)

    # --- call gates ----------------------------------------------------------------------

    def add_call_gate(self, gate: CallGate) -> None:
        """Ask ``gate`` before every untrusted call while visibility is enforced."""
        self._gates.append(gate)

    def remove_call_gate(self, gate: CallGate) -> None:
        """Stop asking ``gate``; removing an unknown gate does nothing."""
        if gate in self._gates:
            self._gates.remove(gate)

    # --- change tracking -----------------------------------------------------------------

    def add_listener(self, listener: ChangeListener) -> None:
        """Call ``listener(provider_name)`` after every change to the tool set."""
        self._listeners.append(listener)

    def remove_listener(self, listener: ChangeListener) -> None:
        """Stop calling ``listener``; removing an unknown listener does nothing."""
        if listener in self._listeners:
            self._listeners.remove(listener)

    def add_resource_listener(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(uri)`` whenever a provider says resource ``uri`` changed."""
        self._resource_listeners.append(listener)

    def remove_resource_listener(self, listener: Callable[[str], None]) -> None:
        """Stop calling ``listener``; removing an unknown listener does nothing."""
        if listener in self._resource_listeners:
            self._resource_listeners.remove(listener)

    def notify_resource_updated(self, uri: str) -> None:
        """Record that the content of resource ``uri`` changed (MCP subscribers hear it)."""
        for listener in list(self._resource_listeners):
            try:
                listener(uri)
            except Exception:
                log.exception("resource listener failed uri=%s", uri)

    def notify_changed(self, provider_name: str) -> None:
        """Record that ``provider_name``'s tools changed; providers call this themselves."""
        self._changed(provider_name)

    def _changed(self, provider_name: str) -> None:
        self._version += 1
        self._views.clear()
        for listener in list(self._listeners):
            try:
                listener(provider_name)
            except Exception:
                log.exception("tool change listener failed provider=%s", provider_name)

    # --- listing -----------------------------------------------------------------------

    async def list_tools(
        self, context: ToolAvailabilityContext | None = None, *, include_hidden: bool = False
    ) -> list[ToolSpec]:
        """Return the enabled tools in provider order, one per name.

        Args:
            context: The chat the tools are for; None lists every tool.
            include_hidden: Also return hidden tools (for admin views, never
                for the model).
        """
        view = await self._view(context)
        if include_hidden:
            return [route.spec for route in view.routes.values()]
        return view.listed()

    async def get_tool_spec(
        self,
        name: str,
        context: ToolAvailabilityContext | None = None,
        *,
        ready_only: bool = False,
    ) -> ToolSpec | None:
        """Return the spec :meth:`invoke` would run for ``name`` (hidden tools included)."""
        view = await self._build_view(context, ready_only=True) if ready_only else None
        route = (view or await self._view(context)).routes.get(name)
        return route.spec if route is not None else None

    async def has_tool(self, name: str, context: ToolAvailabilityContext | None = None) -> bool:
        """Whether :meth:`invoke` would find ``name`` (hidden tools included)."""
        return name in (await self._view(context)).routes

    async def get_llm_definitions(
        self,
        context: ToolAvailabilityContext | None = None,
        *,
        format: Literal["openai", "anthropic"] = "openai",
        names: Collection[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Return the model's tool definitions, in registry order.

        Args:
            context: The chat the definitions are for; None means every tool.
            format: ``openai`` (Chat Completions) or ``anthropic`` (Messages).
            names: Only these tools (still in registry order); hidden tools
                are never defined, even when named.

        Raises:
            ValueError: If ``format`` is unknown.
        """
        specs = (await self._view(context)).listed()
        if names is not None:
            wanted = set(names)
            specs = [spec for spec in specs if spec.name in wanted]
        return to_definitions(specs, format)

    def _cached_view(self, context: ToolAvailabilityContext | None) -> View | None:
        """The view for ``context`` if it is built: a call finds it without awaiting."""
        return self._views.cached((self._version, context))

    async def _view(self, context: ToolAvailabilityContext | None) -> View:
        return await self._views.get(
            (self._version, context), lambda: self._build_view(context), lambda: self._version
        )

    async def _build_view(
        self, context: ToolAvailabilityContext | None, *, ready_only: bool = False
    ) -> View:
        providers = list(self._providers)
        lists = (views.list_safely(p, context, ready_only) for p in providers)
        listings = await asyncio.gather(*lists)
        view = View()
        host = HostNames.of(
            providers,
            [[s.name for s in specs if s.enabled] if specs else None for specs in listings],
        )
        for provider, specs in zip(providers, listings, strict=True):
            if specs is None:
                view.complete = False
                continue
            for spec in specs:
                self._add_route(view, provider, spec, host)
        return view

    def _add_route(
        self, view: View, provider: ToolProvider, spec: ToolSpec, host: HostNames
    ) -> None:
        if not spec.enabled:
            return
        if not spec.name:
            log.warning("tool without a name skipped provider=%s", provider.provider_name)
            return
        spec = views.stamped(spec, provider)
        if not self.name_guard.admits(provider, spec, host):
            return
        first = view.routes.get(spec.name)
        if first is None:
            view.routes[spec.name] = Route(provider, spec)
            return
        collision = (spec.name, first.spec.tool_id, spec.tool_id)
        if collision not in self._warned:
            if len(self._warned) >= _MAX_WARNED:
                self._warned.clear()
            self._warned.add(collision)
            log.warning(
                "duplicate tool name skipped name=%s kept=%s/%s skipped=%s/%s",
                spec.name,
                first.spec.provider_name,
                first.spec.tool_id,
                spec.provider_name,
                spec.tool_id,
            )

    # --- calls -------------------------------------------------------------------------

    async def invoke(
        self,
        invocation: ToolInvocation,
        context: ToolExecutionContext | None = None,
        *,
        trusted: bool = False,
        listed_all: bool = False,
        nested: bool = False,
        ready_only: bool = False,
        bound_to: ToolSpec | None = None,
    ) -> ToolExecutionResult:
        """Run one tool call; failures come back as failed results, never as exceptions.

        Args:
            invocation: The call; its arguments are checked and cast first.
            context: The conversation; its availability decides which tools exist.
            trusted: The caller is not a model (the embedder's own code, an
                operator): hidden and undiscovered tools run too.
            listed_all: The caller was shown every listed tool, deferred ones
                included (an MCP client of ``plughost serve``): call gates are
                skipped, hidden tools are still refused.
            nested: A call made by a tool in flight (``ctx.call_tool``): it runs
                even while the registry shuts down, so that call can finish.
            ready_only: Route over what each provider can run now
                (``list_ready_tools`` where it has one) instead of waiting for
                all it lists: a host still starting (never cached).
            bound_to: Run only this tool: checked against the very view the call
                is routed over, so a tool that takes the name meanwhile never runs it.

        Returns:
            The result, with ``tool_name`` set to the invoked name.

        Raises:
            RouteMoved: With ``bound_to``, the name leads to another tool or none.
        """
        name = invocation.tool_name
        if self._shutting_down and not nested:
            message = f"the host is shutting down; tool {name} was not run, retry elsewhere"
            return ToolExecutionResult.failure(name, message, "shutting_down")
        self._inflight += 1
        started = time.perf_counter()
        routed: list[ToolSpec] = []
        call = (invocation, context, routed, trusted, listed_all, ready_only, bound_to)
        try:
            if tracing():
                with start_span("plughost.tool_call", {"plughost.tool": name}) as span:
                    result = await self._route(*call)
                    if span is not None:
                        describe_span(span, routed[0] if routed else None, result)
            else:
                result = await self._route(*call)
            if result.tool_name != name:
                result = result.model_copy(update={"tool_name": name})
            if self._observers:
                self._observe(routed[0] if routed else None, result, time.perf_counter() - started)
            return result
        finally:
            self._inflight -= 1
            if self._inflight == 0 and self._idle is not None:
                self._idle.set()

    def route_now(
        self, name: str, arguments: dict[str, Any], context: ToolAvailabilityContext
    ) -> tuple[Route, dict[str, Any]] | None:
        """Route a call by a caller shown every tool without awaiting: the route and the values.

        The values are ``arguments`` checked, cast and defaulted as :meth:`invoke` does.
        None unless the call is plain: not shutting down or tracing, the view built,
        the tool routed and not hidden, the arguments valid; :meth:`invoke` then gives
        the answer. The caller counts the call with :meth:`call_began` and :meth:`call_ended`.
        """
        if self._shutting_down or tracing():
            return None
        view = self._cached_view(context)
        route = view.routes.get(name) if view is not None else None
        if route is None or route.spec.visibility == "hidden":
            return None
        schema = route.spec.parameters_schema
        prepared = prepare_arguments(arguments, schema)
        if isinstance(prepared, ArgumentErrors):
            return None
        return route, fill_defaults(prepared.values, schema)

    def call_began(self) -> None:
        """A call routed by :meth:`route_now` runs: counted in flight, as :meth:`invoke` counts."""
        self._inflight += 1

    def call_ended(
        self, spec: ToolSpec, result: ToolExecutionResult | None, seconds: float
    ) -> None:
        """A call of :meth:`call_began` ended: observed (unless cancelled: ``result`` None)."""
        try:
            if result is not None and self._observers:
                self._observe(spec, result, seconds)
        finally:
            self._inflight -= 1
            if self._inflight == 0 and self._idle is not None:
                self._idle.set()

    def begin_shutdown(self) -> None:
        """Answer every new call with ``shutting_down`` from now on (nested calls excepted)."""
        self._shutting_down = True

    @property
    def inflight(self) -> int:
        """Calls being run now."""
        return self._inflight

    async def wait_idle(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the calls in flight to finish; True if they did."""
        if self._inflight == 0:
            return True
        self._idle = self._idle or asyncio.Event()
        self._idle.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while self._inflight:
                    await self._idle.wait()
                    self._idle.clear()
        return self._inflight == 0

    def add_call_observer(self, observer: CallObserver) -> None:
        """Call ``observer(spec, result, seconds)`` after every :meth:`invoke`.

        ``spec`` is the tool that ran, or None when the name matched no tool;
        ``seconds`` is the whole call, argument checks included. Observers run
        on the caller's task and must be quick (counters, not I/O).
        """
        self._observers.append(observer)

    def remove_call_observer(self, observer: CallObserver) -> None:
        """Stop calling ``observer``; removing an unknown one does nothing."""
        if observer in self._observers:
            self._observers.remove(observer)

    def _observe(self, spec: ToolSpec | None, result: ToolExecutionResult, seconds: float) -> None:
        for observer in list(self._observers):
            try:
                observer(spec, result, seconds)
            except Exception:
                log.exception("tool call observer failed tool=%s", result.tool_name)

    def _missing(self, name: str) -> ToolExecutionResult | None:
        """A provider's own account of why ``name`` is not there now, if one has one."""
        for provider in self._providers:
            explain = getattr(provider, "missing", None)
            if explain is None:
                continue
            try:
                result = explain(name)
            except Exception:  # a provider's fault leaves the plain answer
                log.exception("tool provider failed to explain a missing tool tool=%s", name)
                continue
            if isinstance(result, ToolExecutionResult):
                return result
        return None

    async def _route(
        self,
        invocation: ToolInvocation,
        context: ToolExecutionContext | None,
        routed: list[ToolSpec],
        trusted: bool,
        listed_all: bool,
        ready_only: bool = False,
        bound_to: ToolSpec | None = None,
    ) -> ToolExecutionResult:
        try:
            name = invocation.tool_name
            context = invocation.execution_context(context)
            availability = context.availability() if context is not None else None
            view = await self._build_view(availability, ready_only=True) if ready_only else None
            view = view or self._cached_view(availability) or await self._view(availability)
            route = view.routes.get(name)
            if bound_to is not None and (route is None or not same_tool(route.spec, bound_to)):
                raise RouteMoved(name)
            if route is None:
                missing = self._missing(name)
                return missing or not_found(name, [spec.name for spec in view.listed()])
            spec = route.spec
            routed.append(spec)
            if (
                not trusted
                and self.enforce_visibility
                and (spec.visibility == "hidden" or (self._gates and not listed_all))
            ):
                refusal = await self._refusal(spec, context, listed_all)
                if refusal is not None:
                    return refusal
            prepared = prepare_arguments(invocation.arguments, spec.parameters_schema)
            if isinstance(prepared, ArgumentErrors):
                return prepared.failure(name)
            values = fill_defaults(prepared.values, spec.parameters_schema)
            call = invocation.in_context(context)
            if not prepared.unchanged or len(values) != len(call.arguments):  # cast or defaulted
                call = call.model_copy(update={"arguments": values})
            provider = route.provider
            log.debug("tool call tool=%s provider=%s", name, provider.provider_name)
        except RouteMoved:
            raise
        except Exception as exc:  # the registry's own promise: only cancellation escapes
            log.exception("tool call failed in the registry tool=%s", invocation.tool_name)
            message = f"Tool {invocation.tool_name} could not be run: {type(exc).__name__}: {exc}"
            return ToolExecutionResult.failure(invocation.tool_name, message, "registry_error")
        try:
            result: object = await provider.invoke(call, context)
        except Exception as exc:
            return provider_failed(call.tool_name, provider.provider_name, exc)
        if not isinstance(result, ToolExecutionResult):
            return provider_returned(call.tool_name, provider.provider_name, result)
        return result

    async def _refusal(
        self, spec: ToolSpec, context: ToolExecutionContext | None, listed_all: bool
    ) -> ToolExecutionResult | None:
        if spec.visibility == "hidden":
            message = (
                f"Tool {spec.name} is hidden: it is not offered to the model and cannot be "
                "called by it. Use one of the tools in your tool list instead."
            )
            return ToolExecutionResult.failure(spec.name, message, "tool_not_visible")
        for gate in () if listed_all else list(self._gates):
            refusal = await gate(spec, context)
            if refusal is not None:
                return refusal
        return None
