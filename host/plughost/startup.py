"""What a host settles before its first runner starts: the fork server and the sandbox.

Both wait on a child interpreter starting (about 0.1 s each), so
:meth:`~plughost.host.PluginHost.start` runs them side by side. A command may have
started them already, ahead of its own imports (:mod:`plughost.runners.early`);
the host adopts those when they fit its settings and closes them otherwise. Kept
apart from :mod:`plughost.host` because this is the one-off start-up of what every
runner shares, not the running of plugins.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable

from plughost.runners.early import EarlyChildren, start_fork_server
from plughost.runners.fork_server import ForkServer
from plughost.runners.sandbox import SandboxReport, SandboxSupport, probe_support, sandbox_report
from plughost.runners.spawn import runner_env
from plughost.settings import RunnerSettings

__all__ = ["adopt_early", "fork_server_starting", "plan_sandbox"]

log = logging.getLogger(__name__)


async def adopt_early(early: EarlyChildren | None, runner: RunnerSettings) -> EarlyChildren | None:
    """The caller's early children if they are the ones these settings ask for.

    Early children started for other settings are closed.
    """
    env = runner_env(runner.env_allowlist)
    fits = early is not None and early.fits(
        env, ready_timeout=runner.ready_timeout, fork_timeout=runner.fork_timeout
    )
    if early is not None and not fits:
        await early.aclose()
        return None
    return early


async def fork_server_starting(
    early: EarlyChildren | None, runner: RunnerSettings
) -> Awaitable[ForkServer | None] | None:
    """The fork server being started for a host: the caller's early one if any.

    None when the settings ask for no fork server (an early one is closed then).
    """
    if not runner.fork_server:
        if early is not None:
            server = await early.fork_server
            if server is not None:
                await server.aclose()
        return None
    if early is not None:
        return early.fork_server
    return start_fork_server(
        runner_env(runner.env_allowlist),
        ready_timeout=runner.ready_timeout,
        fork_timeout=runner.fork_timeout,
    )


async def plan_sandbox(
    runner: RunnerSettings, probe: Awaitable[SandboxSupport] | None
) -> SandboxReport:
    """Find out which protections runners get; refuse to start without required ones.

    Args:
        runner: The runner settings; ``runner.sandbox`` says what is wanted.
        probe: The probe a command started early, or None to probe here.

    Raises:
        RunnerStartError: a protection in ``runner.sandbox.require`` is not available.
    """
    settings = runner.sandbox
    if settings.enabled:
        if probe is None:
            probe = probe_support(env=runner_env(runner.env_allowlist))
        support = await probe
    else:
        if probe is not None:  # started early for nothing: its answer is not needed
            await probe
        support = SandboxSupport(frozenset())
    report = sandbox_report(settings, support)
    lacking = [p for p in report.missing if p != "pid_namespace" or settings.pid_namespace]
    if report.enabled and lacking:  # plugins run with less than the operator asked for
        log.warning("%s", report.describe())
    else:
        log.info("%s", report.describe())
    return report
