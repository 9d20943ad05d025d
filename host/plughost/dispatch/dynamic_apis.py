"""The APIs a plugin publishes while it runs, and the bounds on them.

``api.replace_dynamic`` needs no manifest entry, so any plugin may send it, as
often as it likes, with whatever it likes in it. What it sends lands in the
host's component registry, outside any sandbox, and every ``api.call`` of every
plugin searches it; so the host keeps a bounded amount per plugin:

- at most :data:`MAX_DYNAMIC_APIS` APIs in one set (a longer set is refused
  whole, and the previous set stays);
- a name of at most :data:`MAX_API_NAME` printable characters, without spaces
  or ``@`` (which separates a version: ``name@2``), a version of at most
  :data:`MAX_API_VERSION`;
- metadata (the description included) of at most :data:`MAX_API_METADATA`
  bytes as JSON;
- of the APIs a set drops (kept offline, so that a call says why it failed),
  the :data:`MAX_OFFLINE_APIS` most recently dropped, each with its reason cut
  to :data:`MAX_OFFLINE_REASON` characters and no other metadata.

Every refusal is the ``{"success": False, "error": ...}`` answer the plugin
gets, naming the plugin, the limit and what to do.

What does not live here: finding and calling APIs (:mod:`plughost.dispatch.apis`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from plughost.plugins.component_info import PluginComponent

__all__ = [
    "MAX_API_METADATA",
    "MAX_API_NAME",
    "MAX_API_VERSION",
    "MAX_DYNAMIC_APIS",
    "MAX_OFFLINE_APIS",
    "MAX_OFFLINE_REASON",
    "next_dynamic_set",
]

MAX_DYNAMIC_APIS: Final = 256
"""Dynamic APIs one plugin publishes at once."""
MAX_OFFLINE_APIS: Final = 256
"""Dropped dynamic APIs one plugin's callers are still told about."""
MAX_API_NAME: Final = 128
"""Characters of a dynamic API's name."""
MAX_API_VERSION: Final = 32
"""Characters of a dynamic API's version."""
MAX_API_METADATA: Final = 16 * 1024
"""Bytes of one dynamic API's metadata, as JSON (its description included)."""
MAX_OFFLINE_REASON: Final = 500
"""Characters of the reason a dropped API's callers are given."""

_DEFAULT_REASON = "the dynamic API went offline"


def next_dynamic_set(
    plugin_id: str, mine: Sequence[PluginComponent], apis: Any, offline_reason: Any
) -> tuple[list[PluginComponent], int] | str:
    """The plugin's dynamic APIs after ``api.replace_dynamic``, or why the set is refused.

    Args:
        plugin_id: The plugin that sent it.
        mine: The plugin's API components now (declared and dynamic).
        apis: The new set, as sent.
        offline_reason: What callers of a dropped API are told, as sent.

    Returns:
        ``(components, offline)``: the new set followed by the offline ones
        kept, and how many are offline; or the refusal's message.
    """
    if not isinstance(apis, list):
        return "api.replace_dynamic needs 'apis', a list"
    if len(apis) > MAX_DYNAMIC_APIS:
        return (
            f"plugin {plugin_id} publishes {len(apis):,} dynamic APIs, over the limit of "
            f"{MAX_DYNAMIC_APIS} per plugin; publish fewer (one API can take a parameter that "
            "chooses what it does). The previous set stays"
        )
    declared = {(c.name, c.version) for c in mine if not c.metadata.get("dynamic")}
    new: list[PluginComponent] = []
    for index, entry in enumerate(apis):
        api = _dynamic_api(plugin_id, index, entry)
        if isinstance(api, str):
            return api
        if (api.name, api.version) in declared:
            return f"dynamic API {api.name}@{api.version} would replace a declared @API"
        new.append(api)
    reason = _reason(offline_reason)
    names = {api.name for api in new}
    # Newly dropped ones come first in ``mine`` (after the set that had them), so the
    # cut forgets the oldest.
    dropped = [c for c in mine if c.metadata.get("dynamic") and c.name not in names]
    offline = [_offline(c, reason) for c in dropped[:MAX_OFFLINE_APIS]]
    return [*new, *offline], len(offline)


def _dynamic_api(plugin_id: str, index: int, entry: Any) -> PluginComponent | str:
    """A dynamic API from an ``api.replace_dynamic`` entry, or why it is not one."""
    if not isinstance(entry, dict):
        return f"apis[{index}] must be a dict"
    name = str(entry.get("name") or "").strip()
    kind = str(entry.get("component_type", entry.get("type", "API")) or "").strip().upper()
    if not name:
        return f"apis[{index}] needs a name"
    problem = _name_problem(plugin_id, name)
    if problem:
        return f"apis[{index}]: {problem}"
    if kind != "API":
        return f"apis[{index}] is a {kind[:40]}, not an API"
    raw = entry.get("metadata")
    metadata = dict(raw) if isinstance(raw, dict) else {}
    version = str(metadata.get("version") or "1").strip() or "1"
    if len(version) > MAX_API_VERSION or not version.isprintable():
        limit = f"a version is at most {MAX_API_VERSION} printable characters"
        return f"apis[{index}] ({name}): {limit}"
    metadata.update(dynamic=True, version=version)
    metadata.pop("offline_reason", None)
    size = _json_size(metadata)
    if size is None or size > MAX_API_METADATA:
        shown = "cannot be measured" if size is None else f"is {size:,} bytes of JSON"
        return (
            f"apis[{index}] ({name}): its metadata {shown}, over the limit of "
            f"{MAX_API_METADATA:,} per API in plugin {plugin_id}; shorten the description"
        )
    return PluginComponent(plugin_id, name, "API", metadata)


def _name_problem(plugin_id: str, name: str) -> str:
    if len(name) > MAX_API_NAME:
        return (
            f"a name of {len(name):,} characters is over the limit of {MAX_API_NAME} for "
            f"plugin {plugin_id}'s dynamic APIs; use a shorter name"
        )
    if not name.isprintable() or any(char.isspace() or char == "@" for char in name):
        return (
            f"the name {name!r} of plugin {plugin_id}'s dynamic API may not hold spaces, "
            "control characters or '@' (which separates a version); use another name"
        )
    return ""


def _json_size(metadata: dict[str, Any]) -> int | None:
    try:
        return len(json.dumps(metadata, default=str).encode())
    except (TypeError, ValueError, RecursionError):
        return None


def _reason(offline_reason: Any) -> str:
    reason = str(offline_reason or "").strip() or _DEFAULT_REASON
    return reason[:MAX_OFFLINE_REASON]


def _offline(api: PluginComponent, reason: str) -> PluginComponent:
    """The API switched off, remembering only why (a second drop keeps the first reason)."""
    why = str(api.metadata.get("offline_reason") or reason)
    metadata = {
        "dynamic": True,
        "version": api.version,
        "public": api.public,
        "enabled": False,
        "offline_reason": why,
    }
    return PluginComponent(api.plugin_id, api.name, "API", metadata)
