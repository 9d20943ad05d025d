"""The one-shot commands: ``tools``, ``components``, ``call`` and ``search``.

Each loads the plugins into a short-lived host (:mod:`plughost.cli.one_shot`), asks it
one thing, prints the answer and exits with its code. They are registered on the
``plughost`` group by :mod:`plughost.cli.main`, which imports this module for
``plughost --help`` too: only click is imported at the top, and each command imports
rich, the SDK's models or the search engine once its host has started.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click

from plughost.cli.one_shot import OneShot, one_shot, quiet_host, run
from plughost.cli.options import (
    EXIT_FAILED,
    EXIT_USAGE,
    config_option,
    json_option,
    plugins_option,
)

if TYPE_CHECKING:
    from plughost.search.embedding import SemanticMode

__all__ = ["call", "components", "search", "tools"]


@click.command()
@plugins_option
@config_option
@json_option
@click.option("--all", "show_all", is_flag=True, help="Include hidden tools.")
def tools(
    plugin_dirs: tuple[Path, ...], config_file: Path | None, as_json: bool, show_all: bool
) -> None:
    """Load the plugins and MCP servers and list their tools (exit 1 if a plugin failed).

    \b
    Examples:
      plughost tools --plugins plugins_example --json
      plughost tools --config plughost.toml     # also the [mcp.servers] it names
    """
    config = one_shot(plugin_dirs, config_file)
    sys.exit(run(_tools(config, as_json, show_all)))


async def _tools(config: OneShot, as_json: bool, show_all: bool) -> int:
    async with quiet_host(config) as host:  # first: it starts children, then imports
        from rich.console import Console

        from plughost.cli.console import print_json, stderr, tools_table

        specs = await host.tools.list_tools(include_hidden=show_all)
        status = host.status()
        failures = [row for row in status if row.state != "loaded"]
        if as_json:
            print_json(
                {
                    "tools": [_spec_json(s) for s in specs],
                    "failures": [{"plugin_id": r.plugin_id, "error": r.error} for r in failures],
                }
            )
        else:
            Console().print(tools_table(specs))
            for row in failures:
                stderr.print(f"[red]✗ {row.error}[/red]")
        return EXIT_FAILED if failures else 0


@click.command()
@plugins_option
@json_option
def components(plugin_dirs: tuple[Path, ...], as_json: bool) -> None:
    """Load the plugins and list their commands, event handlers, hooks, APIs and cards.

    Exit 1 if a plugin failed to load. The JSON lists each component in the dict
    shape of MaiBot's plugin SDK, with its plugin and whether it is enabled.

    \b
    Example:
      plughost components --plugins plugins_example --json
    """
    config = one_shot(plugin_dirs, None)
    sys.exit(run(_components(config, as_json)))


async def _components(config: OneShot, as_json: bool) -> int:
    async with quiet_host(config) as host:  # first: it starts children, then imports
        from rich.console import Console

        from plughost.cli.console import components_table, print_json, stderr

        registry = host.components
        found = registry.components()
        failures = [row for row in host.status() if row.state != "loaded"]
        if as_json:
            rows = [
                {"plugin_id": c.plugin_id, "enabled": registry.component_enabled(c), **c.to_wire()}
                for c in found
            ]
            errors = [{"plugin_id": r.plugin_id, "error": r.error} for r in failures]
            print_json({"components": rows, "failures": errors})
        else:
            Console().print(components_table(found))
            for row in failures:
                stderr.print(f"[red]✗ {row.error}[/red]")
        return EXIT_FAILED if failures else 0


def _spec_json(spec: Any) -> dict[str, Any]:
    return {
        "name": spec.name,
        "tool_id": spec.tool_id,
        "source": spec.metadata.get("plugin_id") or spec.provider_name,
        "visibility": spec.visibility,
        "description": spec.description,
        "parameters": spec.parameters_schema,
    }


@click.command()
@click.argument("tool")
@plugins_option
@config_option
@click.option(
    "--args", "arguments", default="{}", metavar="JSON", help="The arguments as a JSON object."
)
@click.option("--stream-id", default="", help="The chat stream the call happens in.")
@json_option
def call(
    tool: str,
    plugin_dirs: tuple[Path, ...],
    config_file: Path | None,
    arguments: str,
    stream_id: str,
    as_json: bool,
) -> None:
    """Call one tool through a real runner and print its result.

    Exit 0 when the tool succeeded, 1 when it failed, 2 on a usage error
    (bad JSON, unknown tool, invalid arguments).

    \b
    Examples:
      plughost call get_weather --plugins plugins_example --args '{"city": "Paris"}'
      plughost call mcp_time_get_current_time --config plughost.toml --args '{"timezone": "UTC"}'
    """
    config = one_shot(plugin_dirs, config_file)
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise click.UsageError(f"--args is not valid JSON: {exc}") from None
    if not isinstance(parsed, dict):
        raise click.UsageError('--args must be a JSON object, like \'{"city": "Paris"}\'')
    sys.exit(run(_call(config, tool, parsed, stream_id, as_json)))


async def _call(
    config: OneShot,
    tool: str,
    arguments: dict[str, Any],
    stream_id: str,
    as_json: bool,
) -> int:
    async with quiet_host(config) as host:  # first: it starts children, then imports
        from plughost.cli.console import print_json, result_to_json, stderr
        from plughost_sdk.models import ToolExecutionContext

        for row in host.status():
            if row.state != "loaded":
                stderr.print(f"[yellow]! {row.error}[/yellow]")
        context = ToolExecutionContext(stream_id=stream_id)
        # The operator is calling, not a model: hidden tools run too.
        result = await host.invoke(tool, arguments, context, trusted=True)
    if as_json:
        print_json(result_to_json(result))
    elif result.success:
        click.echo(result.get_history_content())
    else:
        stderr.print(f"[red]{result.error_code}: {result.error_message}[/red]")
    if result.error_code in ("tool_not_found", "invalid_arguments"):
        return EXIT_USAGE
    return 0 if result.success else EXIT_FAILED


@click.command()
@click.argument("query")
@plugins_option
@config_option
@click.option(
    "--limit",
    default=5,
    show_default=True,
    type=click.IntRange(1, 100),
    help="How many matches to show.",
)
@click.option(
    "--semantic",
    type=click.Choice(["auto", "on", "off"]),
    help="Fuse BM25 with sentence embeddings (auto: when plughost[semantic] is installed); "
    "default: the --config file's [search] semantic, else auto.",
)
@json_option
def search(
    query: str,
    plugin_dirs: tuple[Path, ...],
    config_file: Path | None,
    limit: int,
    semantic: str | None,
    as_json: bool,
) -> None:
    """Search the tools as tool_search does (BM25, fused with embeddings when installed).

    Names, descriptions and parameters are searched; queries may mix English and
    Chinese. With the semantic extra the closest tools in meaning are shown even
    when no word matches. Exit 1 when nothing matches.

    \b
    Examples:
      plughost search "weather forecast" --plugins plugins_example
      plughost search 天气 --plugins plugins_example --json
      plughost search "will it rain" --config plughost.toml   # its [search] table
    """
    config = one_shot(plugin_dirs, config_file)
    sys.exit(run(_search(config, query, limit, semantic, as_json)))


async def _search(
    config: OneShot, query: str, limit: int, semantic: str | None, as_json: bool
) -> int:
    async with quiet_host(config) as host:  # first: it starts children, then imports
        from rich.console import Console
        from rich.table import Table

        from plughost.cli.console import print_json
        from plughost.search.service import search_tools

        mode, cache = _ranking(config.config_file, semantic)
        try:
            matches = await search_tools(
                host.tools, query, limit, semantic=mode, embedding_cache=cache
            )
        except ValueError as exc:  # semantic "on" without the extra
            raise click.UsageError(str(exc)) from None
    if as_json:
        print_json(
            {"query": query, "matches": [{**m.to_dict(), "tool_id": m.tool_id} for m in matches]}
        )
    else:
        table = Table(title=f"Tools matching {query!r}", title_justify="left")
        for column in ("Tool", "Score", "Description"):
            table.add_column(column, overflow="fold")
        for match in matches:
            table.add_row(match.name, f"{match.score:.2f}", match.description)
        Console().print(table if matches else f"No tool matches {query!r}.")
    return 0 if matches else EXIT_FAILED


def _ranking(config_file: Path | None, semantic: str | None) -> tuple[SemanticMode, Path | None]:
    """``--semantic``, else the ``[search]`` table of ``--config``; and its embeddings cache."""
    if config_file is None:
        return cast("SemanticMode", semantic or "auto"), None
    from plughost.cli.one_shot import load_config

    table = load_config(config_file).search
    return cast("SemanticMode", semantic or table.semantic), table.embedding_cache
