"""Plugin APIs: found by name and version, called by the embedder or by plugins under grants.

A plugin offers an API with ``@API(name, version="1", public=False)``. It is
named ``plugin_id.name`` or, when no other visible API shares it, ``name``; a
caller may add ``@version`` or pass ``version``. A plugin that calls a name
one of its own APIs has (enabled, disabled or offline) reaches only its own:
another plugin's API of the same name never takes its calls, nor makes them
ambiguous. Otherwise, when several visible APIs match, the call is refused as
ambiguous, naming them.

The capabilities ``api.call``, ``api.get`` and ``api.list`` (what MaiBot's
``ctx.api.call/get/list`` send, with its argument names: ``api_name``,
``version``, ``args``, ``plugin_id``) answer in MaiBot's host shape, so its
SDK's unwrapping gives the plugin the bare value: ``{"success": True,
"result": value}``, ``{"success": True, "api": {...}}``, ``{"success": True,
"apis": [...]}``, or ``{"success": False, "error": "..."}``.

Who may call what, checked in this order:

1. **Manifest.** The caller's ``_manifest.json`` lists ``api.call`` (or ``api.*``);
   the capability router checks this before anything here runs.
2. **Grant.** A plugin may always call its own APIs. Another plugin's API needs
   a grant under ``[host.api_grants]`` (patterns as for tool grants, over
   ``plugin_id.api_name``): ``"acme.digest" = ["acme.render.*"]``. Without one
   the call is refused with ``capability_denied`` and the line to add; the
   refusal reads the same whether or not such an API exists.
3. **Public.** A granted call still reaches only an API declared ``public=True``.

The embedder (:meth:`ApiDirectory.call` with no caller) may call any enabled API.

A plugin may also publish APIs while it runs (MaiBot's ``register_dynamic_api``
then ``sync_dynamic_apis``, which sends ``api.replace_dynamic`` with ``apis`` and
``offline_reason``; every plugin may send it, as it only changes the plugin's
own APIs). The new set replaces the plugin's dynamic APIs in the registry; one
that is dropped stays known as offline, and calling it fails with the
``offline_reason`` the plugin gave. A dynamic API cannot replace a declared one,
and what a plugin publishes is bounded (:mod:`plughost.dispatch.dynamic_apis`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from plughost.dispatch.calls import ComponentCaller
from plughost.dispatch.dynamic_apis import next_dynamic_set
from plughost.plugins.component_info import PluginComponent
from plughost.plugins.components import ComponentRegistry
from plughost.plugins.grants import granted_by
from plughost.runners.capabilities import CapabilityCall
from plughost.runners.channel import RemoteError
from plughost.settings import HostSettings
from plughost_sdk import wire

__all__ = ["API_CAPABILITIES", "REPLACE_DYNAMIC", "ApiDirectory", "ApiOutcome", "api_arguments"]

log = logging.getLogger(__name__)

API_CAPABILITIES = ("api.call", "api.get", "api.list")
"""The capability names a plugin's manifest lists to use ``ctx.api``."""

REPLACE_DYNAMIC = "api.replace_dynamic"
"""The capability that publishes a plugin's dynamic APIs; no manifest entry needed."""


@dataclass(frozen=True, slots=True)
class ApiOutcome:
    """What calling one API gave.

    Attributes:
        success: The API ran and returned.
        result: Its return value.
        api: The API that answered, ``plugin_id.name``; None when none was found.
        error: Why it failed, or ``""``.
        error_code: ``api_not_found``, ``ambiguous``, ``not_public``, ``timeout``,
            ``handler_failed``...; None on success.
    """

    success: bool
    result: Any = None
    api: str | None = None
    error: str = ""
    error_code: str | None = None

    def to_host_shape(self) -> dict[str, Any]:
        """MaiBot's host reply shape: ``{"success": True, "result": v}`` or an ``error``."""
        if self.success:
            return {"success": True, "result": self.result}
        return {"success": False, "error": self.error}


