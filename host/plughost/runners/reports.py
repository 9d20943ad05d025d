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
the pid from the process it spawned); only the declarations and the failure
reasons come from the runner, and the declarations are bounded here
(:func:`bound_declarations`): a plugin whose tools, components, resources or
prompts break a bound is reported as failed at stage ``declare``, as if its
runner had said so. Remote runners' reports (``runner.ready``,
``plugin.reloaded``) go through the same function
(:mod:`plughost.remote.requests`), so no runner declares more than
a local one may.

What does not live here: the supervisor's reaction (:mod:`plughost.runners.supervisor`).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any, Final

from plughost.plugins.command_patterns import command_problem
from plughost.tools.declaration_limits import MAX_DESCRIPTION, MAX_SCHEMA_BYTES, MAX_TOOLS
from plughost.tools.patterns import check_patterns

__all__ = [
    "MAX_DESCRIPTION",
    "MAX_SCHEMA_BYTES",
    "MAX_TOOLS",
    "ProtocolViolation",
    "bound_declarations",
    "check_report",
    "declaration_problem",
    "declared_names",
]

_OTHER_KINDS: Final = ("components", "resources", "prompts")
_MAX_ITEM_BYTES: Final = 4 * MAX_SCHEMA_BYTES
"""Bytes of one component, resource or prompt declaration, as JSON (metadata included)."""


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
    kept, refused = bound_declarations(loaded)
    return {"loaded": kept, "failed": [*failed, *refused]}


def bound_declarations(
    loaded: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split load reports (``Loaded`` entries) into those within bounds and failures for the rest.

    The one place a runner's declarations are bounded, local or remote, at the
    first load and at every reload: an entry over a bound becomes a failure at
    stage ``declare`` whose reason names the bound, and the host registers
    nothing of it.
    """
    kept, refused = [], []
    for entry in loaded:
        problem = _entry_problem(entry)
        if problem is None:
            kept.append(entry)
        else:
            refused.append({"plugin_id": entry["plugin_id"], "stage": "declare", "reason": problem})
    return kept, refused


def _entry_problem(entry: dict[str, Any]) -> str | None:
    tools = entry.get("tools", [])
    if not isinstance(tools, list):
        return "declares tools that are not a list"
    problem = declaration_problem(tools)
    for kind in _OTHER_KINDS:
        if problem is not None:
            break
        problem = _listing_problem(kind, entry.get(kind, []))
    return problem or command_problem(entry.get("components", []))  # RE2, within bounds


def _listing_problem(kind: str, items: Any) -> str | None:
    """Why the host refuses a plugin's components, resources or prompts (count, text size)."""
    if not isinstance(items, list):
        return f"declares {kind} that are not a list"
    if len(items) > MAX_TOOLS:
        return f"declares {len(items)} {kind}, over the limit of {MAX_TOOLS} per plugin"
    for item in items:
        if not isinstance(item, dict):
            return f"declares {kind} that are not maps"
        metadata = item.get("metadata")
        texts = [item.get("description"), item.get("title"), item.get("name"), item.get("uri")]
        if isinstance(metadata, dict):
            texts.append(metadata.get("description"))
        size = max((len(t) for t in texts if isinstance(t, str)), default=0)
        name = str(item.get("name"))[:80]
        if size > MAX_DESCRIPTION:
            return (
                f"one of its {kind} ({name!r}) has a text of {size:,} characters, over the "
                f"limit of {MAX_DESCRIPTION:,}; shorten it"
            )
        try:
            whole = len(json.dumps(item, default=str))
        except (ValueError, RecursionError):  # a cycle cannot come off the wire; depth can
            return f"one of its {kind} ({name!r}) is nested too deeply"
        if whole > _MAX_ITEM_BYTES:
            return (
                f"one of its {kind} ({name!r}) is {whole:,} bytes of JSON, over the limit "
                f"of {_MAX_ITEM_BYTES:,}"
            )
    return None


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
        except RecursionError:
            return f"tool {name}: its parameter schema is nested too deeply"
        if size > MAX_SCHEMA_BYTES:
            return (
                f"tool {name}: its parameter schema is {size:,} bytes of JSON, over the limit "
                f"of {MAX_SCHEMA_BYTES:,}"
            )
    return None


def declared_names(entry: dict[str, Any]) -> set[str]:
    """What a load report declares, by kind and name: ``tool:NAME``, ``command:NAME``, ...

    Components by their type (``command``, ``api``, ``event_handler``, ...),
    resources by URI, prompts by name: everything the host would register
    from it. What a pinned copy of a remote plugin declares is kept in this form.
    """
    names = {f"tool:{t.get('name')}" for t in entry.get("tools") or () if isinstance(t, dict)}
    for component in entry.get("components") or ():
        if isinstance(component, dict):
            names.add(f"{str(component.get('type', '')).lower()}:{component.get('name')}")
    for resource in entry.get("resources") or ():
        if isinstance(resource, dict):
            names.add(f"resource:{resource.get('uri')}")
    for prompt in entry.get("prompts") or ():
        if isinstance(prompt, dict):
            names.add(f"prompt:{prompt.get('name')}")
    return names
