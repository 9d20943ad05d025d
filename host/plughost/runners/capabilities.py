"""Capability calls from plugins (``ctx.send.text(...)``) routed to the embedder's handlers.

The embedding application registers a handler per capability (``send.text``)
or per group (``send.*``). Every call is checked against the calling plugin's
manifest first: a capability it does not list is denied, whatever handlers
exist. The host's own answers (``tools.call``, ``llm.*``, ...) are registered as
fallbacks: whatever the embedder registers, exact or ``group.*``, is asked
first, and a fallback only answers what no handler of the embedder's matches.
The plugin id is bound by the runner and checked by the supervisor, so a
plugin cannot call in another plugin's name. A remote runner's plugin is
checked by the same code, against what its manifest asks *and* its
credential grants (:class:`~plughost.remote.member.RemotePlugin`):
the host never takes a remote manifest's word alone.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from plughost.runners.channel import RemoteError
from plughost.tools.client_link import ClientLink
from plughost_sdk import wire

__all__ = ["Caller", "CapabilityCall", "CapabilityHandler", "CapabilityRouter"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CapabilityCall:
    """One capability call as a handler sees it."""

    plugin_id: str
    capability: str
    args: dict[str, Any]
    serving: bool = True
    """Whether the plugin made the call while serving a tool call that is still in flight
    (False for a background task whose call already returned, or one started by on_load)."""
    client: ClientLink | None = None  # the client of the call the plugin is serving, if any


class Caller(Protocol):
    """Who calls: a local plugin's manifest, or a remote plugin within its credential."""

    @property
    def id(self) -> str: ...
    def allows_capability(self, capability: str) -> bool: ...


CapabilityHandler = Callable[[CapabilityCall], Awaitable[Any]]
"""An async function answering a capability call; its return value goes back to the plugin."""


class CapabilityRouter:
    """Holds capability handlers and dispatches plugin calls to them."""

    def __init__(self) -> None:
        self._handlers: dict[str, CapabilityHandler] = {}
        self._fallbacks: dict[str, CapabilityHandler] = {}
        # Names every plugin may call, kept per table: the embedder's handler decides
        # while it is registered, the host's fallback again once it is unregistered.
        self._open_handlers: set[str] = set()
        self._open_fallbacks: set[str] = set()

    def register(
        self,
        name: str,
        handler: CapabilityHandler,
        *,
        needs_manifest: bool = True,
        fallback: bool = False,
    ) -> None:
        """Handle ``name`` (``group.name``, or ``group.*`` for a whole group).

        ``needs_manifest=False`` is for capabilities that only act on the calling
        plugin itself (``api.replace_dynamic``): every plugin may call them.
        ``fallback=True`` is for the host's own answers: they are asked only when
        no other handler matches, exactly or by group.
        """
        if "." not in name:
            raise ValueError(f"capability names look like 'send.text' or 'send.*', got {name!r}")
        (self._fallbacks if fallback else self._handlers)[name] = handler
        open_names = self._open_fallbacks if fallback else self._open_handlers
        if needs_manifest:
            open_names.discard(name)
        else:
            open_names.add(name)

    def unregister(self, name: str) -> None:
        """Stop handling ``name`` (a host fallback of that name, if any, answers again)."""
        self._handlers.pop(name, None)
        self._open_handlers.discard(name)

    def _unlisted(self, capability: str) -> bool:
        """Whether ``capability`` needs no manifest entry, as its current handler says."""
        if capability in self._handlers:
            return capability in self._open_handlers
        return capability in self._open_fallbacks

    def provided(self) -> list[str]:
        """The capability names with a handler."""
        return sorted(self._handlers.keys() | self._fallbacks.keys())

    def handler(self, capability: str) -> CapabilityHandler | None:
        """The handler that answers ``capability``: the embedder's first, then the host's."""
        group = capability.split(".", 1)[0] + ".*"
        for table in (self._handlers, self._fallbacks):
            found = table.get(capability) or table.get(group)
            if found is not None:
                return found
        return None

    async def dispatch(
        self,
        manifest: Caller,
        capability: str,
        args: dict[str, Any],
        *,
        serving: bool = True,
        client: ClientLink | None = None,
        denial: Callable[[str], str] | None = None,
    ) -> Any:
        """Check and run one call; return the wire body ``{"value": ...}``.

        ``client`` is the client behind the call the plugin is serving, when it
        can be asked anything (see :mod:`plughost.tools.client_link`). ``denial``
        words a refusal when the manifest alone does not explain it.

        A handler may raise :class:`RemoteError` to answer with a code of its
        own; any other exception it raises becomes ``capability_failed``.

        Raises:
            RemoteError: ``capability_denied``, ``capability_not_provided`` or
                ``capability_failed``, with a message for the plugin author.
        """
        plugin_id = manifest.id
        if not self._unlisted(capability) and not manifest.allows_capability(capability):
            message = (
                denial(capability)
                if denial is not None
                else f"plugin {plugin_id} may not call {capability}: add {capability!r} to "
                "'capabilities' in its _manifest.json"
            )
            raise RemoteError(wire.error_body("capability_denied", message))
        handler = self.handler(capability)
        if handler is None:
            raise RemoteError(
                wire.error_body(
                    "capability_not_provided",
                    f"capability {capability} is not provided by this host",
                )
            )
        try:
            value = await handler(CapabilityCall(plugin_id, capability, args, serving, client))
        except RemoteError:
            raise  # a handler refusing with its own code (a built-in such as tools.call)
        except Exception as exc:
            log.exception("capability %s failed for plugin %s", capability, plugin_id)
            raise RemoteError(
                wire.error_body(
                    "capability_failed",
                    f"capability {capability} failed: {type(exc).__name__}: {exc}",
                )
            ) from None
        return {"value": value}
