"""``plughost serve``: the host as a long-running process.

Starts the plugins with a progress line, prints the plugin table and every
failure with its reason, then streams lifecycle events while hot reload,
upstream MCP servers and (optionally) an MCP server of our own run. The first
Ctrl-C (or SIGTERM) drains calls and stops runners; a second one kills them.
Human output goes to stderr, so ``--mcp-stdio`` can own stdout.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import logging
import os
import signal
import sys
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from plughost.cli.console import (
    JsonLogFormatter,
    QuietOnBrokenPipe,
    event_line,
    plugins_table,
    stderr,
)
from plughost.cli.serve_config import ServeConfig
from plughost.cli.serve_start import register_host_tools, start_with_upstream
from plughost.events import EventKind, LifecycleEvent
from plughost.host import PluginHost
from plughost.mcp import early_launch
from plughost.mcp.bearer import load_or_create_token

if TYPE_CHECKING:
    # The MCP SDK (about 0.6 s to import) only when serve serves MCP or has upstreams:
    # the functions below that need them import them (tests/host/cli/test_lazy_imports.py).
    from plughost.mcp.registry_server import ToolSource
    from plughost.mcp.warm_start import WarmStart

__all__ = [
    "EXIT_FAILED",
    "EXIT_FORCED",
    "EXIT_OK",
    "EXIT_STARTUP_FAILED",
    "configure_logging",
    "register_host_tools",
    "serve",
]

log = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_STARTUP_FAILED = 3
EXIT_FORCED = 130


def configure_logging(log_format: str, verbose: int) -> None:
    """Route logs to stderr: readable text, or JSON lines for machines."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonLogFormatter())
    else:
        handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s", "%H:%M:%S")
        )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose > 1 else logging.INFO)
    # Lifecycle events are printed by serve itself; their log copies would repeat them.
    logging.getLogger("plughost.events").setLevel(logging.CRITICAL)
    if not verbose:
        for noisy in ("plughost.tools.registry", "watchfiles", "mcp", "httpx2", "uvicorn"):
            logging.getLogger(noisy).setLevel(logging.WARNING)


async def serve(config: ServeConfig, *, strict: bool = False) -> int:
    """Run the host until interrupted; return the process exit code."""
    stop = asyncio.Event()
    token = None
    if config.serve.mcp == "http":
        try:
            token = _bearer_token(config)
        except (OSError, ValueError) as exc:
            stderr.print(f"[bold red]cannot serve MCP over HTTP:[/bold red] {exc}")
            return EXIT_STARTUP_FAILED
    host = PluginHost(settings=config.host)
    if token is not None:
        host.redactor.add(token)  # a secret of the host's: masked in everything it logs
    printer = _EventPrinter(config.serve.log_format)
    host.events.add_callback(printer)
    _install_signals(stop, host, config)
    code = EXIT_FAILED
    try:
        try:
            async with contextlib.AsyncExitStack() as console:
                if config.host.web.address and not await _start_console(console, host, config):
                    return EXIT_FAILED
                code = await _serve_started(host, config, stop, printer, strict, token)
        finally:
            with contextlib.suppress(Exception):
                _notice(config, "stopping runners...", event="serve.stopping")
            learn = config.host.runner.sandbox.learn
            learned = (host.learned_network(), host.learned_writes()) if learn else None
            await host.aclose()
            if learned is not None:
                with contextlib.suppress(OSError):
                    _print_learned(*learned, config.serve.log_format)
    finally:
        early_launch.discard()  # a server started early that no connection claimed
        if stop.is_set() or config.serve.mcp == "stdio":
            # The host is closed: nothing left matters. The interpreter's exit would
            # still join worker threads that never end, or end late: the MCP SDK's
            # stdin reader (a client may keep stdin open after SIGTERM), an idle AnyIO
            # worker whose event loop is gone (with stderr piped to a tee the same
            # Ctrl-C ended), the search model still loading when a client that opens
            # a session per call closes stdin and waits for the process to end.
            from plughost.cli.quick_exit import exit_now

            exit_now(code)
    return code


