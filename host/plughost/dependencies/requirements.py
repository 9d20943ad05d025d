"""The Python packages a plugin declares, read from its folder and normalized.

A plugin declares packages in any of three places, all read and merged:
``python_package`` entries of ``_manifest.json``'s ``dependencies`` (MaiBot's
way), a ``requirements.txt`` and a ``pyproject.toml``'s
``[project.dependencies]``. Each line is parsed as a PEP 508 requirement by
``packaging``; names are canonicalized, a name declared twice gets the
intersection of its version ranges, and the set is sorted, so two plugins that
ask for the same thing in different words share one environment. Only package
requirements are accepted: installer options (``-r``, ``--index-url``, ``-e``)
and direct URLs are refused, since a plugin must not choose where the host
downloads from.

What does not live here: whether the runner's own packages allow them
(:mod:`.runner_packages`), installing them (:mod:`.installer`).
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from plughost.plugins.source import PluginSource
from plughost_sdk.errors import ManifestError, PluginLoadError
from plughost_sdk.manifest import MANIFEST_FILE
from plughost_sdk.plugin_files import parse_toml, read_file

__all__ = [
    "PYPROJECT_FILE",
    "REQUIREMENTS_FILE",
    "DependencyError",
    "declares_packages",
    "plugin_requirements",
]

REQUIREMENTS_FILE = "requirements.txt"
PYPROJECT_FILE = "pyproject.toml"
MAX_PACKAGES = 100
"""Packages one plugin may declare. Its names travel into events, logs and the
installer's command, so a plugin must not choose how many there are; real plugins
declare a handful."""


class DependencyError(PluginLoadError):
    """A plugin's packages cannot be used: a bad line, a conflict, a failed install.

    Attributes:
        plugin_id: The plugin.
        file: The file that declares the package (or the plugin folder).
        packages: The packages concerned, as the plugin named them.
        reason: What is wrong and how to fix it.
    """

    def __init__(self, plugin_id: str, file: str, packages: list[str], reason: str) -> None:
        super().__init__(reason)
        self.plugin_id = plugin_id
        self.file = file
        self.packages = packages
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Declared:
    """One requirement and the file that declared it."""

    requirement: Requirement
    file: str


def declares_packages(source: PluginSource) -> bool:
    """Whether the plugin may declare packages (cheap: no file is parsed)."""
    if any(d.type == "python_package" for d in source.manifest.dependencies):
        return True
    return any((source.path / name).is_file() for name in (REQUIREMENTS_FILE, PYPROJECT_FILE))


def plugin_requirements(source: PluginSource) -> dict[str, Declared]:
    """Every package ``source`` declares, merged by canonical name (sorted by name).

    Reads files; call it from a worker thread.

    Raises:
        DependencyError: a line is not a requirement, or is an option or a URL.
    """
    merged: dict[str, Declared] = {}
    lines = _declared_lines(source)
    if len(lines) > MAX_PACKAGES:
        raise DependencyError(
            source.plugin_id,
            lines[-1][1],
            [],
            f"{len(lines)} packages declared, more than the {MAX_PACKAGES} a plugin may "
            "declare; list only what the plugin imports (its dependencies' own "
            "requirements are installed with them)",
        )
    for line, file in lines:
        requirement = _parsed(source, line, file)
        name = canonicalize_name(requirement.name)
        requirement.name = name
        earlier = merged.get(name)
        if earlier is not None:
            requirement.specifier &= earlier.requirement.specifier
            requirement.extras |= earlier.requirement.extras
        merged[name] = Declared(requirement, file)
    return dict(sorted(merged.items()))


def _declared_lines(source: PluginSource) -> list[tuple[str, str]]:
    manifest = str(source.path / MANIFEST_FILE)
    lines = [
        (f"{d.name}{_manifest_spec(d.version_spec)}", manifest)
        for d in source.manifest.dependencies
        if d.type == "python_package"
    ]
    lines += [(line, str(source.path / REQUIREMENTS_FILE)) for line in _requirements_txt(source)]
    lines += [(line, str(source.path / PYPROJECT_FILE)) for line in _pyproject(source)]
    return lines


def _manifest_spec(spec: str) -> str:
    """MaiBot's ``version_spec``: a PEP 440 range, or a bare version meaning exactly it."""
    spec = spec.strip()
    return f"=={spec}" if spec[:1].isdigit() else spec


def _requirements_txt(source: PluginSource) -> list[str]:
    raw = _read(source, REQUIREMENTS_FILE)
    if raw is None:
        return []
    lines = []
    for text in raw.decode("utf-8", "replace").splitlines():
        text = text.split(" #", 1)[0].strip()
        if text and not text.startswith("#"):
            lines.append(text)
    return lines


def _pyproject(source: PluginSource) -> list[str]:
    file = str(source.path / PYPROJECT_FILE)
    raw = _read(source, PYPROJECT_FILE)
    if raw is None:
        return []
    try:
        project = parse_toml(raw, file).get("project")
    except ManifestError as exc:
        raise DependencyError(source.plugin_id, file, [], "; ".join(exc.problems)) from None
    deps = project.get("dependencies", []) if isinstance(project, dict) else []
    if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
        raise DependencyError(
            source.plugin_id, file, [], "[project] dependencies must be a list of strings"
        )
    return list(deps)


def _read(source: PluginSource, name: str) -> bytes | None:
    try:
        return read_file(source.path, name)
    except ManifestError as exc:
        raise DependencyError(source.plugin_id, exc.path, [], "; ".join(exc.problems)) from None


def _parsed(source: PluginSource, line: str, file: str) -> Requirement:
    if line.startswith("-"):
        raise DependencyError(
            source.plugin_id,
            file,
            [line],
            f"{line!r} is an installer option, not a package: a plugin names packages only; "
            "the operator chooses where they come from ([dependencies] in the host's settings)",
        )
    try:
        requirement = Requirement(line)
    except InvalidRequirement as exc:
        raise DependencyError(
            source.plugin_id,
            file,
            [line],
            f"{line!r} is not a package requirement ({exc}); write it like 'aiohttp>=3.9'",
        ) from None
    if requirement.url:
        raise DependencyError(
            source.plugin_id,
            file,
            [requirement.name],
            f"{line!r} names a URL; name the package and its versions instead (the host "
            "installs from PyPI or the operator's wheel directory)",
        )
    return requirement