class ApiDirectory:
    """Finds and calls plugin APIs; also answers the ``api.*`` capabilities."""

    def __init__(
        self,
        registry: ComponentRegistry,
        caller: ComponentCaller,
        settings: Callable[[], HostSettings],
    ) -> None:
        """Serve the APIs in ``registry`` under the grants of ``settings()``, read at every call."""
        self._registry = registry
        self._caller = caller
        self._settings = settings

    def visible(self, caller: str | None) -> list[PluginComponent]:
        """Enabled APIs ``caller`` may see: its own and the public ones (all, for the embedder)."""
        return [
            c
            for c in self._registry.components("API")
            if self._registry.component_enabled(c)
            and (caller is None or c.plugin_id == caller or c.public)
        ]

    def resolve(
        self, caller: str | None, api_name: str, version: str = ""
    ) -> tuple[PluginComponent | None, ApiOutcome | None]:
        """The one API ``api_name`` (``plugin_id.name``, ``name``, ``name@version``) names.

        Returns ``(api, None)``, or ``(None, failure)`` saying why not.
        """
        name, version = _split_version(api_name.strip(), version.strip())
        if not name:
            return None, _fail("api.call needs 'api_name'", "bad_arguments")
        named = self._named(caller, name, version)
        matches = [c for c in named if self._registry.component_enabled(c)]
        exact = [c for c in matches if c.full_name == name]
        matches = exact or matches
        shown = [c for c in matches if caller is None or c.plugin_id == caller or c.public]
        if len(shown) == 1:
            return shown[0], None
        label = f"{name}@{version}" if version else name
        if len(shown) > 1:
            found = ", ".join(f"{c.full_name}@{c.version}" for c in shown)
            message = (
                f"API {label} is ambiguous ({found}); name it as plugin_id.name or give a version"
            )
            return None, _fail(message, "ambiguous")
        if matches:
            return None, _fail(
                f"API {label} is not public; only its own plugin may call it", "not_public"
            )
        offline = [
            c
            for c in named
            if c.metadata.get("offline_reason")
            and (caller is None or c.plugin_id == caller or c.public)
        ]
        if offline:
            return None, _fail(str(offline[0].metadata["offline_reason"]), "api_offline")
        return None, _fail(f"no API {label} is loaded", "api_not_found")

    def _named(self, caller: str | None, name: str, version: str) -> list[PluginComponent]:
        """The APIs ``name`` may mean, enabled or not: only the caller's own, if it has one.

        A short name the caller's own APIs use (in any version) is theirs alone, so a
        neighbour's API of that name never receives the caller's arguments.
        """
        named = [c for c in self._registry.components("API") if name in (c.full_name, c.name)]
        if caller is not None and not any(c.full_name == name for c in named):
            named = [c for c in named if c.plugin_id == caller] or named
        return [c for c in named if not version or c.version == version]

    async def call(
        self,
        caller: str | None,
        api_name: str,
        args: dict[str, Any],
        *,
        version: str = "",
        timeout: float,
    ) -> ApiOutcome:
        """Call an API by name for ``caller`` (None: the embedder); never raises."""
        api, failure = self.resolve(caller, api_name, version)
        if api is None:
            return failure or _fail("API lookup failed", "api_not_found")
        own = api.timeout_ms / 1000 if api.timeout_ms > 0 else timeout
        reply = await self._caller.call(api, dict(args), min(own, timeout))
        if reply.get("error_code") is not None or not reply.get("success", False):
            error = str(reply.get("error") or "the API failed")
            code = str(reply.get("error_code") or "handler_failed")
            return ApiOutcome(False, api=api.full_name, error=error, error_code=code)
        return ApiOutcome(True, result=reply.get("result"), api=api.full_name)

    async def __call__(self, call: CapabilityCall) -> Any:
        """Answer ``api.call``, ``api.get`` or ``api.list`` for a plugin.

        Raises:
            RemoteError: ``capability_denied`` for a call the operator did not grant.
        """
        args = call.args
        if call.capability == REPLACE_DYNAMIC:
            return self.replace_dynamic(
                call.plugin_id, args.get("apis"), args.get("offline_reason")
            )
        if call.capability == "api.list":
            wanted = str(args.get("plugin_id") or "")
            apis = [
                _describe(c)
                for c in self.visible(call.plugin_id)
                if not wanted or c.plugin_id == wanted
            ]
            return {"success": True, "apis": apis}
        api_name, version = str(args.get("api_name") or ""), str(args.get("version") or "")
        if call.capability == "api.get":
            api, _ = self.resolve(call.plugin_id, api_name, version)
            return {"success": True, "api": _describe(api) if api is not None else None}
        self._check_grant(call.plugin_id, api_name, version)
        payload = args.get("args") if args.get("args") is not None else {}
        if not isinstance(payload, dict):
            return {"success": False, "error": "api.call 'args' must be a dict"}
        timeout = self._settings().call_timeout
        outcome = await self.call(
            call.plugin_id, api_name, payload, version=version, timeout=timeout
        )
        return outcome.to_host_shape()

    def replace_dynamic(self, plugin_id: str, apis: Any, offline_reason: Any) -> dict[str, Any]:
        """Make ``apis`` the plugin's dynamic APIs; dropped ones go offline with the reason."""
        mine = [c for c in self._registry.components_of(plugin_id) if c.kind == "API"]
        outcome = next_dynamic_set(plugin_id, mine, apis, offline_reason)
        if isinstance(outcome, str):
            log.warning("api.replace_dynamic refused plugin=%s: %s", plugin_id, outcome)
            return {"success": False, "error": outcome}
        components, offlined = outcome
        count = len(components) - offlined
        try:
            self._registry.replace_dynamic(plugin_id, components)
        except KeyError:  # still loading: the load report will carry the plugin's APIs
            return {"success": True, "count": count, "offlined": 0}
        except ValueError as exc:
            return {"success": False, "error": str(exc)}
        return {"success": True, "count": count, "offlined": offlined}

    def _check_grant(self, caller: str, api_name: str, version: str) -> None:
        api, _ = self.resolve(caller, api_name, version)
        if api is not None and api.plugin_id == caller:
            return
        names = [api_name.split("@", 1)[0]]
        own, _ = self.resolve(None, api_name, version)
        if own is not None:
            names.append(own.full_name)
        patterns = self._settings().api_grants.get(caller, ())
        if granted_by(patterns, names) is not None:
            return
        log.warning("api call denied caller=%s api=%s", caller, api_name)
        hint = f"{json.dumps(caller)} = [{json.dumps(api_name)}]"
        raise RemoteError(
            wire.error_body(
                "capability_denied",
                f"plugin {caller} may not call API {api_name}: it is not one of its own APIs "
                "and the operator has not granted it. To allow it, add this line under "
                f"[host.api_grants] in the host's configuration: {hint}",
            )
        )