async def _serve_started(
    host: PluginHost,
    config: ServeConfig,
    stop: asyncio.Event,
    printer: _EventPrinter,
    strict: bool,
    token: str | None,
) -> int:
    """Start the plugins, report them, and run the workers until ``stop``.

    The MCP server (stdio or HTTP) answers from the start: ``tools/list`` from
    the catalogue of the last live list while the plugins and upstream servers
    start, a call once its own source is up (:mod:`plughost.mcp.warm_start`).
    """
    stopping, written, listening = asyncio.Event(), asyncio.Event(), asyncio.Event()
    # Only the MCP server asked for: "none" (the default) opens no port at all.
    warm = _warm_start(host, config, strict) if config.serve.mcp != "none" else None
    if warm is not None:
        await warm.load()
    stdio = http = None
    if warm is not None and config.serve.mcp == "stdio":
        stdio = _serve_stdio(warm, config, stopping, written)
    elif warm is not None and config.serve.mcp == "http":
        # Before the host starts, so not in the serving task group: owned here, and
        # cancelled and awaited below whatever happens.
        http = asyncio.ensure_future(_serve_http(warm, config, token, stopping, listening))
    try:
        if http is not None and not await _listening(http, listening):
            return EXIT_STARTUP_FAILED
        try:
            async with _progress(host, config):
                started = await _started_unless_stopped(
                    start_with_upstream(host, config), stop, stdio
                )
        except BaseException:
            if stdio is not None:
                stdio.cancel()
            raise
        if not started:  # stopped, or the stdio client gone, while the plugins started
            if stdio is not None and not stdio.done():
                stdio.cancel()
            elif stdio is not None and not stdio.cancelled():
                stdio.result()  # the client closed stdin: raise what the server raised, if anything
            return EXIT_OK
        _print_summary(
            host,
            config.serve.log_format,
            watching=_watching(config),
            gateway_only=not config.host.plugin_dirs,
        )
        printer.quiet = False
        if strict and host.problems:
            if stdio is not None:
                # Refused: the clients' held calls never ran. serve() ends the process
                # at once, as after a stop, since the stdin reader never ends.
                stop.set()
                stdio.cancel()
            return EXIT_STARTUP_FAILED
        await _serve_until_stopped(host, config, stop, warm, stdio, http, stopping, written)
    finally:
        if http is not None and not http.done():
            http.cancel()
            await asyncio.wait([http])
    if stdio is not None and stdio.done() and not stdio.cancelled():
        stdio.result()  # the client closed stdin: raise what the server raised, if anything
    if http is not None and http.done() and not http.cancelled():
        http.result()  # the HTTP server failed: raise what it raised
    return EXIT_OK


