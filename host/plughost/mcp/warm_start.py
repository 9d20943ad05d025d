"""WarmStart: a registry served over MCP before it is live, from the catalogue of its last list.

``plughost serve`` hands its MCP server a :class:`WarmStart` in place of the
registry, and starts serving before the runners and upstream connections are
up. Until :meth:`WarmStart.go_live`:

- ``tools/list`` answers the catalogue's tools (:mod:`plughost.mcp.catalogue`:
  only those whose plugin or server is unchanged); with no catalogue (a cold
  start) it waits for the live list;
- ``tools/call`` of a tool the catalogue lists runs as soon as its own source
  is up, over what is ready then (an upstream's tool once that upstream has
  connected, whatever the others are doing; a plugin's once its runner loaded
  it), and only if the registry routes the name to the very tool the catalogue
  listed; an upstream that fails to connect fails the call at once with
  ``server_unavailable`` and the reason. A name the catalogue does not list
  runs once the whole registry can route it. Either waits at most
  ``call_timeout`` seconds, past which it fails with ``timeout`` saying the
  host is still starting. With ``hold_calls`` (``--strict``, which may yet
  refuse to serve) no call runs before the host is live;
- resources, prompts, completions and subscriptions wait for the host to be
  live (:mod:`plughost.mcp.warm_content`).

:meth:`WarmStart.go_live` lists the live registry, saves it as the next
catalogue and, when it differs from what was served, tells every client the
tools changed. After that every request goes straight to the registry, and
:meth:`WarmStart.keep_saved` saves the catalogue again after each change of
the registry (a plugin reloaded, an upstream's ``list_changed``). An upstream
that changed its list while serving is dynamic: its list at the next start is
unknown, so from then on the file no longer vouches for it and that start is
cold. So is one that was not connected when the list was saved (it failed to
connect): the list lacks its tools.

What does not live here: the file (:mod:`plughost.mcp.catalogue`), and what
goes into a source's fingerprint (:mod:`plughost.cli.serve_catalogue`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, cast

from plughost.mcp.catalogue import ToolCatalogue
from plughost.mcp.registry_server import ToolSource
from plughost.mcp.status import ServerState
from plughost.mcp.warm_content import AfterStart
from plughost.tools.provider import ChangeListener, ToolProvider
from plughost.tools.resources import ContentCatalog
from plughost.tools.views import RouteMoved, same_tool
from plughost_sdk.models import (
    ToolExecutionContext,
    ToolExecutionResult,
    ToolInvocation,
    ToolSpec,
)

if TYPE_CHECKING:
    from plughost.tools.registry import ToolRegistry

__all__ = ["WarmStart"]

log = logging.getLogger(__name__)

_CHANGED = "plughost"
"""The provider name listeners hear when the live list replaces the catalogue's."""


