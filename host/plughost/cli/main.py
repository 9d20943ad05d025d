"""The ``plughost`` command line: serve, tools, components, call, search, new, check...

Start-up time is part of the interface: ``plughost --help`` must answer at once.
This module imports only click at the top; each command imports the host, rich,
the MCP SDK or the search engine when it runs (``tests/host/cli/test_lazy_imports.py``
pins which modules each command may load).

Exit codes: 0 success; 1 the thing checked or called failed (a tool error, a
plugin that did not load, a check that found problems); 2 a usage error (bad
flags, bad JSON, unknown tool); 3 ``serve --strict`` found plugins that failed
to start; 130 a forced stop.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from plughost import __version__

if TYPE_CHECKING:
    from plughost.cli.serve_config import ServeConfig
    from plughost.host import PluginHost
    from plughost.mcp.config import MCPConfig
    from plughost.settings import HostSettings

__all__ = ["cli", "main"]

EXIT_FAILED = 1
EXIT_USAGE = 2

_plugins_option = click.option(
    "--plugins",
    "plugin_dirs",
    multiple=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="A folder of plugin folders, or one plugin folder. Repeat for several.",
)
_json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
_config_option = click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A TOML configuration file (the one serve reads); flags win over it.",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="plughost")
@click.option("-v", "--verbose", count=True, help="More logs (-vv for debug).")
@click.pass_context
def cli(ctx: click.Context, verbose: int) -> None:
    """plughost: run LLM tool plugins in isolated processes and serve them.

    \b
    Quick start:
      plughost serve --plugins plugins_example     # run the host, hot reload on
      plughost tools --plugins plugins_example     # list every tool
      plughost components --plugins plugins_example  # commands, event handlers, hooks, APIs
      plughost call get_weather --plugins plugins_example --args '{"city": "Paris"}'
      plughost new my_plugin --dir plugins         # scaffold a plugin
      plughost check plugins                       # validate before deploying
    """
    ctx.ensure_object(dict)
    ctx.obj["verbose"] = verbose


@cli.command()
@_plugins_option
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A TOML configuration file; flags win over it.",
)
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default=None,
    help="Human-readable lines (default) or JSON lines.",
)
@click.option(
    "--poll",
    is_flag=True,
    default=None,
    help="Poll for file changes (Docker bind mounts, network shares).",
)
@click.option("--no-watch", is_flag=True, help="Do not hot-reload plugin folders.")
@click.option("--mcp-stdio", is_flag=True, help="Also serve every tool over MCP on stdin/stdout.")
@click.option(
    "--mcp-http",
    metavar="HOST:PORT",
    help="Also serve every tool over MCP streamable HTTP (loopback unless allowed).",
)
@click.option(
    "--web",
    metavar="HOST:PORT",
    help="Also serve the operator's console (a web page, /metrics) here (loopback unless allowed).",
)
@click.option(
    "--allow-remote", is_flag=True, help="Allow --mcp-http and --web on a non-loopback address."
)
@click.option(
    "--mcp-token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The --mcp-http bearer token file (0600); created with a new token if missing.",
)
@click.option("--strict", is_flag=True, help="Exit with code 3 if any plugin fails to start.")
@click.option("--print-config", is_flag=True, help="Print the effective configuration and exit.")
@click.pass_context
def serve(
    ctx: click.Context,
    plugin_dirs: tuple[Path, ...],
    config_file: Path | None,
    log_format: str | None,
    poll: bool | None,
    no_watch: bool,
    mcp_stdio: bool,
    mcp_http: str | None,
    web: str | None,
    allow_remote: bool,
    mcp_token_file: Path | None,
    strict: bool,
    print_config: bool,
) -> None:
    """Start the host: load plugins, hot-reload edits, stream lifecycle events.

    \b
    Examples:
      plughost serve --plugins plugins_example
      plughost serve --config plughost.toml --log-format json
      plughost serve --plugins plugins --mcp-http 127.0.0.1:8765
      plughost serve --plugins plugins --web 127.0.0.1:8770   # console: open the printed URL
    """
    from plughost.cli.serve import configure_logging
    from plughost.cli.serve import serve as run_serve

    if mcp_stdio and mcp_http:
        raise click.UsageError("choose one of --mcp-stdio and --mcp-http")
    config = _load_config(config_file)
    host = config.host.model_copy(update={"plugin_dirs": [*config.host.plugin_dirs, *plugin_dirs]})
    if web:
        host.web = host.web.model_copy(update={"address": web})
    serve_settings = config.serve.model_copy(
        update={
            k: v
            for k, v in {
                "log_format": log_format,
                "mcp": "stdio" if mcp_stdio else ("http" if mcp_http else None),
                "mcp_http": mcp_http,
                "allow_remote": allow_remote or None,
                "mcp_token_file": mcp_token_file,
            }.items()
            if v is not None
        }
    )
    watch = config.watch.model_copy(
        update={
            k: v
            for k, v in {"poll": poll, "enabled": False if no_watch else None}.items()
            if v is not None
        }
    )
    config = config.model_copy(update={"host": host, "serve": serve_settings, "watch": watch})
    if print_config:
        from plughost.cli.console import print_json

        print_json(config.to_toml_dict())
        return
    if not config.host.plugin_dirs:
        raise click.UsageError("no plugin folders: pass --plugins DIR or set host.plugin_dirs")
    configure_logging(config.serve.log_format, ctx.obj["verbose"])
    sys.exit(_run(run_serve(config, strict=strict)))


@cli.command()
@_plugins_option
@_config_option
@_json_option
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
    config = _one_shot(plugin_dirs, config_file)
    sys.exit(_run(_tools(config, as_json, show_all)))


async def _tools(config: _OneShot, as_json: bool, show_all: bool) -> int:
    async with _quiet_host(config) as host:  # first: it starts children, then imports
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


@cli.command()
@_plugins_option
@_json_option
def components(plugin_dirs: tuple[Path, ...], as_json: bool) -> None:
    """Load the plugins and list their commands, event handlers, hooks, APIs and cards.

    Exit 1 if a plugin failed to load. The JSON lists each component in the dict
    shape of MaiBot's plugin SDK, with its plugin and whether it is enabled.

    \b
    Example:
      plughost components --plugins plugins_example --json
    """
    config = _one_shot(plugin_dirs, None)
    sys.exit(_run(_components(config, as_json)))


async def _components(config: _OneShot, as_json: bool) -> int:
    async with _quiet_host(config) as host:  # first: it starts children, then imports
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


@cli.command()
@click.argument("tool")
@_plugins_option
@_config_option
@click.option(
    "--args", "arguments", default="{}", metavar="JSON", help="The arguments as a JSON object."
)
@click.option("--stream-id", default="", help="The chat stream the call happens in.")
@_json_option
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
    config = _one_shot(plugin_dirs, config_file)
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise click.UsageError(f"--args is not valid JSON: {exc}") from None
    if not isinstance(parsed, dict):
        raise click.UsageError('--args must be a JSON object, like \'{"city": "Paris"}\'')
    sys.exit(_run(_call(config, tool, parsed, stream_id, as_json)))


async def _call(
    config: _OneShot,
    tool: str,
    arguments: dict[str, Any],
    stream_id: str,
    as_json: bool,
) -> int:
    async with _quiet_host(config) as host:  # first: it starts children, then imports
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


@cli.command()
@click.argument("query")
@_plugins_option
@click.option(
    "--limit",
    default=5,
    show_default=True,
    type=click.IntRange(1, 100),
    help="How many matches to show.",
)
@_json_option
def search(query: str, plugin_dirs: tuple[Path, ...], limit: int, as_json: bool) -> None:
    """Search the tools as tool_search does (BM25 over names, descriptions, parameters).

    Queries may mix English and Chinese. Exit 1 when nothing matches.

    \b
    Examples:
      plughost search "weather forecast" --plugins plugins_example
      plughost search 天气 --plugins plugins_example --json
    """
    config = _one_shot(plugin_dirs, None)
    sys.exit(_run(_search(config, query, limit, as_json)))


async def _search(config: _OneShot, query: str, limit: int, as_json: bool) -> int:
    async with _quiet_host(config) as host:  # first: it starts children, then imports
        from rich.console import Console
        from rich.table import Table

        from plughost.cli.console import print_json
        from plughost.search.service import search_tools

        matches = await search_tools(host.tools, query, limit)
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


@cli.command()
@click.argument("name")
@click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("."),
    show_default=True,
    help="Where to create the plugin folder.",
)
@click.option("--id", "plugin_id", help="The plugin id (default: local.NAME).")
def new(name: str, directory: Path, plugin_id: str | None) -> None:
    """Create a plugin folder: manifest, config.toml, a plugin with one tool, and its test.

    The scaffold passes `plughost check` and its own test out of the box.

    \b
    Example:
      plughost new weather_tools --dir plugins
      pytest plugins/weather_tools/tests
    """
    from plughost.cli.scaffold import scaffold_plugin

    try:
        folder = scaffold_plugin(name, directory, plugin_id=plugin_id)
    except (ValueError, FileExistsError) as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(f"Created {folder}")
    for line in (
        f"  edit      {folder / 'plugin.py'}",
        f"  test      pytest {folder / 'tests'}",
        f"  check     plughost check {folder}",
        f"  run       plughost serve --plugins {directory}",
    ):
        click.echo(line)


@cli.command()
@click.argument("dirs", nargs=-1, required=True, type=click.Path(path_type=Path, file_okay=False))
@_json_option
@click.option(
    "--timeout", default=20.0, show_default=True, help="Seconds each plugin may take to load."
)
def check(dirs: tuple[Path, ...], as_json: bool, timeout: float) -> None:
    """Validate plugin folders before deploying: manifests, imports, declarations, schemas.

    Each plugin is loaded in a throwaway runner. Every problem is reported with
    its file, line and a fix. Exit 0 when there is no error (warnings allowed),
    1 otherwise.

    \b
    Examples:
      plughost check plugins
      plughost check plugins/weather_tools --json
    """
    sys.exit(_run(_check(list(dirs), as_json, timeout)))


async def _check(dirs: list[Path], as_json: bool, timeout: float) -> int:
    import logging

    from rich.console import Console

    from plughost.cli.checker import check_plugins
    from plughost.cli.component_checks import summarize
    from plughost.cli.console import print_json, stderr

    logging.basicConfig(level=logging.CRITICAL)
    logging.getLogger("plughost").setLevel(logging.CRITICAL)
    if stderr.is_terminal and not as_json:
        with stderr.status("loading plugins in throwaway runners..."):
            report = await check_plugins(dirs, timeout=timeout)
    else:
        report = await check_plugins(dirs, timeout=timeout)
    if as_json:
        print_json(report.to_dict())
        return 0 if report.ok else EXIT_FAILED
    console = Console()
    for problem in report.problems:
        style = "red" if problem.severity == "error" else "yellow"
        console.print(problem.describe(), style=style, markup=False, highlight=False)
    for plugin_id in report.plugins_ok:
        extra = summarize(report.components.get(plugin_id, []))
        line = f"ok: {plugin_id}" + (f" (also {extra})" if extra else "")
        console.print(line, style="green", highlight=False)
    summary = f"{len(report.plugins_ok)} ok, {len(report.errors)} error(s), "
    console.print(summary + f"{len(report.warnings)} warning(s)", highlight=False)
    return 0 if report.ok else EXIT_FAILED


def _run(main: Coroutine[Any, Any, int]) -> int:
    import asyncio  # 40 ms: only commands that start an event loop pay for it

    return asyncio.run(main)


def _require_dirs(plugin_dirs: tuple[Path, ...]) -> None:
    if not plugin_dirs:
        raise click.UsageError("pass --plugins DIR (a folder of plugin folders)")
    missing = [str(d) for d in plugin_dirs if not d.exists()]
    if missing:
        raise click.UsageError(f"no such folder: {', '.join(missing)}")


def _load_config(path: Path | None) -> ServeConfig:
    from plughost.cli.serve_config import ConfigFileError, ServeConfig

    if path is None:
        return ServeConfig()
    try:
        return ServeConfig.load(path)
    except ConfigFileError as exc:
        raise click.UsageError(str(exc)) from None


def _one_shot_config(plugin_dirs: tuple[Path, ...], config_file: Path | None) -> ServeConfig:
    """The configuration of ``tools`` and ``call``: the file's, plus the ``--plugins`` folders."""
    config = _load_config(config_file)
    if plugin_dirs or config_file is None:
        _require_dirs(plugin_dirs)
    dirs = [*config.host.plugin_dirs, *plugin_dirs]
    if not dirs and not config.mcp.servers:
        raise click.UsageError(
            "nothing to load: pass --plugins DIR, or a --config with host.plugin_dirs or "
            "[mcp.servers]"
        )
    host = config.host.model_copy(update={"plugin_dirs": dirs})
    return config.model_copy(update={"host": host})


