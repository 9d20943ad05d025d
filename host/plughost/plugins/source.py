"""Find plugin folders and read what the host needs before any plugin code runs.

A plugin folder holds ``plugin.py``, ``_manifest.json`` and optionally
``config.toml``. The host validates the manifest and parses the configuration
itself, so a broken manifest or a TOML typo is reported with its file and line
without starting a runner. Duplicate ids are reported, never silently merged.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plughost_sdk import __version__ as sdk_version
from plughost_sdk.errors import ManifestError
from plughost_sdk.manifest import MANIFEST_FILE, Manifest, load_manifest, version_in_range

__all__ = [
    "CONFIG_FILE",
    "PluginProblem",
    "PluginSource",
    "is_plugin_dir",
    "read_config",
    "read_plugin",
    "scan_plugin_dirs",
    "write_config",
]

CONFIG_FILE = "config.toml"


@dataclass(frozen=True, slots=True)
class PluginSource:
    """A plugin folder whose manifest and configuration are valid."""

    plugin_id: str
    path: Path
    manifest: Manifest
    config: dict[str, Any] = field(default_factory=dict)
    config_version: str = ""
    warnings: tuple[str, ...] = ()

    def load_spec(self, data_root: Path, temp_root: Path, on_load_timeout: float) -> dict[str, Any]:
        """The wire form of ``plugins.load`` for this plugin."""
        return {
            "plugin_id": self.plugin_id,
            "path": str(self.path),
            "config": self.config,
            "config_version": self.config_version,
            "data_dir": str((data_root / self.plugin_id).resolve()),
            "temp_dir": str((temp_root / self.plugin_id).resolve()),
            "on_load_timeout": on_load_timeout,
            "flavor": "maibot" if self.manifest.targets_maibot else "plughost",
        }


@dataclass(frozen=True, slots=True)
class PluginProblem:
    """Why a plugin folder could not be used: which file, which line, and how to fix it."""

    path: Path
    stage: str
    reason: str
    plugin_id: str | None = None
    file: str = ""
    line: int = 0
    traceback: str = ""

    def describe(self) -> str:
        """One readable line: plugin, file:line, reason (the place once, if the reason has it)."""
        where = f"{self.file}:{self.line}" if self.line else (self.file or str(self.path))
        who = self.plugin_id or self.path.name
        if where in self.reason:
            return f"{who} ({self.stage}): {self.reason}"
        return f"{who} ({self.stage}) {where}: {self.reason}"


def is_plugin_dir(path: Path) -> bool:
    """Whether ``path`` looks like a plugin folder."""
    return path.is_dir() and ((path / "plugin.py").is_file() or (path / MANIFEST_FILE).is_file())


def read_config(path: Path) -> tuple[dict[str, Any], str]:
    """Parse ``<path>/config.toml``; return (data, version fingerprint).

    Raises:
        ManifestError: the TOML is invalid (the message has the line and column).
    """
    file = path / CONFIG_FILE
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        return {}, ""
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ManifestError(str(file), [f"invalid TOML: {exc}"]) from None
    return data, hashlib.sha256(raw).hexdigest()[:12]


def write_config(path: Path, text: str) -> tuple[dict[str, Any], str]:
    """Replace ``<path>/config.toml`` with ``text`` atomically; return (data, version).

    The version is the fingerprint :func:`read_config` computes, so the file
    watcher's echo of this write is recognized as already known.

    Raises:
        OSError: the file cannot be written.
        ManifestError: ``text`` is not valid TOML.
    """
    raw = text.encode("utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(str(path / CONFIG_FILE), [f"invalid TOML: {exc}"]) from None
    target = path / CONFIG_FILE
    partial = target.with_name(f".{CONFIG_FILE}.{os.getpid()}.tmp")
    partial.write_bytes(raw)
    os.replace(partial, target)
    return data, hashlib.sha256(raw).hexdigest()[:12]


def read_plugin(path: Path) -> PluginSource:
    """Validate one plugin folder's manifest and configuration.

    Raises:
        ManifestError: naming the file and every problem.
    """
    path = path.resolve()
    manifest = load_manifest(path)
    if manifest.plughost_sdk and not version_in_range(sdk_version, manifest.plughost_sdk):
        wanted = manifest.plughost_sdk
        raise ManifestError(
            str(path / MANIFEST_FILE),
            [
                f"field 'plughost_sdk' asks for {wanted.min_version or '*'} to "
                f"{wanted.max_version or '*'}, but this host has plughost-sdk {sdk_version}: "
                "widen the range or install a matching plughost"
            ],
        )
    if not (path / "plugin.py").is_file():
        raise ManifestError(str(path / "plugin.py"), ["file not found; a plugin needs plugin.py"])
    config, version = read_config(path)
    return PluginSource(
        plugin_id=manifest.id,
        path=path,
        manifest=manifest,
        config=config,
        config_version=version,
        warnings=tuple(manifest.warnings()),
    )


def scan_plugin_dirs(dirs: Iterable[Path]) -> tuple[list[PluginSource], list[PluginProblem]]:
    """Find every plugin folder under ``dirs`` (a dir may itself be a plugin folder).

    Returns:
        The valid plugins, sorted by id, and one problem per folder that is not.
    """
    sources: dict[str, PluginSource] = {}
    problems: list[PluginProblem] = []
    for folder in _plugin_folders(dirs):
        try:
            source = read_plugin(folder)
        except ManifestError as exc:
            problems.append(
                PluginProblem(folder, "manifest", "; ".join(exc.problems), file=exc.path)
            )
            continue
        existing = sources.get(source.plugin_id)
        if existing is not None:
            problems.append(
                PluginProblem(
                    folder,
                    "duplicate",
                    f"plugin id {source.plugin_id!r} is already used by {existing.path}; "
                    "give one of them another id in its _manifest.json",
                    plugin_id=source.plugin_id,
                    file=str(folder / MANIFEST_FILE),
                )
            )
            continue
        sources[source.plugin_id] = source
    return [sources[k] for k in sorted(sources)], problems


def _plugin_folders(dirs: Iterable[Path]) -> list[Path]:
    found: list[Path] = []
    for root in dirs:
        root = Path(root)
        if is_plugin_dir(root):
            found.append(root.resolve())
            continue
        if not root.is_dir():
            continue
        for child in sorted(root.iterdir()):
            if not child.name.startswith((".", "_")) and is_plugin_dir(child):
                found.append(child.resolve())
    return found
