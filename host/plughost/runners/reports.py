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
reasons come from the runner.

What does not live here: the supervisor's reaction (:mod:`plughost.runners.supervisor`).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

__all__ = ["ProtocolViolation", "check_report"]


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
    return {"loaded": list(loaded), "failed": list(failed)}
