"""The packages a runner imports itself, read from the installed distributions.

The runner imports its own packages before any plugin, and a plugin's
environment is installed with them pinned, so a plugin always gets the
runner's pydantic, msgpack and pyzmq. A plugin that needs other versions of
them could never work: it is refused before anything is installed, with an
error naming both sides. The
list is not written down anywhere: it is ``plughost-runner``'s requirements,
followed through the installed distributions' metadata, so it stays right
when the runner gains or loses a dependency. The same pins are handed to the
installer as constraints, so a package that needs, say, an older pydantic
through its own dependencies is refused by the resolver, which says why.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

__all__ = ["RunnerPackage", "already_met", "conflicts", "constraints", "runner_packages"]

RUNNER_DISTRIBUTION = "plughost-runner"


@dataclass(frozen=True, slots=True)
class RunnerPackage:
    """A distribution the runner loads: its version and who needs it."""

    name: str
    version: str
    needed_by: str


@functools.cache
def runner_packages() -> dict[str, RunnerPackage]:
    """The runner's distribution and everything it requires, by canonical name."""
    found: dict[str, RunnerPackage] = {}
    pending = [(RUNNER_DISTRIBUTION, RUNNER_DISTRIBUTION)]
    while pending:
        name, needed_by = pending.pop()
        key = canonicalize_name(name)
        if key in found:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional dependency that is not installed
        found[key] = RunnerPackage(key, dist.version, needed_by)
        for line in dist.requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append((requirement.name, dist.metadata["Name"] or key))
    return found


def conflicts(requirements: list[Requirement]) -> list[str]:
    """A sentence for each requirement the runner's own copy of the package does not meet."""
    own = runner_packages()
    found = []
    for requirement in requirements:
        package = own.get(canonicalize_name(requirement.name))
        if package is None or requirement.specifier.contains(package.version, prereleases=True):
            continue
        found.append(
            f"it needs {requirement}, but the runner itself loads {package.name} "
            f"{package.version} (for {package.needed_by}), which comes first on sys.path; "
            f"widen the plugin's range to include {package.version}"
        )
    return found


def already_met(requirements: list[Requirement]) -> tuple[list[Requirement], list[str]]:
    """Split ``requirements`` into what must be installed and pins of what is already met.

    A runner sees every package installed beside it (the host's environment)
    before a plugin's own, so a requirement a package there satisfies needs no
    installation: a plugin declaring ``aiohttp`` on a host that has a fitting
    aiohttp starts at once, as it did before it declared anything, and a package
    with no wheel that is already installed is never built. One whose marker
    excludes this interpreter needs nothing either. A requirement with extras is
    always installed: whether the extras' own packages are present is not
    checked here. The pins keep what the installation resolves consistent with
    the copies the runner will load.
    """
    missing: list[Requirement] = []
    pins: list[str] = []
    for requirement in requirements:
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        try:
            version = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            version = None
        if (
            version is not None
            and not requirement.extras
            and requirement.specifier.contains(version, prereleases=True)
        ):
            pins.append(f"{canonicalize_name(requirement.name)}=={version}")
        else:
            missing.append(requirement)
    return missing, pins


def constraints() -> list[str]:
    """The runner's packages pinned, as installer constraints."""
    return [f"{p.name}=={p.version}" for p in sorted(runner_packages().values(), key=_name)]


def _name(package: RunnerPackage) -> str:
    return package.name