async def _started_unless_stopped(
    starting: Awaitable[None], stop: asyncio.Event, stdio: asyncio.Future[None] | None
) -> bool:
    """Run the start to its end, unless serve is stopped or its stdio client leaves first.

    A start can take long (a plugin's ``on_load`` up to its timeout, packages
    installing): a SIGTERM, a Ctrl-C or a client that closed stdin then ends it,
    cancelled, rather than waiting for it. Returns whether the start finished.
    """
    start: asyncio.Future[Any] = asyncio.ensure_future(starting)
    stopped: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
    ends: set[asyncio.Future[Any]] = {start, stopped}
    if stdio is not None:
        ends.add(stdio)
    try:
        await asyncio.wait(ends, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        if not start.done():
            start.cancel()
            await asyncio.wait([start])
    if start.cancelled():
        return False
    start.result()  # what the start raised, if anything
    return True


async def _serve_until_stopped(
    host: PluginHost,
    config: ServeConfig,
    stop: asyncio.Event,
    warm: WarmStart | None,
    stdio: asyncio.Future[None] | None,
    http: asyncio.Task[None] | None,
    stopping: asyncio.Event,
    written: asyncio.Event,
) -> None:
    """Run hot reload and the MCP servers until ``stop`` (or stdin's end), then drain."""
    async with asyncio.TaskGroup() as group:
        workers, servers = _start_workers(group, host, config, http)
        if warm is not None:
            # Once the watcher has started: a client told the host is up may edit a
            # plugin at once, and expects the reload.
            await warm.go_live()
            workers.append(group.create_task(warm.keep_saved()))
        # One listing now, beside the servers: a plugin tool refused or renamed for its
        # name is reported at start, not at the first client's tools/list.
        names = group.create_task(_list_once(host))
        stop_wait = asyncio.ensure_future(stop.wait())
        # The end of stdin (the client left), or the HTTP server failing, ends serving too.
        ends = [server for server in (stdio, http) if server is not None]
        firsts: list[asyncio.Future[Any]] = [stop_wait, *ends]
        await asyncio.wait(firsts, return_when=asyncio.FIRST_COMPLETED)
        stop_wait.cancel()
        # Drain while the MCP servers still answer: calls in flight finish (or get
        # shutting_down at the drain deadline), new ones get shutting_down; then the
        # servers write out their last answers and end.
        await host.drain()
        stopping.set()
        grace = host.settings.runner.term_timeout + 3.0
        writing = stdio is not None and not stdio.done()
        waits = [*servers, *([asyncio.ensure_future(written.wait())] if writing else [])]
        if waits:
            await asyncio.wait(waits, timeout=grace)
        for worker in [*workers, *waits, names]:
            worker.cancel()


def _serve_stdio(
    source: ToolSource, config: ServeConfig, stopping: asyncio.Event, written: asyncio.Event
) -> asyncio.Future[None]:
    """Serve MCP on stdin/stdout until stdin closes or ``stopping`` is set.

    Not in the task group: once it has written its last answer it is left to the
    process's exit (see serve()), since its stdin reader cannot be cancelled.
    """
    from plughost.mcp.server import serve_stdio

    return asyncio.ensure_future(
        serve_stdio(
            source,
            page_size=config.serve.mcp_page_size,
            input_timeout=config.serve.mcp_input_timeout,
            max_parked=config.serve.mcp_max_parked_calls,
            stopping=stopping,
            written=written,
        )
    )


async def _listening(http: asyncio.Task[None], listening: asyncio.Event) -> bool:
    """Wait until the MCP HTTP server listens; False, said on stderr, if it cannot.

    Before any plugin starts: a port in use or a refused address ends serve at once.
    """
    ready = asyncio.ensure_future(listening.wait())
    await asyncio.wait([http, ready], return_when=asyncio.FIRST_COMPLETED)
    ready.cancel()
    if not http.done():
        return True
    reason = http.exception() or "the server ended before listening"
    stderr.print(f"[bold red]cannot serve MCP over HTTP:[/bold red] {reason}")
    return False


async def _serve_http(
    source: ToolSource,
    config: ServeConfig,
    token: str | None,
    stopping: asyncio.Event,
    listening: asyncio.Event,
) -> None:
    """Serve MCP over streamable HTTP until cancelled, or until ``stopping`` and its calls end."""
    from plughost.mcp.server import serve_http

    address, _, port = config.serve.mcp_http.rpartition(":")

    def announce(url: str) -> None:  # the port it took, when asked for port 0
        _notice(config, f"MCP over streamable HTTP on {url}", event="serve.mcp_http", url=url)

    await serve_http(
        source,
        address or "127.0.0.1",
        int(port),
        allow_remote=config.serve.allow_remote,
        bearer_token=token,
        session_idle_timeout=config.serve.mcp_session_idle_timeout,
        max_sessions=config.serve.mcp_max_sessions,
        page_size=config.serve.mcp_page_size,
        input_timeout=config.serve.mcp_input_timeout,
        max_parked=config.serve.mcp_max_parked_calls,
        stopping=stopping,
        ready=listening,
        announce=announce,
    )


def _warm_start(host: PluginHost, config: ServeConfig, strict: bool) -> WarmStart:
    """The registry as served before it is live, from the catalogue in the data directory.

    ``--strict`` may still refuse to serve when a plugin fails, so then no call
    runs before the host is live: a refused start has run nothing.
    """
    from plughost.cli.serve_catalogue import catalogue_for, fingerprints
    from plughost.mcp.warm_start import WarmStart

    return WarmStart(
        host.tools,
        catalogue_for(config),
        functools.partial(fingerprints, config),
        call_timeout=config.host.call_timeout,
        hold_calls=strict,
    )


async def _list_once(host: PluginHost) -> None:
    """List the tools once, so that name conflicts are reported now."""
    try:
        await host.tools.list_tools()
    except Exception:  # serving goes on; the next listing reports the same
        log.exception("listing the tools at start failed")


async def _start_console(
    stack: contextlib.AsyncExitStack, host: PluginHost, config: ServeConfig
) -> bool:
    """Serve the operator's console from the start, so it sees the plugins load."""
    from plughost.web import WebConsole

    settings = config.host.web
    if config.serve.allow_remote:
        settings = settings.model_copy(update={"allow_remote": True})
    try:
        console = await stack.enter_async_context(WebConsole(host, settings))
    except (ValueError, OSError) as exc:
        stderr.print(f"[bold red]cannot serve the console on {settings.address}: {exc}[/bold red]")
        return False
    if config.serve.log_format == "json":
        line = {"event": "web.started", "url": console.url, "login_url": console.login_url}
        sys.stderr.write(json.dumps(line) + "\n")
        sys.stderr.flush()
    else:
        stderr.print(f"console on {console.login_url}", markup=False, highlight=False)
    return True


def _start_workers(
    group: asyncio.TaskGroup,
    host: PluginHost,
    config: ServeConfig,
    http: asyncio.Task[None] | None,
) -> tuple[list[asyncio.Task[None]], list[asyncio.Task[None]]]:
    """Start hot reload beside the MCP HTTP server ``http`` (serving since the start).

    Returns:
        Every worker, and the MCP servers among them.
    """
    workers = []
    if _watching(config):
        workers.append(
            group.create_task(
                host.watch(force_polling=config.watch.poll, step_ms=config.watch.step_ms)
            )
        )
    servers = [] if http is None else [http]
    return [*workers, *servers], servers


def _watching(config: ServeConfig) -> bool:
    """Hot reload is on and there are plugin folders to watch (a pure gateway has none)."""
    return config.watch.enabled and bool(config.host.plugin_dirs)


def _bearer_token(config: ServeConfig) -> str:
    """The MCP HTTP token: the operator's, or a new one saved (0600) and shown this once."""
    path = config.serve.mcp_token_file or config.host.data_dir.parent / "mcp-token"
    path.parent.mkdir(parents=True, exist_ok=True)
    token, created = load_or_create_token(path)
    made = "a new one, saved to" if created else "the one in"
    _notice(
        config,
        f"MCP bearer token: {made} {path} (mode 0600; never printed): clients send "
        "'Authorization: Bearer <the file's content>'",
        event="serve.mcp_token",
        path=str(path),
        created=created,
    )
    return token


def _notice(config: ServeConfig, text: str, **fields: Any) -> None:
    """One line about what serve does: readable text, or a JSON object in a JSON log.

    Never a secret: a JSON log is shipped and kept, and so is a text one.
    """
    if config.serve.log_format == "json":
        sys.stderr.write(json.dumps(fields, default=str) + "\n")
        sys.stderr.flush()
    else:
        stderr.print(text, markup=False)


def _install_signals(stop: asyncio.Event, host: PluginHost, config: ServeConfig) -> None:
    loop = asyncio.get_running_loop()

    def interrupted() -> None:
        # Stop first, say so after: the Ctrl-C that reached serve may have ended the
        # program its output is piped to (tee), and writing then fails.
        if stop.is_set():
            for runner in host.runners():
                runner.kill()
            with contextlib.suppress(OSError):
                _notice(config, "forced stop: killing runners", event="serve.forced_stop")
            os._exit(EXIT_FORCED)
        stop.set()
        with contextlib.suppress(OSError):
            _notice(
                config,
                "shutting down: draining calls (Ctrl-C again to force)",
                event="serve.shutting_down",
            )

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, interrupted)