class _OneShot:
    """What a one-shot command loads: its ``--plugins`` folders and ``--config`` file."""

    def __init__(self, plugin_dirs: tuple[Path, ...], config_file: Path | None) -> None:
        self.plugin_dirs = plugin_dirs
        self.config_file = config_file

    def load(self) -> tuple[HostSettings, MCPConfig | None]:
        """The host's settings and, if any are configured, the upstream MCP servers.

        Also imports the host while at it (see ``_quiet_host``). Without ``--config``
        the settings are the defaults plus the ``--plugins`` folders, and the serve
        configuration's modules (the MCP configuration among them) are not imported.
        """
        if self.config_file is None:
            from plughost.settings import HostSettings

            settings, mcp = HostSettings(plugin_dirs=list(self.plugin_dirs)), None
        else:
            config = _one_shot_config(self.plugin_dirs, self.config_file)
            settings, mcp = config.host, (config.mcp if config.mcp.servers else None)
        # The costly part, done here, off the event loop: the host, and the console
        # (rich) every one-shot command prints with.
        import plughost.cli.console
        import plughost.host  # noqa: F401

        return settings, mcp


def _one_shot(plugin_dirs: tuple[Path, ...], config_file: Path | None) -> _OneShot:
    """Check what can be checked before anything starts; the rest is read by ``_quiet_host``."""
    if config_file is None:
        _require_dirs(plugin_dirs)
    return _OneShot(plugin_dirs, config_file)


