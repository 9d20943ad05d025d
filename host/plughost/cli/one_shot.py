"""The machinery of a one-shot command: load plugins into a short-lived host, ask, exit.

``tools``, ``components``, ``call`` and ``search`` (:mod:`plughost.cli.one_shot_commands`)
each start a host, ask it one thing and stop it; what they share lives here: checking
``--plugins`` and ``--config`` before anything starts (``one_shot``), reading them
(``OneShot``), and the host itself with a spinner while plugins start (``quiet_host``).
``load_config`` and ``run`` serve the long-running ``serve`` and ``check`` as well.

Only click is imported at the top, since ``plughost --help`` loads this module: the
host, pydantic, rich and asyncio are imported when a command runs.
"""

from __future__ import annotations

import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from plughost.cli.serve_config import ServeConfig
    from plughost.host import PluginHost
    from plughost.mcp.config import MCPConfig
    from plughost.settings import HostSettings

__all__ = [
    "OneShot",
    "load_config",
    "one_shot",
    "one_shot_config",
    "quiet_host",
    "require_dirs",
    "run",
    "throwaway_settings",
]


def run(main: Coroutine[Any, Any, int]) -> int:
    """Run a command's coroutine on a new event loop and return its exit code."""
    import asyncio  # 40 ms: only commands that start an event loop pay for it

    return asyncio.run(main)


def require_dirs(plugin_dirs: tuple[Path, ...]) -> None:
    """Raise a usage error unless ``--plugins`` names at least one existing folder."""
    if not plugin_dirs:
        raise click.UsageError("pass --plugins DIR (a folder of plugin folders)")
    missing = [str(d) for d in plugin_dirs if not d.exists()]
    if missing:
        raise click.UsageError(f"no such folder: {', '.join(missing)}")


def throwaway_settings(scratch: Path, load_timeout: float) -> HostSettings:
    """Settings of a private host that loads plugins only to look at them.

    Data and temp directories in ``scratch``; a crash while loading is the
    answer, not something to retry; the plugin folders are left as they are
    (no ``config.toml`` written). ``check`` and ``runner-credentials --pin`` use it.
    """
    from plughost.settings import HostSettings, RunnerSettings

    runner = RunnerSettings(
        ready_timeout=load_timeout,
        on_load_timeout=load_timeout,
        max_restarts=0,
        shutdown_drain=0.5,
        term_timeout=1.0,
    )
    return HostSettings(
        data_dir=scratch / "data",
        temp_dir=scratch / "temp",
        runner=runner,
        write_plugin_config=False,
    )


def load_config(path: Path | None) -> ServeConfig:
    """The ``--config`` file (the defaults without one); a bad file is a usage error."""
    from plughost.cli.serve_config import ConfigFileError, ServeConfig

    if path is None:
        return ServeConfig()
    try:
        return ServeConfig.load(path)
    except ConfigFileError as exc:
        raise click.UsageError(str(exc)) from None


def one_shot_config(plugin_dirs: tuple[Path, ...], config_file: Path | None) -> ServeConfig:
    """The configuration of ``tools`` and ``call``: the file's, plus the ``--plugins`` folders."""
    config = load_config(config_file)
    if plugin_dirs or config_file is None:
        require_dirs(plugin_dirs)
    dirs = [*config.host.plugin_dirs, *plugin_dirs]
    if not dirs and not config.mcp.servers:
        raise click.UsageError(
            "nothing to load: pass --plugins DIR, or a --config with host.plugin_dirs or "
            "[mcp.servers]"
        )
    host = config.host.model_copy(update={"plugin_dirs": dirs})
    return config.model_copy(update={"host": host})


class OneShot:
    """What a one-shot command loads: its ``--plugins`` folders and ``--config`` file."""

    def __init__(self, plugin_dirs: tuple[Path, ...], config_file: Path | None) -> None:
        self.plugin_dirs = plugin_dirs
        self.config_file = config_file
        self.scratch: Path | None = None

    def load(self) -> tuple[HostSettings, MCPConfig | None]:
        """The host's settings and, if any are configured, the upstream MCP servers.

        Also imports the host while at it (see ``quiet_host``). Without ``--config``
        the settings are the defaults plus the ``--plugins`` folders, and the serve
        configuration's modules (the MCP configuration among them) are not imported.
        The plugins' data and temp directories then live in a scratch directory
        (:attr:`scratch`, removed when the command ends): a command that only asks
        leaves nothing in the working directory, and never touches the data of a
        ``serve`` started there.
        """
        if self.config_file is None:
            import tempfile

            from plughost.settings import HostSettings

            self.scratch = Path(tempfile.mkdtemp(prefix="plughost-"))
            settings = HostSettings(
                plugin_dirs=list(self.plugin_dirs),
                data_dir=self.scratch / "data",
                temp_dir=self.scratch / "temp",
            )
            mcp = None
        else:
            config = one_shot_config(self.plugin_dirs, self.config_file)
            settings, mcp = config.host, (config.mcp if config.mcp.servers else None)
        # The costly part, done here, off the event loop: the host, and the console
        # (rich) every one-shot command prints with.
        import plughost.cli.console
        import plughost.host  # noqa: F401

        return settings, mcp


def one_shot(plugin_dirs: tuple[Path, ...], config_file: Path | None) -> OneShot:
    """Check what can be checked before anything starts; the rest is read by ``quiet_host``."""
    if config_file is None:
        require_dirs(plugin_dirs)
    return OneShot(plugin_dirs, config_file)


class quiet_host:  # noqa: N801 - used like a function: `async with quiet_host(config)`
    """A PluginHost for one-shot commands, with a spinner while plugins start.

    The fork server and the sandbox probe start first, and the configuration and
    the host's modules are read while they do (:mod:`plughost.runners.early`): on
    two cores the command then waits for the longer of the two, not for both.

    The configuration's upstream MCP servers are added as a tool provider, as
    ``serve`` does; the MCP SDK is imported only when there are some.
    """

    def __init__(self, one_shot: OneShot) -> None:
        self._one_shot = one_shot

    async def __aenter__(self) -> PluginHost:
        import asyncio

        from plughost.runners.early import EarlyChildren

        early = EarlyChildren.start()
        try:
            # In a thread, so the loop goes on starting the fork server meanwhile.
            settings, mcp = await asyncio.to_thread(self._one_shot.load)
            from plughost.host import PluginHost  # imported by load() already
        except BaseException:
            await early.aclose()
            self._remove_scratch()
            raise
        self._host = PluginHost(settings=settings, early=early)
        try:
            await self._start(mcp)
        except BaseException:
            await self.__aexit__()
            raise
        return self._host

    async def _start(self, mcp: MCPConfig | None) -> None:
        import logging

        from plughost.cli.console import stderr

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

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self._host.aclose()
        finally:
            self._remove_scratch()

    def _remove_scratch(self) -> None:
        scratch = self._one_shot.scratch
        if scratch is not None:
            import shutil

            shutil.rmtree(scratch, ignore_errors=True)