_SHOWN_AT_START = frozenset(
    {
        EventKind.PLUGIN_FAILED,
        EventKind.TOOL_NAME_CONFLICT,
        EventKind.PACKAGES_INSTALLING,  # an install can take minutes: say what is going on
        EventKind.PACKAGES_INSTALLED,
    }
)
"""Events printed even while the start is summarised by the plugin table."""


class _EventPrinter:
    """Prints lifecycle events as they happen (text lines or JSON lines)."""

    def __init__(self, log_format: str) -> None:
        self._json = log_format == "json"
        self._console = QuietOnBrokenPipe(stderr=True, highlight=False)
        self.quiet = True  # startup events are summarised by the table instead

    def __call__(self, event: LifecycleEvent) -> None:
        if self._json:
            sys.stderr.write(json.dumps(event.to_dict(), ensure_ascii=False, default=str) + "\n")
            sys.stderr.flush()
            return
        if self.quiet and event.kind not in _SHOWN_AT_START:
            return
        self._console.print(event_line(event))
        traceback = event.details.get("traceback")
        if traceback and event.kind in (EventKind.PLUGIN_FAILED, EventKind.RELOAD_FAILED):
            self._console.print(str(traceback).rstrip(), style="dim", markup=False)


@contextlib.asynccontextmanager
async def _progress(host: PluginHost, config: ServeConfig) -> Any:
    """A spinner with a count of plugins ready, while the host starts."""
    if config.serve.log_format == "json" or not stderr.is_terminal:
        yield
        return
    ready = 0
    with stderr.status("starting plugins...") as status:

        def count(event: LifecycleEvent) -> None:
            nonlocal ready
            if event.kind in (EventKind.PLUGIN_LOADED, EventKind.PLUGIN_FAILED):
                ready += 1
                status.update(f"starting plugins... {ready} done")
            elif event.kind is EventKind.PACKAGES_PROGRESS:
                status.update(f"starting plugins... {ready} done; {event.message}")

        host.events.add_callback(count)
        try:
            yield
        finally:
            host.events.remove_callback(count)