def api_arguments(args: Mapping[str, Any] | None, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """One API call's arguments: the ``args`` mapping and the keyword arguments together.

    Raises:
        TypeError: ``args`` is not a mapping with string keys, or both give one argument.
    """
    if args is None:
        return dict(kwargs)
    if not isinstance(args, Mapping) or not all(isinstance(k, str) for k in args):
        raise TypeError(
            f"call_api's args must be a mapping of argument names to values, got {args!r}"
        )
    both = sorted(set(args) & set(kwargs))
    if both:
        raise TypeError(
            f"call_api got {', '.join(map(repr, both))} both in args and as a keyword; "
            "give each argument once"
        )
    return {**args, **kwargs}


def _split_version(name: str, version: str) -> tuple[str, str]:
    if not version and "@" in name:
        base, _, tail = name.rpartition("@")
        if base and tail:
            return base, tail
    return name, version


def _fail(message: str, code: str) -> ApiOutcome:
    return ApiOutcome(False, error=message, error_code=code)


def _describe(api: PluginComponent) -> dict[str, Any]:
    return {
        "name": api.name,
        "full_name": api.full_name,
        "plugin_id": api.plugin_id,
        "description": api.description,
        "version": api.version,
        "public": api.public,
        "enabled": True,
        "metadata": dict(api.metadata),
    }
