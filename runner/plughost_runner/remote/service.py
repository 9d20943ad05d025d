"""A remote runner's service: a spawned runner's, plus hot reload and rejoining a new host.

**Hot reload.** The runner watches its ``--plugins`` folder (``watchfiles``, as
the host's reloader does). When a plugin folder it serves changes (code,
manifest or ``config.toml``), it reads the folder again and offers the new
version to the host (``plugin.offer``: id, version, digest of the folder,
capabilities). Only when the host accepts it (the credential's allow-list,
version and manifest pin, checked on the host) is any of the new code imported.
The new version is loaded in this process under a fresh module namespace (the
loader imports each load as its own package, ``plughost_plugin_<id>_<n>``), so
nothing of the old version's modules is reused; then it takes the old one's
place for new calls, the host is told (``plugin.reloaded``, shaped like
``runner.ready``), and the old version unloads once the calls it was serving
have finished (``on_unload`` runs then). A broken edit (bad manifest, syntax
error, raising ``on_load``, a version the host refuses) is reported to the host
with the plugin, the file and the reason, and the old version keeps serving.

Why in this process rather than a fresh one per version: a remote runner is
one connection with one identity, which the host knows as one pool member and
which survives broken links; a second process per version would be a second
member to admit, balance and retire across the network. The plugin's own
modules are fresh on every load; what is shared is the interpreter (third-party
modules already imported, threads a plugin left running), which a restart of
the runner clears.

**New and removed folders.** A plugin folder that appears under ``--plugins``
is offered the same way (the host checks it against the allow-list and pins as
at the hello, and logs a refusal as it does there), loaded when accepted, and
reported; it then joins its pool on the host. A folder that disappears is
reported first (``plugin.removed``): the host takes this runner out of the
plugin's pool before it answers, so every call it sent before has arrived, and
the plugin unloads once those calls have finished. A folder whose manifest is
missing or broken is a broken edit, not a removal: the old version keeps serving.

**Watching.** Events (inotify) by default; ``poll`` for filesystems that send
none (bind mounts, network shares, some container volumes); or not at all.

**Rejoining.** A host that restarted has no session for this runner; it answers
the runner's heartbeat with ``runner.rejoin``, and the runner says hello again,
offering the plugins it serves now, and sends its ready report with what it
has loaded (nothing is reloaded). The new host's answer sets the heartbeat
interval, message size, log level and limits, as at the first hello (a limit
can be lowered, not raised again: ``setrlimit``'s rule for an unprivileged
process). A refusal then ends the runner with code 3, as at the first hello.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plughost_runner.link.bridge import Bridge, HostError
from plughost_runner.plugins.loader import (
    LoadedPlugin,
    LoadFailure,
    PluginSpec,
    load_plugin,
    unload_plugin,
)
from plughost_runner.process.capture import LogCollector
from plughost_runner.process.credentials import Credentials
from plughost_runner.remote.leaving import LeavingService
from plughost_runner.remote.offers import read_spec
from plughost_runner.remote.polling import Poller
from plughost_sdk import wire
from plughost_sdk.errors import ManifestError
from plughost_sdk.manifest import MANIFEST_FILE

__all__ = ["POLL_DELAY_MS", "RemoteService", "Watch"]

log = logging.getLogger("plughost_runner")

_IGNORED_SUFFIXES = (".pyc", ".pyo", ".swp", ".swx", ".tmp", "~")
_DRAIN = 300.0
"""Seconds an old version waits for its calls before it unloads anyway (each has a deadline)."""
POLL_DELAY_MS = 500
"""How often a polling watch looks at the folder (``--watch-poll``)."""


@dataclass(frozen=True, slots=True)
class Watch:
    """What a remote runner watches, and how."""

    plugins: Path
    data: Path
    poll: bool = False


class RemoteService(LeavingService):
    """Serves a host over the network; reloads, adds and removes plugins; rejoins a new host.

    On SIGTERM or SIGINT it drains its calls and leaves (:mod:`plughost_runner.remote.leaving`).
    """

    def __init__(
        self,
        endpoint: str,
        runner_id: str,
        credentials: Credentials,
        collector: LogCollector,
        offers: list[PluginSpec],
        watch: Watch | None = None,
    ) -> None:
        """``watch`` is None to serve without watching (``--no-watch``)."""
        super().__init__(endpoint, runner_id, credentials, collector, offers=offers)
        self._watching = watch
        self._changes = asyncio.Lock()  # one reload or rejoin at a time
        self._rejoining = False

    async def _serving(self, group: asyncio.TaskGroup) -> None:
        await super()._serving(group)
        if self._watching is None:
            return
        if self._watching.poll:
            poller = Poller(self._watching.plugins, POLL_DELAY_MS / 1000)
            await poller.start()  # its first look, before the ready report: no edit slips by
            log.info("watching %s by polling every %d ms", self._watching.plugins, POLL_DELAY_MS)
            group.create_task(self._watch(group, poller.batches()))
            return
        log.info("watching %s by filesystem events", self._watching.plugins)
        group.create_task(self._watch(group, _events(self._watching.plugins)))
        # watchfiles sets its watch up on the task's first step, before its first await:
        # one turn of the loop, and an edit made once the host has our report is seen.
        await asyncio.sleep(0)

    def _on_event(self, group: asyncio.TaskGroup, envelope: wire.Envelope) -> None:
        if envelope["method"] == "runner.rejoin" and not (self._rejoining or self.leaving):
            self._rejoining = True
            group.create_task(self._rejoin())

    async def _rejoin(self) -> None:
        """Say hello to a host that does not know this runner, with what it serves now.

        Raises:
            HostError: the host refused this runner (the service then exits with 3).
            TimeoutError: the host took the hello but not the ready report: the runner
                exits, as when its first ready report goes unanswered, and whatever
                restarts it (systemd, Kubernetes) starts it afresh.
        """
        try:
            async with self._changes:
                print("plughost runner: the host asks this runner to rejoin", file=sys.__stderr__)
                self._offers = [plugin.spec for plugin in self._plugins.values()]
                welcome = await self._hello()
                self._configure(welcome)  # this host's heartbeat interval and limits
                if self._pulse is not None:
                    self._pulse.interval = self._heartbeat_interval
                log.info("heartbeat interval %g s, as the host asks", self._heartbeat_interval)
                accepted = {str(p) for p in welcome.get("accepted", [])}
                for plugin_id in [p for p in self._plugins if p not in accepted]:
                    await unload_plugin(self._plugins.pop(plugin_id), timeout=5.0)
                loaded = [plugin.summary() for plugin in self._plugins.values()]
                report = {"loaded": loaded, "failed": [], "pid": os.getpid()}
                await self.request("runner.ready", report, timeout=30.0)
        finally:
            self._rejoining = False

    async def _watch(self, group: asyncio.TaskGroup, batches: AsyncIterator[set[str]]) -> None:
        assert self._watching is not None
        async for batch in batches:
            folders = _changed_folders(self._watching.plugins, {Path(path) for path in batch})
            # Gone folders first: a folder renamed in place leaves before it comes back.
            for folder in sorted(folders, key=lambda f: not _gone(f)):
                async with self._changes:
                    await self._changed(group, folder, self._watching.data)

    async def _changed(self, group: asyncio.TaskGroup, folder: Path, data_root: Path) -> None:
        """Reload, add or remove the plugin of ``folder``, as it is now; never raises."""
        if self.leaving:  # the process is about to exit: no new code, no offer to the host
            log.info("%s changed; not reloaded: this runner is leaving", folder)
            return
        current = next((p for p in self._plugins.values() if p.spec.path == folder), None)
        if current is None:
            await self._add(folder, data_root)
        elif _gone(folder):
            await self._remove(group, current)
        else:
            await self._reload(group, current, folder, data_root)

    async def _reload(
        self, group: asyncio.TaskGroup, current: LoadedPlugin, folder: Path, data_root: Path
    ) -> None:
        """Offer, load and swap in the new version of the plugin in ``folder``."""
        try:
            spec = read_spec(folder, data_root)
        except (ManifestError, OSError, ValueError) as exc:
            await self._report_failure(current.spec, "manifest", str(exc), folder / MANIFEST_FILE)
            return
        if spec.plugin_id != current.spec.plugin_id:
            reason = f"the id changed to {spec.plugin_id}; restart the runner to serve it"
            await self._report_failure(current.spec, "manifest", reason, folder / MANIFEST_FILE)
            return
        outcome = await self._offer_and_load(spec, "reload")
        if outcome is None:
            return
        in_flight = list(self._tasks.values())  # calls that may be running on the old version
        self._plugins[spec.plugin_id] = outcome
        log.info("plugin %s reloaded to %s", spec.plugin_id, spec.version)
        await self._report({"loaded": [outcome.summary()], "failed": []})
        group.create_task(_retire(current, in_flight))

    async def _add(self, folder: Path, data_root: Path) -> None:
        """Offer and load the plugin of a folder that is not served here (a new one)."""
        if not (folder / MANIFEST_FILE).is_file():
            return  # not a plugin folder, or not one yet
        try:
            spec = read_spec(folder, data_root)
        except (ManifestError, OSError, ValueError) as exc:
            log.error("%s: not offered: %s", folder, exc)
            return
        served = self._plugins.get(spec.plugin_id)
        if served is not None:
            log.error(
                "%s: not offered: plugin %s is served from %s",
                folder,
                spec.plugin_id,
                served.spec.path,
            )
            return
        outcome = await self._offer_and_load(spec, "add")
        if outcome is None:
            return
        self._plugins[spec.plugin_id] = outcome
        log.info("plugin %s %s added from %s", spec.plugin_id, spec.version, folder)
        await self._report({"loaded": [outcome.summary()], "failed": []})

    async def _remove(self, group: asyncio.TaskGroup, current: LoadedPlugin) -> None:
        """Stop serving a plugin whose folder is gone, once the host sends it no more calls."""
        plugin_id = current.spec.plugin_id
        try:
            await self.request(
                "plugin.removed", {"plugin_id": plugin_id}, plugin=plugin_id, timeout=10.0
            )
        except (HostError, TimeoutError) as exc:
            log.warning("the host did not take the removal of %s: %s", plugin_id, exc)
        # The host answered after taking this runner out of the pool: the calls it sent
        # before have arrived, and their tasks run before this one resumed.
        in_flight = list(self._tasks.values())
        del self._plugins[plugin_id]
        log.info(
            "plugin %s removed (%s is gone); it unloads after its calls",
            plugin_id,
            current.spec.path,
        )
        group.create_task(_retire(current, in_flight))

    async def _offer_and_load(self, spec: PluginSpec, what: str) -> LoadedPlugin | None:
        """Offer ``spec`` to the host and load it if accepted; None (reported) if not."""
        try:
            await self.request(
                "plugin.offer", {"offer": spec.offer()}, plugin=spec.plugin_id, timeout=10.0
            )
        except (HostError, TimeoutError) as exc:
            log.warning(
                "plugin %s %s: not loaded (%s): %s", spec.plugin_id, spec.version, what, exc
            )
            return None  # the host logged its refusal (and keeps a reload's for its status)
        outcome = await load_plugin(spec, Bridge(self, spec.plugin_id))
        if isinstance(outcome, LoadFailure):
            log.error(
                "plugin %s failed to load (%s) at %s: %s",
                spec.plugin_id,
                what,
                outcome.stage,
                outcome.reason,
            )
            await self._report({"loaded": [], "failed": [outcome.to_wire()]})
            return None
        return outcome

    async def _report_failure(self, spec: PluginSpec, stage: str, reason: str, file: Path) -> None:
        log.error("plugin %s failed to reload at %s: %s", spec.plugin_id, stage, reason)
        failure = LoadFailure(spec.plugin_id, str(spec.path), stage, reason, file=str(file))
        await self._report({"loaded": [], "failed": [failure.to_wire()]})

    async def _report(self, report: dict[str, Any]) -> None:
        try:
            await self.request("plugin.reloaded", report, timeout=10.0)
        except (HostError, TimeoutError) as exc:
            log.warning("the host did not take the reload report: %s", exc)


async def _retire(old: LoadedPlugin, in_flight: list[asyncio.Task[None]]) -> None:
    """Unload ``old`` once the calls that may be using it have finished."""
    if in_flight:
        await asyncio.wait(in_flight, timeout=_DRAIN)
    problem = await unload_plugin(old, timeout=5.0)
    if problem:
        log.warning("plugin %s (old version): %s", old.spec.plugin_id, problem)


async def _events(root: Path) -> AsyncIterator[set[str]]:
    """The changed paths under ``root``, from the filesystem's events (inotify)."""
    import watchfiles  # only a runner that watches loads its Rust extension

    async for batch in watchfiles.awatch(
        root, debounce=400, step=50, recursive=True, ignore_permission_denied=True
    ):
        yield {path for _, path in batch}


def _gone(folder: Path) -> bool:
    """Whether a served plugin's folder was removed (a missing manifest is a broken edit)."""
    return not folder.is_dir()


def _changed_folders(root: Path, paths: set[Path]) -> list[Path]:
    """The plugin folders (resolved) that ``paths`` touch, ignoring editor and bytecode files."""
    root = root.resolve()
    folders: set[Path] = set()
    for path in (Path(os.path.abspath(p)) for p in paths):
        name = path.name
        if name.endswith(_IGNORED_SUFFIXES) or name.startswith((".", "#")):
            continue
        if "__pycache__" in path.parts:
            continue
        if (root / MANIFEST_FILE).exists():
            folders.add(root)
        elif root in path.parents:
            folders.add(root / path.relative_to(root).parts[0])
    return sorted(folders)
