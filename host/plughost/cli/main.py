"""The ``plughost`` command line: serve, tools, components, call, search, new, check...

Start-up time is part of the interface: ``plughost --help`` must answer at once.
This module imports only click at the top, and so do the command modules it
registers (``one_shot_commands``, ``credentials``) and what they share
(``options``, ``one_shot``); each command imports the host, rich, the MCP SDK or
the search engine when it runs (``tests/host/cli/test_lazy_imports.py`` pins which
modules each command may load).

Here: the ``plughost`` group, ``serve``, ``new`` and ``check``. The one-shot commands
that ask a short-lived host (``tools``, ``components``, ``call``, ``search``) live in
:mod:`plughost.cli.one_shot_commands`.

Exit codes: 0 success; 1 the thing checked or called failed (a tool error, a
plugin that did not load, a check that found problems); 2 a usage error (bad
flags, bad JSON, unknown tool); 3 ``serve --strict`` found plugins that failed
to start; 130 a forced stop.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from plughost import __version__
from plughost.cli.one_shot import load_config, run
from plughost.cli.options import EXIT_FAILED, json_option, plugins_option

if TYPE_CHECKING:
    from plughost.settings import HostSettings

__all__ = ["cli", "main"]


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
      plughost grant community.weather api.example.com  # network for one plugin
    """
    ctx.ensure_object(dict)
    ctx.obj["verbose"] = verbose


@cli.command()
@plugins_option
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
@click.option(
    "--learn",
    is_flag=True,
    help="Learn mode: let plugins reach any host but this one, record where they go, and "
    "print the network grants to paste when serve stops.",
)
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
    learn: bool,
    print_config: bool,
) -> None:
    """Start the host: load plugins, hot-reload edits, stream lifecycle events.

    \b
    Examples:
      plughost serve --plugins plugins_example
      plughost serve --config plughost.toml --log-format json
      plughost serve --plugins plugins --mcp-http 127.0.0.1:8765
      plughost serve --plugins plugins --web 127.0.0.1:8770   # console: open the printed URL
      plughost serve --plugins plugins --learn   # then: plughost grant ID HOST --config ...
    """
    if mcp_stdio and mcp_http:
        raise click.UsageError("choose one of --mcp-stdio and --mcp-http")
    if mcp_stdio and not print_config:
        _answer_first(config_file, plugin_dirs)
    if config_file is not None and not print_config:
        from plughost.mcp import early_launch

        # The upstream servers start while the rest of serve is imported; what no
        # connection claims is killed when the command ends.
        early_launch.launch(config_file, __version__)
        ctx.call_on_close(early_launch.discard)
    from plughost.cli.serve import configure_logging
    from plughost.cli.serve import serve as run_serve

    config = load_config(config_file)
    host = config.host.model_copy(update={"plugin_dirs": [*config.host.plugin_dirs, *plugin_dirs]})
    if web:
        host.web = host.web.model_copy(update={"address": web})
    if learn:
        sandbox = host.runner.sandbox.model_copy(update={"learn": True})
        host.runner = host.runner.model_copy(update={"sandbox": sandbox})
    if not host.plugin_dirs:  # a pure gateway starts no runner: no fork server to keep ready
        host.runner = host.runner.model_copy(update={"fork_server": False})
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
    if not config.host.plugin_dirs and not config.mcp.servers:
        raise click.UsageError(
            "nothing to serve: pass --plugins DIR, or a --config with host.plugin_dirs or "
            "[mcp.servers]"
        )
    configure_logging(config.serve.log_format, ctx.obj["verbose"])
    sys.exit(run(run_serve(config, strict=strict)))


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
@json_option
@click.option(
    "--timeout", default=20.0, show_default=True, help="Seconds each plugin may take to load."
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The plughost.toml the plugins will run under (its network grants).",
)
@click.option(
    "--answers",
    "answers_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A TOML file of answers to capabilities your application provides, such as "
    '"config.get" = { success = true, value = "麦麦" }.',
)
def check(
    dirs: tuple[Path, ...],
    as_json: bool,
    timeout: float,
    config_file: Path | None,
    answers_file: Path | None,
) -> None:
    """Validate plugin folders before deploying: manifests, imports, declarations, schemas.

    Each plugin is loaded in a throwaway runner. Every problem is reported with
    its file, line and a fix. Exit 0 when there is no error (warnings allowed),
    1 otherwise.

    A capability your application provides (send.*, config.get, ...) that a
    plugin calls while loading is answered by a marked stand-in, or by
    --answers; the report lists which, per plugin.

    It also warns about a plugin whose code imports a network client but has
    no network grant (in --config's plughost.toml, or by default).

    \b
    Examples:
      plughost check plugins
      plughost check plugins/weather_tools --json
      plughost check plugins --config plughost.toml
      plughost check plugins --answers answers.toml
    """
    from plughost.cli.stand_ins import load_answers

    settings = load_config(config_file).host
    try:
        answers = load_answers(answers_file) if answers_file is not None else {}
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    sys.exit(run(_check(list(dirs), as_json, timeout, settings, answers)))


