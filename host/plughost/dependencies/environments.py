"""Environments of plugin packages: one per requirement set, shared, installed before loading.

An environment is a directory of installed packages (``uv pip install
--target``), not a virtual environment: a runner keeps the host's interpreter
(the fork server has it warm) and puts the directory first on ``sys.path``.
It holds only what the host's environment does not already meet: a plugin
whose every requirement is installed beside the runner gets no environment.
The runner's own packages are pinned for the installation and imported before
any plugin, so a plugin never replaces them. It is
named by a digest of the normalized requirement set, the runner's pinned
packages and the interpreter's version, so plugins asking for the same set
share one, and a different runner or Python gets a fresh one. It is built in
a temporary directory and renamed into place, so a half-built one is never
used; an asyncio lock per digest makes two plugins wanting the same set wait
for one installation. The sandbox lets a runner read its plugins'
environments and nothing else of the store (:mod:`plughost.runners.sandbox`).

What does not live here: reading requirements (:mod:`.requirements`),
running uv (:mod:`.installer`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import secrets
import shutil
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

from plughost.dependencies.installer import InstallError, install_command, run_install
from plughost.dependencies.requirements import (
    Declared,
    DependencyError,
    declares_packages,
    plugin_requirements,
)
from plughost.dependencies.runner_packages import already_met, conflicts, constraints
from plughost.events import EventBus, EventKind, LifecycleEvent
from plughost.plugins.source import PluginProblem, PluginSource
from plughost.settings import HostSettings

__all__ = ["PluginEnvironments"]

log = logging.getLogger(__name__)

R = TypeVar("R")
STORE = ".packages"  # under the data directory, beside the plugins' own
SITE = "site"
MARKER = "plughost-environment.json"
_PROGRESS_LINES = 40  # progress events per installation at most; the rest goes to the log


class PluginEnvironments:
    """The host's store of plugin environments."""

    def __init__(
        self,
        settings: Callable[[], HostSettings],
        events: EventBus,
        record_problem: Callable[[PluginProblem], None],
    ) -> None:
        """Keep environments per the settings ``settings()`` returns at each use."""
        self._settings = settings
        self._events = events
        self._record_problem = record_problem
        self._locks: dict[str, asyncio.Lock] = {}

    @property
    def root(self) -> Path:
        """Where the environments live."""
        settings = self._settings()
        return (settings.dependencies.root or settings.data_dir / STORE).resolve()

    @property
    def cache(self) -> Path:
        """uv's cache, shared by every installation."""
        return (self._settings().dependencies.cache_dir or self.root / "cache").resolve()

    async def start_runners(
        self,
        sources: Sequence[PluginSource],
        start: Callable[[list[PluginSource]], Awaitable[list[R]]],
    ) -> list[R]:
        """Start plugins without packages at once, the others as their environments are ready.

        A plugin whose packages cannot be installed is recorded as a problem; the
        others run. Plugins with packages get runners of their own, since one
        process has one ``sys.path``.
        """
        declares = [declares_packages(s) for s in sources]  # two stat calls each: once
        plain = [s for s, d in zip(sources, declares, strict=True) if not d]
        declaring = [s for s, d in zip(sources, declares, strict=True) if d]

        async def prepared(source: PluginSource) -> list[R]:
            try:
                ready = await self.prepare(source)
            except DependencyError as exc:
                self._record_problem(problem_of(source, exc))
                return []
            return await start([ready])

        started = await asyncio.gather(start(plain), *(prepared(s) for s in declaring))
        return [runner for group in started for runner in group]

    async def prepare(self, source: PluginSource) -> PluginSource:
        """``source`` with its environment, installed first if needed.

        Raises:
            DependencyError: a bad requirement, a conflict with the runner's own
                packages, or the installer's failure (its reason).
        """
        declared = await asyncio.to_thread(plugin_requirements, source)
        if not declared:
            return dataclasses.replace(source, packages=None)
        pins = await asyncio.to_thread(constraints)  # reads installed metadata, once
        _refuse_conflicts(source, declared)
        missing, met = await asyncio.to_thread(
            already_met, [d.requirement for d in declared.values()]
        )
        if not missing:
            log.debug("plugin %s: every declared package is installed already", source.plugin_id)
            return dataclasses.replace(source, packages=None)
        declared = {name: item for name, item in declared.items() if item.requirement in missing}
        pins = sorted({*pins, *met})
        lines = [str(d.requirement) for d in declared.values()]
        digest = environment_digest(lines, pins)
        lock = self._locks.setdefault(digest, asyncio.Lock())
        async with lock:
            env = self.root / digest
            if not (env / MARKER).is_file():
                await self._install(source, declared, pins, env)
        return dataclasses.replace(source, packages=env / SITE)

    async def _install(
        self, source: PluginSource, declared: dict[str, Declared], pins: list[str], env: Path
    ) -> None:
        lines = [str(d.requirement) for d in declared.values()]
        settings = self._settings().dependencies
        where = "the wheel directory only" if settings.offline else "PyPI"
        self._emit(
            EventKind.PACKAGES_INSTALLING,
            f"plugin {source.plugin_id}: installing {', '.join(lines)} from {where} "
            f"(environment {env.name})",
            source.plugin_id,
            packages=lines,
            environment=str(env),
        )
        started = time.perf_counter()
        building = env.with_name(f".{env.name}.{secrets.token_hex(4)}")
        try:
            await self._run_uv(source, lines, pins, building)
            await asyncio.to_thread(_finish, building, env, lines, pins)
        except InstallError as exc:
            named = _named(declared, str(exc))
            raise DependencyError(
                source.plugin_id,
                declared[named[0]].file,
                [str(declared[n].requirement) for n in named],
                f"cannot install {', '.join(named)}: {exc}",
            ) from None
        finally:
            shutil.rmtree(building, ignore_errors=True)
        elapsed = time.perf_counter() - started
        self._emit(
            EventKind.PACKAGES_INSTALLED,
            f"plugin {source.plugin_id}: packages installed in {elapsed:.1f} s ({env.name})",
            source.plugin_id,
            seconds=elapsed,
            environment=str(env),
        )

    async def _run_uv(
        self, source: PluginSource, lines: list[str], pins: list[str], building: Path
    ) -> None:
        requirements, constraints = building / "requirements.in", building / "constraints.in"
        await asyncio.to_thread(_stage, building, self.cache, lines, pins)
        settings = self._settings().dependencies
        command = install_command(
            settings,
            requirements=requirements,
            constraints=constraints,
            target=building / SITE,
            cache=self.cache,
        )
        shown = 0

        def progress(line: str) -> None:
            nonlocal shown
            log.debug("uv plugin=%s: %s", source.plugin_id, line)
            shown += 1
            if shown <= _PROGRESS_LINES:
                self._emit(
                    EventKind.PACKAGES_PROGRESS,
                    f"plugin {source.plugin_id}: {line}",
                    source.plugin_id,
                )

        await run_install(command, settings.install_timeout, progress)

    def _emit(self, kind: EventKind, message: str, plugin_id: str, **details: object) -> None:
        self._events.emit(LifecycleEvent(kind, message, plugin_id=plugin_id, details=details))