class _quiet_host:  # noqa: N801 - used like a function: `async with _quiet_host(config)`
    """A PluginHost for one-shot commands, with a spinner while plugins start.

    The fork server and the sandbox probe start first, and the configuration and
    the host's modules are read while they do (:mod:`plughost.runners.early`): on
    two cores the command then waits for the longer of the two, not for both.

    The configuration's upstream MCP servers are added as a tool provider, as
    ``serve`` does; the MCP SDK is imported only when there are some.
    """

    def __init__(self, one_shot: _OneShot) -> None:
        self._one_shot = one_shot

    async def __aenter__(self) -> PluginHost:
        import asyncio
        import logging

        from plughost.runners.early import EarlyChildren

        early = EarlyChildren.start()
        try:
            # In a thread, so the loop goes on starting the fork server meanwhile.
            settings, mcp = await asyncio.to_thread(self._one_shot.load)
            from plughost.cli.console import stderr
            from plughost.host import PluginHost  # imported by load() already
        except BaseException:
            await early.aclose()
            raise
        self._host = PluginHost(settings=settings, early=early)

        logging.basicConfig(
            level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
        )
        logging.getLogger("plughost.events").setLevel(logging.CRITICAL)
        if stderr.is_terminal:
            with stderr.status("starting plugins..."):
                await self._host.start()
        else:
            await self._host.start()
        if mcp is not None:
            from plughost.mcp.provider import MCPToolProvider

            self._host.tools.register_provider(MCPToolProvider(mcp))
        return self._host

    async def __aexit__(self, *exc: object) -> None:
        await self._host.aclose()


def _add_commands() -> None:
    from plughost.cli.credentials import runner_credentials  # click only at import time

    cli.add_command(runner_credentials)


_add_commands()


def main() -> None:
    """Console-script entry point: exits without the interpreter's teardown (see quick_exit)."""
    from plughost.cli.quick_exit import run_and_exit

    run_and_exit(lambda: cli(prog_name="plughost"))
