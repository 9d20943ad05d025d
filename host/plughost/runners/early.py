"""A fork server started before the host's own imports, for commands that run once.

``plughost tools`` and ``plughost call`` spend about as long importing the host
(pydantic, the SDK, the tool layer) as they wait for the fork server, itself an
interpreter that starts and imports the runner. Done one after the other, one
of a two-core machine's cores idles through each. :func:`start_early` starts
the fork server first, from nothing but the environment, so it imports while
the command does; :class:`~plughost.host.PluginHost` adopts it
(``PluginHost(..., early=...)``) when it is the one the settings ask for (same
runner environment and timeouts), and otherwise closes it and starts its own.

This module imports no settings (they cost pydantic, the thing to overlap): the
defaults it guesses are pinned to ``RunnerSettings``' by a test. What does not
live here: the fork server itself (:mod:`plughost.runners.fork_server`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from plughost.runners.fork_server import ForkServer, ForkServerError
from plughost.runners.spawn import runner_env

__all__ = ["DEFAULT_FORK_TIMEOUT", "DEFAULT_READY_TIMEOUT", "EarlyForkServer", "start_fork_server"]

log = logging.getLogger(__name__)

DEFAULT_READY_TIMEOUT = 20.0
"""``RunnerSettings.ready_timeout``'s default (a test keeps them equal)."""
DEFAULT_FORK_TIMEOUT = 3.0
"""``RunnerSettings.fork_timeout``'s default (a test keeps them equal)."""


async def start_fork_server(
    env: Mapping[str, str], *, ready_timeout: float, fork_timeout: float
) -> ForkServer | None:
    """Start a fork server for runners with ``env``; None when it cannot start."""
    server = ForkServer(env, ready_timeout=ready_timeout, fork_timeout=fork_timeout)
    try:
        await server.start()
    except ForkServerError as exc:
        log.warning("runners start as new interpreters: %s", exc)
        return None
    return server


@dataclass(slots=True)
class EarlyForkServer:
    """A fork server being started, and what it was started for."""

    env: dict[str, str]
    ready_timeout: float
    fork_timeout: float
    task: asyncio.Task[ForkServer | None]

    @classmethod
    def start(
        cls,
        allowlist: Iterable[str] = (),
        *,
        ready_timeout: float = DEFAULT_READY_TIMEOUT,
        fork_timeout: float = DEFAULT_FORK_TIMEOUT,
    ) -> EarlyForkServer:
        """Start one on the running loop, for runners of these settings."""
        env = runner_env(allowlist)
        starting = start_fork_server(env, ready_timeout=ready_timeout, fork_timeout=fork_timeout)
        return cls(env, ready_timeout, fork_timeout, asyncio.ensure_future(starting))

    def fits(self, env: Mapping[str, str], *, ready_timeout: float, fork_timeout: float) -> bool:
        """Whether this is the fork server a host with these settings would start."""
        return (
            dict(env) == self.env
            and ready_timeout == self.ready_timeout
            and fork_timeout == self.fork_timeout
        )

    async def aclose(self) -> None:
        """Stop it once started, for a host that does not take it over (or never starts)."""
        outcome = (await asyncio.gather(self.task, return_exceptions=True))[0]
        if isinstance(outcome, ForkServer):
            await outcome.aclose()
