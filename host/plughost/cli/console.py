"""What the CLI shows people and machines: tables, event lines, results, JSON.

Human output goes through rich; ``--json`` output is one JSON document (or one
JSON object per line for streams) with no decoration, so it can be piped.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from plughost.cli.component_checks import count_kinds
from plughost.events import EventKind, LifecycleEvent
from plughost.host import PluginStatus
from plughost.plugins.component_info import PluginComponent
from plughost_sdk.models import ToolExecutionResult, ToolSpec

__all__ = [
    "JsonLogFormatter",
    "QuietOnBrokenPipe",
    "event_line",
    "plugins_table",
    "print_json",
    "result_to_json",
    "stderr",
    "tools_table",
]


class QuietOnBrokenPipe(Console):
    """A console that goes quiet when its reader is gone, instead of ending the program.

    rich answers a broken pipe with ``SystemExit(1)``; raised in ``serve``'s
    event printer while the host stops (``serve | tee log``, and the Ctrl-C
    that stopped serve ended tee), it skipped the rest of the shutdown and left
    the process waiting on a worker thread forever. The host still stops and
    exits as it would have; what it would have printed has no reader.
    """

    def on_broken_pipe(self) -> None:
        self.quiet = True


stderr = QuietOnBrokenPipe(stderr=True, highlight=False)

_EVENT_STYLE = {
    EventKind.RUNNER_CRASHED: "bold red",
    EventKind.RUNNER_GAVE_UP: "bold red",
    EventKind.PLUGIN_FAILED: "red",
    EventKind.RELOAD_FAILED: "red",
    EventKind.CONFIG_REJECTED: "red",
    EventKind.RELOAD_ROLLED_BACK: "yellow",
    EventKind.RELOAD_SUCCEEDED: "green",
    EventKind.PLUGIN_LOADED: "green",
    EventKind.CONFIG_UPDATED: "green",
    EventKind.RUNNER_RESTARTED: "yellow",
}


def print_json(data: Any) -> None:
    """Write one JSON document to stdout."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")
    sys.stdout.flush()


def plugins_table(rows: Iterable[PluginStatus]) -> Table:
    """The serve summary: one row per plugin, failures with their reason."""
    table = Table(title="Plugins", title_justify="left", expand=False)
    # Folded, never cut with an ellipsis: a refused folder's path and a failure's
    # reason are read whole.
    table.add_column("Plugin", overflow="fold")
    for column in ("Version", "State", "Runner PID"):
        table.add_column(column, no_wrap=True)
    table.add_column("Tools and components", overflow="fold")
    for row in rows:
        state = Text(row.state, style="green" if row.state == "loaded" else "red")
        served = [", ".join(row.tools)] if row.tools else []
        if row.components:
            served.append(count_kinds(key.split(":", 1)[0] for key in row.components))
        tools = "; ".join(served) if served else (row.error or "-")
        table.add_row(row.plugin_id, row.version, state, str(row.pid or "-"), tools)
    return table


def tools_table(specs: Iterable[ToolSpec]) -> Table:
    """The tools of a host: name, source, visibility, one-line description."""
    table = Table(title="Tools", title_justify="left")
    table.add_column("Tool", no_wrap=True)
    table.add_column("Source", no_wrap=True)
    table.add_column("Visibility")
    table.add_column("Description", overflow="fold")
    for spec in specs:
        source = spec.metadata.get("plugin_id") or spec.provider_name
        table.add_row(spec.name, str(source), spec.visibility, spec.brief_description)
    return table


def components_table(components: Iterable[PluginComponent]) -> Table:
    """Commands, event handlers, hooks, APIs and cards: kind, name, trigger, description."""
    table = Table(title="Components", title_justify="left")
    table.add_column("Kind", no_wrap=True)
    table.add_column("Component", overflow="fold")
    table.add_column("Runs on")
    table.add_column("Description", overflow="fold")
    for component in components:
        table.add_row(
            component.kind.lower().replace("_", " "),
            component.full_name,
            component.summary(),
            component.description,
        )
    return table


def event_line(event: LifecycleEvent) -> Text:
    """One readable line for a lifecycle event."""
    stamp = time.strftime("%H:%M:%S", time.localtime(event.time))
    line = Text(f"{stamp} ", style="dim")
    line.append(f"{event.kind.value:<18}", style=_EVENT_STYLE.get(event.kind, "cyan"))
    line.append(" " + event.message)
    where = event.details.get("file")
    if where and event.details.get("line") and str(where) not in event.message:
        line.append(f"  ({where}:{event.details['line']})", style="dim")
    return line


def result_to_json(result: ToolExecutionResult) -> dict[str, Any]:
    """A ToolExecutionResult as JSON-ready data; media become size and type, not bytes."""
    data = result.model_dump(mode="json", exclude={"content_items"})
    data["content_items"] = [
        {
            "type": item.content_type,
            "mime_type": item.mime_type,
            "name": item.name,
            "bytes": len(item.data) if item.data is not None else None,
            "uri": item.uri,
            "description": item.description,
        }
        for item in result.content_items
    ]
    return data


class JsonLogFormatter(logging.Formatter):
    """One JSON object per log record, for ``--log-format json``."""

    def format(self, record: logging.LogRecord) -> str:
        """Render ``record`` as a JSON line."""
        data: dict[str, Any] = {
            "time": record.created,
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        plugin = getattr(record, "plugin_id", None)
        if plugin:
            data["plugin_id"] = plugin
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data, ensure_ascii=False, default=str)
