"""The fork server and the sandbox probe, started before the host's own imports.

``plughost tools`` and ``plughost call`` spend about as long importing the host
(pydantic, the SDK, the tool layer) as they wait on children: the fork server
and the sandbox probe are interpreters that start and import too. Done one
after the other, one of a two-core machine's cores idles through each half.
:meth:`EarlyChildren.start` starts both first, from nothing but the
environment, so they work while the command imports;
:class:`~plughost.host.PluginHost` adopts them (``PluginHost(..., early=...)``)
when they are the children its settings ask for (same runner environment and
timeouts), and otherwise closes them and starts its own.

This module and the two it starts from import no settings (they cost pydantic,
the thing to overlap): the defaults it assumes are pinned to
``RunnerSettings``' by a test, and so is the import graph. What does not live
here: the fork server (:mod:`plughost.runners.fork_server`) and the probe
(:mod:`plughost.runners.sandbox_probe`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from plughost.runners.fork_server import ForkServer, ForkServerError
from plughost.runners.sandbox_probe import SandboxSupport, probe_support
from plughost.runners.spawn import runner_env

__all__ = ["DEFAULT_FORK_TIMEOUT", "DEFAULT_READY_TIMEOUT", "EarlyChildren", "start_fork_server"]

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
class EarlyChildren:
    """A fork server and a sandbox probe being started, and what they were started for."""

    env: dict[str, str]
    ready_timeout: float
    fork_timeout: float
    fork_server: asyncio.Task[ForkServer | None]
    probe: asyncio.Task[SandboxSupport]

    @classmethod
    def start(
        cls,
        allowlist: Iterable[str] = (),
        *,
        ready_timeout: float = DEFAULT_READY_TIMEOUT,
        fork_timeout: float = DEFAULT_FORK_TIMEOUT,
    ) -> EarlyChildren:
        """Start both on the running loop, for runners of these settings."""
        env = runner_env(allowlist)
        starting = start_fork_server(env, ready_timeout=ready_timeout, fork_timeout=fork_timeout)
        fork_server = asyncio.ensure_future(starting)
        probe = asyncio.ensure_future(probe_support(env=env))
        return cls(env, ready_timeout, fork_timeout, fork_server, probe)

    def fits(self, env: Mapping[str, str], *, ready_timeout: float, fork_timeout: float) -> bool:
        """Whether these are the children a host with these settings would start."""
        return (
            dict(env) == self.env
            and ready_timeout == self.ready_timeout
            and fork_timeout == self.fork_timeout
        )

    async def aclose(self) -> None:
        """Stop them once started, for a host that does not take them over (or never starts)."""
        outcomes = await asyncio.gather(self.fork_server, self.probe, return_exceptions=True)
        if isinstance(outcomes[0], ForkServer):
            await outcomes[0].aclose()
