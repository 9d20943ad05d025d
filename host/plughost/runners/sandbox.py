"""Which protections runners get: what the kernel offers, what the operator asks, per runner.

At its first start in a process the host asks the kernel, for real, what
this user may do: the probe (:mod:`plughost.runners.sandbox_probe`) tries each
protection in a throw-away child and answers with a :class:`SandboxSupport`.
With the operator's :class:`~plughost.settings.SandboxSettings` that gives the host-wide
:class:`SandboxReport` (shown in ``plughost serve``'s banner and
``host.sandbox``), and refuses to start when a required protection is
missing. For each runner :func:`runner_policy` then writes the policy the
runner applies to itself before any plugin code runs (``--sandbox``): its
plugin folders writable only through a copy-on-write view whose changes the
host keeps apart (:func:`folder_views`), its plugins' data and temp
directories writable, and a network namespace of its own, reaching out only
through its gate: to what it was granted, and to the ports its manifests ask
for (:func:`manifest_ports`).

What does not live here: the probe, which a one-shot command starts before
the settings are imported; applying the policy (the runner's
``plughost_runner.sandbox``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import get_args

from plughost.egress_ports import NO_PORTS, ManifestPorts
from plughost.plugins.source import PluginSource
from plughost.runners.sandbox_probe import SandboxSupport, probe_support
from plughost.settings import HostSettings, Protection, SandboxSettings
from plughost_sdk.errors import RunnerStartError

__all__ = [
    "PROTECTIONS",
    "RunnerSandbox",
    "SandboxReport",
    "SandboxSupport",
    "folder_views",
    "manifest_ports",
    "network_for",
    "probe_support",
    "runner_policy",
    "sandbox_report",
]

log = logging.getLogger(__name__)

FOLDER_VIEWS = ".folders"  # under the data root: what plugins wrote into their own folders
PROTECTIONS: tuple[Protection, ...] = get_args(Protection)  # in the order they are applied


@dataclass(frozen=True, slots=True)
class SandboxReport:
    """The protections every runner of this host gets, and why the others are missing."""

    enabled: bool
    active: tuple[str, ...]
    missing: Mapping[str, str]
    landlock_abi: int = 0

    def describe(self) -> str:
        """One line for a banner or a log."""
        if not self.enabled:
            return "sandbox: off (runner.sandbox.enabled = false)"
        active = ", ".join(self.active) or "none"
        text = f"sandbox: {active}"
        if self.missing:
            text += "; not active: " + ", ".join(sorted(self.missing))
        return text


@dataclass(frozen=True, slots=True)
class RunnerSandbox:
    """One runner's policy (the ``--sandbox`` argument) and what it turns on."""

    policy: str
    active: tuple[str, ...]
    tmpdir: str
    disk: tuple[str, ...] = ()  # what its plugins write to: counted against limits.disk_mb


def sandbox_report(settings: SandboxSettings, support: SandboxSupport) -> SandboxReport:
    """The host-wide protections: what the kernel offers and the settings want.

    Raises:
        RunnerStartError: a protection in ``settings.require`` is not available.
    """
    if not settings.enabled:
        missing: dict[str, str] = {p: "the sandbox is turned off" for p in PROTECTIONS}
        result = SandboxReport(False, (), missing, support.landlock_abi)
    else:
        wanted = [p for p in PROTECTIONS if p != "pid_namespace" or settings.pid_namespace]
        active = tuple(p for p in wanted if p in support.offered)
        missing = {
            str(p): support.reasons.get(p) or support.failure or "not offered by this kernel"
            for p in wanted
            if p not in support.offered
        }
        if not settings.pid_namespace:
            missing["pid_namespace"] = "turned off (runner.sandbox.pid_namespace = false)"
        result = SandboxReport(True, active, missing, support.landlock_abi)
    absent = [p for p in settings.require if p not in result.active]
    if absent:
        reasons = "; ".join(f"{p}: {result.missing.get(p, 'not active')}" for p in absent)
        raise RunnerStartError(
            f"the sandbox lacks required protections ({reasons}); run the host where the "
            "kernel grants them, or remove them from runner.sandbox.require"
        )
    return result