def _stage(building: Path, cache: Path, lines: list[str], pins: list[str]) -> None:
    """Make the directory an environment is built in, with uv's input files."""
    building.mkdir(parents=True)
    cache.mkdir(parents=True, exist_ok=True)
    (building / "requirements.in").write_text("\n".join(lines) + "\n")
    (building / "constraints.in").write_text("\n".join(pins) + "\n")


def _finish(building: Path, env: Path, lines: list[str], pins: list[str]) -> None:
    """Move a built environment into place, marked complete."""
    (building / MARKER).write_text(json.dumps({"requirements": lines, "pins": pins}))
    if env.exists():  # left by an installation that never finished
        shutil.rmtree(env)
    building.rename(env)


def environment_digest(requirements: Sequence[str], pins: Sequence[str]) -> str:
    """The name of the environment of a normalized requirement set."""
    python = f"{sys.implementation.cache_tag}-{sys.platform}"
    text = "\n".join([python, *requirements, "--", *pins])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def problem_of(source: PluginSource, exc: DependencyError) -> PluginProblem:
    """The problem a plugin whose packages failed is recorded with."""
    return PluginProblem(source.path, "packages", exc.reason, source.plugin_id, exc.file)


def _refuse_conflicts(source: PluginSource, declared: dict[str, Declared]) -> None:
    for name, item in declared.items():
        found = conflicts([item.requirement])
        if found:
            raise DependencyError(
                source.plugin_id, item.file, [str(item.requirement)], f"{name}: {found[0]}"
            )


def _named(declared: dict[str, Declared], reason: str) -> list[str]:
    """The declared packages uv's reason names (all of them when it names none)."""
    text = reason.lower().replace("_", "-")
    named = [name for name in declared if name in text]
    return named or list(declared)