def _print_learned(
    network: dict[str, list[str]], writes: dict[str, list[str]], log_format: str
) -> None:
    """Learn mode's findings, as the tables to paste into plughost.toml."""
    if log_format == "json":
        report = {"event": "serve.learned", "network_grants": network, "write_grants": writes}
        sys.stderr.write(json.dumps(report) + "\n")
        return
    if not network and not writes:
        stderr.print("learn mode: no plugin opened a connection or was refused a write.")
        return
    lines: list[str] = []
    for table, found in (("network_grants", network), ("write_grants", writes)):
        if found:
            lines.append(f"[host.{table}]")
            lines += [f"{json.dumps(k)} = {json.dumps(v)}" for k, v in found.items()]
    stderr.print(
        "learn mode: the plugins reached these destinations and were refused these paths; "
        "paste into plughost.toml (or run plughost grant ID DESTINATION --config plughost.toml):",
        markup=False,
    )
    print("\n".join(lines), file=sys.stderr)


def _print_summary(
    host: PluginHost, log_format: str, *, watching: bool = True, gateway_only: bool = False
) -> None:
    rows = host.status()
    sandbox = host.sandbox
    if log_format == "json":
        summary = {
            "event": "serve.started",
            "plugins": [dataclasses.asdict(r) for r in rows],
            "sandbox": dataclasses.asdict(sandbox) if sandbox else None,
        }
        sys.stderr.write(json.dumps(summary, default=str) + "\n")
        return
    if gateway_only:
        stderr.print("No plugin folders: serving the upstream MCP servers only; Ctrl-C stops.")
        return
    stderr.print(plugins_table(rows))
    if sandbox is not None:
        stderr.print(sandbox.describe(), markup=False)
    for row in rows:
        if row.network:
            reach = ", ".join(row.network)
            stderr.print(f"network: {row.plugin_id} may reach {reach}", markup=False)
    if host.settings.runner.sandbox.learn:
        stderr.print(
            "[yellow]learn mode: plugins may reach any host but this one; the grants they "
            "needed are printed when serve stops[/yellow]"
        )
    loaded = sum(1 for r in rows if r.state == "loaded")
    failed = len(rows) - loaded
    watch = "Watching for changes" if watching else "Not watching for changes (--no-watch)"
    stderr.print(f"{loaded} plugin(s) loaded, {failed} failed. {watch}; Ctrl-C stops.")
