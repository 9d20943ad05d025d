"""The registry's merged view of every provider's tools, and the cache that shares it.

A view maps each model-facing name to the provider that runs it and the spec it
runs. Building one lists every provider, so it costs as much as the tool set is
large; :class:`ViewCache` keeps the views of the most recent (version,
availability context) keys and, while one is being built, hands the same build
to every caller that asks for that key meanwhile: fifty first calls that arrive
together (a host that has just started) list the providers once, not fifty
times.

What does not live here: the rules that decide which spec takes a name
(:mod:`plughost.tools.registry`, :mod:`plughost.tools.reserved`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from plughost.tools.provider import ToolProvider
from plughost_sdk.models import ToolAvailabilityContext, ToolSpec

log = logging.getLogger(__name__)

__all__ = [
    "Builder",
    "Route",
    "RouteMoved",
    "Version",
    "View",
    "ViewCache",
    "ViewKey",
    "list_safely",
    "same_tool",
    "stamped",
]

ViewKey = tuple[int, ToolAvailabilityContext | None]
"""The registry's version and the availability context a view was built for."""

Builder = Callable[[], Awaitable["View"]]
"""Lists every provider and merges their tools."""

Version = Callable[[], int]
"""The registry's version now."""


@dataclass(frozen=True, slots=True)
class Route:
    """Where a call of one name goes: the provider, and the spec it runs."""

    provider: ToolProvider
    spec: ToolSpec


class RouteMoved(Exception):
    """A call bound to one tool found its name leading to another (or to none): nothing ran.

    Raised only to a caller that bound the call (``ToolRegistry.invoke(bound_to=...)``),
    so it can wait and route again; a tool's own failure is never mistaken for it.
    """


def same_tool(routed: ToolSpec, bound: ToolSpec) -> bool:
    """Whether ``routed`` is the very tool ``bound`` names, not another that took its name."""
    return routed.tool_id == bound.tool_id and routed.provider_name == bound.provider_name


@dataclass(slots=True)
class View:
    """The merged tools of every provider in one availability context.

    ``complete`` is False when a provider failed to list: such a view serves the
    callers that shared its build, and is never kept, so the next call lists again.
    """

    routes: dict[str, Route] = field(default_factory=dict)
    complete: bool = True

    def listed(self) -> list[ToolSpec]:
        return [r.spec for r in self.routes.values() if r.spec.visibility != "hidden"]


class ViewCache:
    """The views of the ``size`` most recent keys, and the builds under way."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._views: OrderedDict[ViewKey, View] = OrderedDict()
        # A build under way, per key; its future ends with the view, or None when the
        # builder gave up (cancelled or raised), so each waiter builds for itself.
        self._building: dict[ViewKey, asyncio.Future[View | None]] = {}
        # The key last found and its view, matched by the context's identity: a caller that
        # passes the same context object at every call (an MCP client's calls all run in one)
        # skips hashing and comparing the context, a pydantic model, each time.
        self._last: tuple[int, ToolAvailabilityContext | None, View] | None = None

    def cached(self, key: ViewKey) -> View | None:
        """The view kept for ``key``, if any: found without awaiting."""
        last = self._last
        if last is not None and last[1] is key[1] and last[0] == key[0]:
            return last[2]
        view = self._views.get(key)
        if view is not None:
            self._views.move_to_end(key)
            self._last = (key[0], key[1], view)
        return view

    def clear(self) -> None:
        """Forget every kept view (the tool set changed); builds under way carry on."""
        self._views.clear()
        self._last = None

    async def get(self, key: ViewKey, build: Builder, current: Version) -> View:
        """The view for ``key``: kept, shared with a build under way, or built now.

        Args:
            key: The version the caller saw and its availability context.
            build: Lists every provider and merges their tools.
            current: The registry's version now: a view built for an older one
                is returned to its callers but not kept.
        """
        while True:
            view = self.cached(key)
            if view is not None:
                return view
            pending = self._building.get(key)
            if pending is None:
                break
            # shield: a waiter that is cancelled must not cancel the build it shares.
            shared = await asyncio.shield(pending)
            if shared is not None:
                return shared
        return await self._build(key, build, current)

    async def _build(self, key: ViewKey, build: Builder, current: Version) -> View:
        done: asyncio.Future[View | None] = asyncio.get_running_loop().create_future()
        self._building[key] = done
        view: View | None = None
        try:
            view = await build()
        finally:
            if self._building.get(key) is done:
                del self._building[key]
            done.set_result(view)
        if view.complete and key[0] == current():
            self._views[key] = view
            while len(self._views) > self._size:
                self._views.popitem(last=False)
        return view


async def list_safely(
    provider: ToolProvider, context: ToolAvailabilityContext | None, ready_only: bool = False
) -> list[ToolSpec] | None:
    """``provider``'s tools (with ``ready_only``, those it can run now); None if it failed."""
    ready = getattr(provider, "list_ready_tools", None) if ready_only else None
    try:
        return list(await (ready or provider.list_tools)(context))
    except Exception:
        log.exception("tool provider failed to list tools provider=%s", provider.provider_name)
        return None


def stamped(spec: ToolSpec, provider: ToolProvider) -> ToolSpec:
    """Fill in the provider fields a provider left empty, so warnings can name them."""
    update: dict[str, Any] = {}
    if not spec.provider_name:
        update["provider_name"] = provider.provider_name
    if not spec.provider_type:
        update["provider_type"] = provider.provider_type
    if not spec.tool_id:
        update["tool_id"] = f"{provider.provider_type}:{provider.provider_name}:{spec.name}"
    return spec.model_copy(update=update) if update else spec