class WarmStart:
    """A :class:`ToolSource` that serves the catalogue until the registry is live.

    Args:
        registry: The registry being started.
        catalogue: Where the last list is kept.
        fingerprints: Computes the current fingerprint of each tool source, by key.
            It reads and hashes every plugin folder, so it only ever runs in a
            worker thread: once in :meth:`load`, then before each save.
        call_timeout: Seconds a call made during start-up waits for the host.
        hold_calls: Run no call before :meth:`go_live`, even one whose source is
            up (``plughost serve --strict``, which may yet refuse to serve).

    Until :meth:`load` has read the catalogue, the start is cold.
    """

    def __init__(
        self,
        registry: ToolSource,
        catalogue: ToolCatalogue,
        fingerprints: Callable[[], Mapping[str, str]],
        *,
        call_timeout: float,
        hold_calls: bool = False,
    ) -> None:
        self.registry = registry
        self.hold_calls = hold_calls
        self.catalogue = catalogue
        self.fingerprints = fingerprints
        self.call_timeout = call_timeout
        self.cached: list[ToolSpec] | None = None
        self.live = asyncio.Event()
        self._served_cached = False
        self._listeners: dict[ChangeListener, ChangeListener] = {}
        self._changed = asyncio.Event()
        self._after_start = AfterStart(ContentCatalog(registry), self.live)
        self._upstream = False  # an upstream's list changed since go_live
        self._listed: dict[str, ToolSpec] = {}
        self._waiting: set[asyncio.Event] = set()  # calls waiting for their source
        registry.add_listener(self._wake)

    # --- ToolSource ------------------------------------------------------------------------

    async def list_tools(self) -> list[ToolSpec]:
        """The catalogue's tools while starting (if there are any), else the registry's."""
        if not self.live.is_set() and self.cached is not None:
            self._served_cached = True
            return list(self.cached)
        await self.live.wait()
        return await self.registry.list_tools()

    async def invoke(
        self,
        invocation: ToolInvocation,
        context: ToolExecutionContext | None = None,
        *,
        listed_all: bool = False,
    ) -> ToolExecutionResult:
        """Run the call on the registry, once the source of its tool is up."""
        if not self.live.is_set():
            deadline = asyncio.get_running_loop().time() + self.call_timeout
            try:
                async with asyncio.timeout_at(deadline):
                    ready = await self._source_up(invocation, context)
            except TimeoutError:
                return self._still_starting(invocation.tool_name)
            if isinstance(ready, ToolExecutionResult):
                return ready
            if ready:
                registry = cast("ToolRegistry", self.registry)
                try:
                    return await registry.invoke(
                        invocation,
                        context,
                        listed_all=listed_all,
                        ready_only=True,
                        bound_to=self._listed[invocation.tool_name],
                    )
                except RouteMoved:  # another tool took the name since the check: nothing ran
                    try:
                        async with asyncio.timeout_at(deadline):
                            await self.live.wait()
                    except TimeoutError:
                        return self._still_starting(invocation.tool_name)
        return await self.registry.invoke(invocation, context, listed_all=listed_all)

    def _still_starting(self, name: str) -> ToolExecutionResult:
        message = (
            f"plughost is still starting after {self.call_timeout:g} s, so "
            f"{name} could not run yet; try again shortly"
        )
        return ToolExecutionResult.failure(name, message, "timeout")

    async def _source_up(
        self, invocation: ToolInvocation, context: ToolExecutionContext | None
    ) -> bool | ToolExecutionResult:
        """Wait until the call can run, and say how.

        Returns:
            True to run it now over what is ready, False to run it on the whole
            registry, or the failure it gets (its upstream could not connect).
        """
        name = invocation.tool_name
        listed = self._listed.get(name)
        ready_spec = getattr(self.registry, "get_tool_spec", None)
        if self.hold_calls:
            await self.live.wait()
            return False
        if listed is None or ready_spec is None:
            if not await self._routable(name):
                await self.live.wait()
            return False
        merged = invocation.execution_context(context)
        availability = merged.availability() if merged is not None else None
        woken = asyncio.Event()
        self._waiting.add(woken)
        try:
            reached = False
            while not self.live.is_set():
                woken.clear()
                routed = await ready_spec(name, availability, ready_only=True)
                if routed is not None and same_tool(routed, listed):
                    return True
                if not reached:  # an upstream connects without telling the registry
                    reached = True
                    failure = await self._reach(listed)
                    if failure is not None:
                        return failure
                    continue
                await woken.wait()  # a plugin loaded, an upstream came, or the host is live
            return False
        finally:
            self._waiting.discard(woken)

    async def _reach(self, listed: ToolSpec) -> ToolExecutionResult | None:
        """Wait for the upstream of an MCP tool to connect; its failure if it cannot."""
        server = listed.metadata.get("server")
        if listed.provider_type != "mcp" or not isinstance(server, str):
            return None
        for provider in self.registry.providers:
            reach = getattr(provider, "reach", None)
            if provider.provider_name == listed.provider_name and reach is not None:
                failure: ToolExecutionResult | None = await reach(server, listed.name)
                return failure
        return None

    def _wake(self, provider_name: str) -> None:
        for woken in self._waiting:
            woken.set()

    async def _routable(self, name: str) -> bool:
        """Whether the registry, still starting, can already route ``name``.

        An upstream's tools are there once it connected, a plugin's once its
        runner loaded it; nothing else can answer to their names meanwhile
        (plughost keeps upstream names from plugins).
        """
        has_tool = getattr(self.registry, "has_tool", None)
        if has_tool is None:
            return False
        try:
            return bool(await asyncio.wait_for(has_tool(name), self.call_timeout))
        except Exception:  # the live registry answers the call instead
            log.debug("tool not routable while starting tool=%s", name, exc_info=True)
            return False

    def add_listener(self, listener: ChangeListener) -> None:
        """Tell ``listener`` of changes once live; before, :meth:`go_live` says what changed."""

        def when_live(provider_name: str) -> None:
            # The registry changes as the host starts (runners loading, upstreams
            # connecting); a client has not seen that list yet, so it is no change to it.
            if self.live.is_set():
                listener(provider_name)

        self._listeners[listener] = when_live
        self.registry.add_listener(when_live)

    def remove_listener(self, listener: ChangeListener) -> None:
        gated = self._listeners.pop(listener, None)
        if gated is not None:
            self.registry.remove_listener(gated)

    @property
    def providers(self) -> tuple[ToolProvider, ...]:
        """The registry's providers once live; before, one that waits for them.

        Only the MCP server's resource, prompt and subscription handlers read
        this, and :class:`AfterStart` has every method they call.
        """
        if self.live.is_set():
            return self.registry.providers
        return (cast("ToolProvider", self._after_start),)

    def add_resource_listener(self, listener: Callable[[str], None]) -> None:
        self.registry.add_resource_listener(listener)

    def remove_resource_listener(self, listener: Callable[[str], None]) -> None:
        self.registry.remove_resource_listener(listener)

    # --- start-up --------------------------------------------------------------------------

    async def load(self) -> None:
        """Read the catalogue's tools still true of the sources now (none: a cold start).

        In a worker thread: digesting the plugin folders may read gigabytes, and the
        loop meanwhile answers signals and whatever else has started.
        """
        self.cached = await asyncio.to_thread(lambda: self.catalogue.load(self.fingerprints()))
        self._listed = {spec.name: spec for spec in self.cached or ()}

    async def go_live(self) -> None:
        """Switch to the live registry: save its list, and announce it if it differs."""
        specs = await self.registry.list_tools()
        self.registry.add_listener(self._note_change)
        self.live.set()
        self.registry.remove_listener(self._wake)
        self._wake("")
        await self._save(specs)
        if self._served_cached and _differs(self.cached or [], specs):
            log.info("live tool list differs from the catalogue; telling clients")
            for listener in list(self._listeners):
                try:
                    listener(_CHANGED)
                except Exception:
                    log.exception("tool change listener failed")
        self.cached = None

    async def keep_saved(self) -> None:
        """Save the catalogue after each change since :meth:`go_live`, until cancelled."""
        try:
            while True:
                await self._changed.wait()
                self._changed.clear()
                try:
                    await self._save(await self.registry.list_tools(), dynamic=self._upstream)
                except Exception:  # the next change tries again; serving goes on
                    log.exception("tool catalogue not saved after a change")
        finally:
            self.registry.remove_listener(self._note_change)

    async def _save(self, specs: list[ToolSpec], *, dynamic: bool = False) -> None:
        # Taken after the listing, so a tool is never saved under the digest of files
        # older than the ones it was listed from.
        fingerprints = dict(await asyncio.to_thread(self.fingerprints))
        if dynamic:
            # An upstream whose list changed while serving may differ again at the next
            # start whatever its configuration: without its fingerprint, that start is cold.
            fingerprints = {k: v for k, v in fingerprints.items() if not k.startswith("mcp:")}
        # An upstream that is not connected listed nothing: a catalogue without its
        # tools would be a partial list, so without its fingerprint the next start is cold.
        unlisted = self._unlisted_upstreams()
        fingerprints = {k: v for k, v in fingerprints.items() if k not in unlisted}
        await asyncio.to_thread(self.catalogue.save, specs, fingerprints)

    def _unlisted_upstreams(self) -> set[str]:
        """The catalogue keys (``mcp:NAME``) of the upstreams whose tools are not listed now."""
        unlisted: set[str] = set()
        for provider in self.registry.providers:
            status = getattr(provider, "status", None)
            if provider.provider_type == "mcp" and callable(status):
                for name, server in status().items():
                    if server.state not in (ServerState.CONNECTED, ServerState.DISCONNECTED):
                        unlisted.add(f"mcp:{name}")
        return unlisted

    def _note_change(self, provider_name: str) -> None:
        if any(
            p.provider_name == provider_name and p.provider_type == "mcp"
            for p in self.registry.providers
        ):
            self._upstream = True
        self._changed.set()


def _differs(served: list[ToolSpec], live: list[ToolSpec]) -> bool:
    """Whether a client that listed ``served`` would see something else in ``live``."""
    if len(served) != len(live):
        return True
    return any(_shown(a) != _shown(b) for a, b in zip(served, live, strict=True))


def _shown(spec: ToolSpec) -> object:
    tool = spec.mcp_tool
    own = tool.model_dump(mode="json") if hasattr(tool, "model_dump") else None
    return (spec.model_dump(mode="json"), own)