def runner_policy(
    sandbox: SandboxReport,
    settings: SandboxSettings,
    sources: Sequence[PluginSource],
    data_root: Path,
    temp_root: Path,
    endpoint: str,
    *,
    processes: int | None = None,
    cgroups: Sequence[str] = (),
    runner_id: str = "runner",
    disk_mb: int | None = None,
    egress: str = "",
    write_grants: Sequence[Path] = (),
) -> RunnerSandbox | None:
    """The policy for a runner serving ``sources``; None when the sandbox is off.

    Creates the plugins' data and temp directories: a confined runner could not
    create them itself, since their parents are not its own. ``processes`` is
    ``limits.processes``; ``cgroups`` are ``cgroup.procs`` files the runner
    joins before it forks anything (a root host's way to enforce
    ``limits.processes`` and measure ``limits.memory_mb``, see
    :mod:`plughost.runners.processes` and :mod:`plughost.runners.memory`).
    """
    if not sandbox.enabled or not sandbox.active:
        return None
    active = set(sandbox.active)
    if "user_namespace" not in active:  # the view is a mount in the runner's own namespace
        active.discard("folder_overlay")
    writable = []
    for root in (data_root, temp_root):
        for source in sources:
            folder = (root / source.plugin_id).resolve()
            folder.mkdir(parents=True, exist_ok=True)
            writable.append(str(folder))
    overlays = folder_views(sources, data_root, runner_id) if "folder_overlay" in active else []
    viewed = {overlay[0] for overlay in overlays}
    asking = sources if settings.manifest_network else []  # the operator may cap manifests
    connect, bind = _network(asking, endpoint, active)
    policy = {
        "user_namespace": "user_namespace" in active,
        "network_namespace": "network_namespace" in active and "user_namespace" in active,
        "pid_namespace": "pid_namespace" in active and "user_namespace" in active,
        "no_new_privs": "no_new_privs" in active,
        "seccomp": "seccomp" in active and "no_new_privs" in active,
        "landlock": "landlock" in active and "no_new_privs" in active,
        "read": [str(s.path) for s in sources if str(s.path) not in viewed]
        + [str(s.packages) for s in sources if s.packages is not None]  # their own packages
        + [str(p.resolve()) for p in settings.read_paths],
        "write": writable
        + sorted(viewed)
        + [str(p.resolve()) for p in (*settings.write_paths, *_made(write_grants))],
        "connect_ports": connect,
        "bind_ports": bind,
        "processes": processes,
        "cgroups": list(cgroups),
        "overlays": overlays,
        "file_size": disk_mb * 2**20 if disk_mb is not None else None,
    }
    if not policy["landlock"]:
        active -= {"landlock_network", "landlock_scopes"}
    closed = policy["network_namespace"] or ("landlock_network" in active and connect == [])
    if egress and closed:
        policy["egress"] = egress
        # A manifest's bind ports are opened on the host's network by the gate.
        policy["listen"] = (
            policy["network_namespace"] and manifest_ports(settings, sources).bind != frozenset()
        )
    names = tuple(p for p in PROTECTIONS if p in active and policy.get(p, True))
    tmpdir = writable[len(sources)]  # the first plugin's temp directory
    disk = (*writable, *(upper for _, upper, _ in overlays))
    return RunnerSandbox(json.dumps(policy, separators=(",", ":")), names, tmpdir, disk)


def _made(paths: Sequence[Path]) -> Sequence[Path]:
    """The operator's granted directories, made if missing (Landlock skips absent paths)."""
    for path in paths:
        if not path.exists():
            path.mkdir(parents=True, exist_ok=True)
    return paths


def network_for(settings: HostSettings, sources: Sequence[PluginSource]) -> list[str]:
    """The network grants of a runner serving ``sources`` (docs/operators.md, "Network").

    The operator's ``network_grants`` for a plugin they name; for a plugin
    written for MaiBot they do not name, ``runner.sandbox.maibot_network``;
    for any other, nothing.
    """
    grants: list[str] = []
    for source in sources:
        named = settings.network_grants.get(source.plugin_id)
        if named is not None:
            grants += named
        elif source.manifest.targets_maibot:
            grants += settings.runner.sandbox.maibot_network
    return list(dict.fromkeys(grants))


def folder_views(
    sources: Sequence[PluginSource], data_root: Path, runner_id: str
) -> list[list[str]]:
    """``[folder, upper, work]`` for each plugin: its folder writable copy-on-write.

    What a plugin writes into its own folder lands in ``<data_dir>/.folders/<id>/upper``,
    beside (not inside) its data directory: out of its neighbours' reach, out of the
    folder the host reads and watches (so no write of its own reloads it), and kept
    across restarts and reloads. Each runner has its own overlayfs work directory.
    """
    views = []
    for source in sources:
        base = folder_view(data_root, source.plugin_id)
        upper, work = base / "upper", base / f"work-{runner_id}"
        upper.mkdir(parents=True, exist_ok=True)
        work.mkdir(exist_ok=True)
        views.append([str(source.path), str(upper), str(work)])
    return views


def folder_view(data_root: Path, plugin_id: str) -> Path:
    """Where a plugin's folder view keeps its layers (``upper``, ``work-*``, ``set-aside``)."""
    return (data_root / FOLDER_VIEWS / plugin_id).resolve()


def manifest_ports(settings: SandboxSettings, sources: Sequence[PluginSource]) -> ManifestPorts:
    """The TCP ports a runner's manifests ask for, which its gate opens (none if capped)."""
    if not settings.manifest_network:
        return NO_PORTS
    return ManifestPorts.of(*_ports(sources))


def _network(
    sources: Sequence[PluginSource], endpoint: str, active: set[str]
) -> tuple[list[int] | None, list[int] | None]:
    """The TCP ports Landlock allows (None: any); drops what ``active`` cannot keep.

    Every runner gets a network namespace of its own, so none sees the host's
    socket tables; the ports its manifests ask for are opened by its gate
    (:mod:`plughost.egress_ports`). Only where there is no such namespace (no
    user namespaces), or a runner reaches the host over TCP (``transport =
    "tcp"``), does it share the host's network, Landlock filtering TCP by port.
    """
    connect, bind = _ports(sources)
    granted = any(source.manifest.network is not None for source in sources)
    if endpoint.startswith("tcp://"):  # the runner reaches the host over loopback TCP
        granted = True
        if connect is not None:
            connect.append(int(endpoint.rsplit(":", 1)[1]))
        active.discard("network_namespace")
    elif "network_namespace" in active and "user_namespace" in active:
        connect, bind = [], []  # its own namespace: the gate opens what the manifests ask
    elif granted:
        active.discard("network_namespace")
    if connect is None and bind is None:
        active.discard("landlock_network")  # "any" port for both: nothing left to filter
    if "landlock_network" not in active:
        return None, None
    return connect, bind


def _ports(sources: Sequence[PluginSource]) -> tuple[list[int] | None, list[int] | None]:
    """The TCP ports the manifests ask for: (connect, bind); None means any port."""
    connect: list[int] | None = []
    bind: list[int] | None = []
    for source in sources:
        network = source.manifest.network
        if network is None:
            continue
        if network.connect == "any":
            connect = None
        elif connect is not None:
            connect.extend(network.connect)
        if network.bind == "any":
            bind = None
        elif bind is not None:
            bind.extend(network.bind)
    return connect, bind
