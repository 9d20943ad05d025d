"""What the host accepts from a runner about its plugins: one report, only about its own.

The host decides which plugins a runner serves (the hello reply names them). The
runner answers once, with ``runner.ready``: which of *those* plugins loaded, with
their tools, and which failed, with a reason. A report that names any other
plugin, names one twice, or comes a second time is not a mistake a well-behaved
runner makes: it is plugin code talking on the runner's socket, trying to take
over a neighbour's calls, remove its tools or add a plugin that is not installed.
:func:`check_report` turns such a report into a :class:`ProtocolViolation`, and
the supervisor recycles the runner.

What the host keeps from an accepted report is rebuilt from its own records
(the plugin's folder comes from its :class:`~plughost.plugins.source.PluginSource`,
the pid from the process it spawned); only the tool declarations and the failure
reasons come from the runner, and the declarations are bounded here
(:func:`declaration_problem`): a plugin whose tools break a bound is reported
as failed at stage ``declare``, as if its runner had said so.

What does not live here: the supervisor's reaction (:mod:`plughost.runners.supervisor`).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any, Final

from plughost.tools.patterns import check_patterns

__all__ = [
    "MAX_DESCRIPTION",
    "MAX_SCHEMA_BYTES",
    "MAX_TOOLS",
    "ProtocolViolation",
    "check_report",
    "declaration_problem",
]

MAX_DESCRIPTION: Final = 16 * 1024
"""Characters of one tool description (each of description, brief and detailed)."""
MAX_SCHEMA_BYTES: Final = 64 * 1024
"""Bytes of one tool's parameter schema, as JSON."""
MAX_TOOLS: Final = 512
"""Tools one plugin may declare."""


class ProtocolViolation(Exception):
    """A runner sent something a runner of this host never sends; it is recycled."""


def check_report(report: Any, serves: Collection[str]) -> dict[str, Any]:
    """Check a ``runner.ready`` body against the plugins the runner was told to load.

    Args:
        report: The body the runner sent.
        serves: The plugin ids the host put in the runner's hello reply.

    Returns:
        ``{"loaded": [...], "failed": [...]}`` holding only well-formed entries.

    Raises:
        ProtocolViolation: the report is malformed, names a plugin the runner does not
            serve, or names a plugin more than once.
    """
    if not isinstance(report, dict):
        raise ProtocolViolation("runner.ready is not a map")
    loaded, failed = report.get("loaded", []), report.get("failed", [])
    if not isinstance(loaded, list) or not isinstance(failed, list):
        raise ProtocolViolation("runner.ready 'loaded' and 'failed' must be lists")
    seen: set[str] = set()
    for entry in (*loaded, *failed):
        plugin_id = entry.get("plugin_id") if isinstance(entry, dict) else None
        if not isinstance(plugin_id, str):
            raise ProtocolViolation("runner.ready holds an entry without a plugin_id")
        if plugin_id not in serves:
            raise ProtocolViolation(
                f"runner.ready names plugin {plugin_id!r}, which this runner was not given"
            )
        if plugin_id in seen:
            raise ProtocolViolation(f"runner.ready names plugin {plugin_id!r} twice")
        seen.add(plugin_id)
    for entry in loaded:
        if not isinstance(entry.get("tools", []), list):
            raise ProtocolViolation(f"runner.ready: tools of {entry['plugin_id']!r} not a list")
    kept, refused = [], list(failed)
    for entry in loaded:
        problem = declaration_problem(entry.get("tools", []))
        if problem is None:
            kept.append(entry)
        else:
            refused.append({"plugin_id": entry["plugin_id"], "stage": "declare", "reason": problem})
    return {"loaded": kept, "failed": refused}


def declaration_problem(tools: list[Any]) -> str | None:
    """Why the host refuses these tool declarations (sizes, patterns), or None.

    A description is read by every model that sees the tool and indexed by tool
    search, and a schema is checked at every call: both are bounded here, where
    the host first sees them, so an 8 MB description or a pattern that can
    backtrack for seconds fails the plugin's load with a reason instead of
    stalling the host later.
    """
    if len(tools) > MAX_TOOLS:
        return f"declares {len(tools)} tools, over the limit of {MAX_TOOLS} per plugin"
    for tool in tools:
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            return "declares a tool without a name"
        name = tool["name"]
        for field in ("description", "brief_description", "detailed_description"):
            text = tool.get(field) or ""
            if not isinstance(text, str) or len(text) > MAX_DESCRIPTION:
                size = len(text) if isinstance(text, str) else 0
                return (
                    f"tool {name}: its {field} is {size:,} characters, over the limit of "
                    f"{MAX_DESCRIPTION:,}; shorten it (a model reads all of it on every turn)"
                )
        schema = tool.get("parameters_schema") or {}
        try:
            size = len(json.dumps(schema))
            check_patterns(schema)
        except (TypeError, ValueError) as exc:  # PatternError is a ValueError
            return f"tool {name}: its parameter schema is refused: {exc}"
        if size > MAX_SCHEMA_BYTES:
            return (
                f"tool {name}: its parameter schema is {size:,} bytes of JSON, over the limit "
                f"of {MAX_SCHEMA_BYTES:,}"
            )
    return None