async def _check(
    dirs: list[Path],
    as_json: bool,
    timeout: float,
    settings: HostSettings,
    answers: dict[str, Any],
) -> int:
    import logging

    from rich.console import Console

    from plughost.cli.checker import check_plugins
    from plughost.cli.component_checks import summarize
    from plughost.cli.console import print_json, stderr

    logging.basicConfig(level=logging.CRITICAL)
    logging.getLogger("plughost").setLevel(logging.CRITICAL)
    if stderr.is_terminal and not as_json:
        with stderr.status("loading plugins in throwaway runners..."):
            report = await check_plugins(dirs, timeout=timeout, settings=settings, answers=answers)
    else:
        report = await check_plugins(dirs, timeout=timeout, settings=settings, answers=answers)
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
    for plugin_id, used in report.stood_in.items():
        answered = ", ".join(f"{name} ({how})" for name, how in used.items())
        line = f"note: {plugin_id}: answered for the application while loading: {answered}"
        console.print(line, style="cyan", markup=False, highlight=False)
    summary = f"{len(report.plugins_ok)} ok, {len(report.errors)} error(s), "
    console.print(summary + f"{len(report.warnings)} warning(s)", highlight=False)
    return 0 if report.ok else EXIT_FAILED


def _add_commands() -> None:
    # Each imports only click at the top, like this module.
    from plughost.cli.credentials import runner_credentials
    from plughost.cli.grants import grant
    from plughost.cli.one_shot_commands import call, components, search, tools

    for command in (tools, components, call, search, grant, runner_credentials):
        cli.add_command(command)


_add_commands()


def main() -> None:
    """Console-script entry point: exits without the interpreter's teardown (see quick_exit)."""
    from plughost.cli.quick_exit import run_and_exit

    run_and_exit(lambda: cli(prog_name="plughost"))


def _answer_first(config_file: Path | None, plugin_dirs: tuple[Path, ...]) -> None:
    """Answer the client's ``initialize`` and first ``tools/list`` while serve loads.

    From the last run's answers (:mod:`plughost.mcp.first_answers`); anything
    unreadable leaves every request to the session.
    """
    import tomllib

    from plughost.mcp import early_launch, first_answers

    raw: bytes | None = None
    data: dict[str, Any] = {}
    if config_file is not None:
        try:
            raw = config_file.read_bytes()
            data = tomllib.loads(raw.decode("utf-8"))
        except (OSError, ValueError):
            return  # the configuration's own loading reports it
    try:
        folder = early_launch.catalogue_folder(config_file, data)
        key = first_answers.memo_key(raw, [str(d) for d in plugin_dirs], __version__)
        base = config_file.resolve().parent if config_file is not None else Path.cwd()
    except OSError:  # the working directory is gone: no memo can be told apart
        return
    listed = _table(data, "host").get("plugin_dirs")
    folders = [str(base / d) for d in listed or [] if isinstance(d, str)]  # as ServeConfig does
    folders += [str(d) for d in plugin_dirs]
    servers = [str(name) for name in _table(_table(data, "mcp"), "servers")]
    first_answers.start(folder / first_answers.MEMO_FILE, key, folders, servers)


def _table(data: dict[str, Any], name: str) -> dict[str, Any]:
    table = data.get(name)
    return table if isinstance(table, dict) else {}
