"""Tool grants: which tools, besides its own, a plugin may call through ``ctx.call_tool``.

The operator writes one line per calling plugin under ``[host.tool_grants]``::

    [host.tool_grants]
    "acme.digest" = ["acme.search.*", "mcp:docs:*", "tool_search"]

A plugin may always call its own tools. Any other tool (another plugin's, a
built-in, an MCP server's) is allowed only when one of the caller's patterns
matches one of the names the tool is known by:

- its model-facing name: ``web_search``;
- its ``tool_id``: ``plugin:acme.search:web_search``, ``builtin:builtin:reply``,
  ``mcp:docs:search``;
- for a plugin tool, its full name ``<plugin id>.<tool>``: ``acme.search.web_search``.

Patterns are shell-style and case-sensitive, with the separators of plugin ids
and tool ids (``.`` and ``:``) kept apart, so that a grant for one plugin never
reaches another whose id merely starts the same way:

- ``*`` matches any run of characters except ``.`` and ``:``;
- ``?`` matches one character except ``.`` and ``:``;
- ``**`` matches any run of characters, separators included;
- every other character matches itself.

So ``acme.search.*`` grants every tool of plugin ``acme.search`` and none of
``acme.search.extra``; ``acme.**`` grants every tool of every plugin whose id
starts with ``acme.``; ``mcp:docs:*`` grants the tools of MCP server ``docs``;
``*`` grants every tool, since every model-facing name matches it.

What does not live here: the ``tools.call`` capability that makes the call
(:mod:`plughost.runners.tool_calls`).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable

from plughost.plugins.query import PLUGIN_PROVIDER_NAME
from plughost_sdk.models import ToolSpec

__all__ = ["grant_hint", "granted_by", "owning_plugin", "pattern_matches", "tool_names"]

_TOKENS = re.compile(r"\*\*|\*|\?|[^*?]+")


def owning_plugin(spec: ToolSpec) -> str | None:
    """The id of the plugin that provides ``spec``, or None for any other source."""
    source, _, rest = spec.tool_id.partition(":")
    if spec.provider_name != PLUGIN_PROVIDER_NAME or source != "plugin":
        return None
    plugin_id, _, tool = rest.rpartition(":")
    return plugin_id if plugin_id and tool else None


def tool_names(spec: ToolSpec) -> tuple[str, ...]:
    """Every name a grant pattern is matched against: model name, tool_id, full name."""
    names = [spec.name, spec.tool_id]
    plugin_id = owning_plugin(spec)
    if plugin_id is not None:
        names.append(f"{plugin_id}.{spec.tool_id.rpartition(':')[2]}")
    return tuple(name for name in names if name)


def pattern_matches(pattern: str, name: str) -> bool:
    """Whether grant ``pattern`` matches ``name`` (see the module docstring)."""
    return _compiled(pattern).fullmatch(name) is not None


def granted_by(patterns: Iterable[str], names: Iterable[str]) -> str | None:
    """The first pattern that matches one of ``names``, or None when none does."""
    candidates = tuple(names)
    for pattern in patterns:
        if any(pattern_matches(pattern, name) for name in candidates):
            return pattern
    return None


def grant_hint(caller: str, name: str) -> str:
    """The ``[host.tool_grants]`` line that lets ``caller`` call the tool named ``name``.

    It is built from the requested name only, so a refusal reads the same
    whether or not such a tool exists.
    """
    return f"{json.dumps(caller)} = [{json.dumps(name)}]"


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str) -> re.Pattern[str]:
    parts = []
    for token in _TOKENS.findall(pattern):
        if token == "**":
            parts.append(".*")
        elif token == "*":
            parts.append("[^.:]*")
        elif token == "?":
            parts.append("[^.:]")
        else:
            parts.append(re.escape(token))
    return re.compile("".join(parts), re.DOTALL)
