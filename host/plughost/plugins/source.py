"""Find plugin folders and read what the host needs before any plugin code runs.

A plugin folder holds ``plugin.py``, ``_manifest.json`` and optionally
``config.toml``. The host validates the manifest and parses the configuration
itself, so a broken manifest or a TOML typo is reported with its file and line
without starting a runner. An id several folders claim goes to the folder it is
bound to (:mod:`plughost.plugins.bindings`), never to the first by name; the
others are reported.

Both files are read through :mod:`plughost_sdk.plugin_files`: never through a
link, only regular files of the folder's own, bounded in size and depth. The
host calls these functions from a worker thread (``asyncio.to_thread``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from plughost.plugins.bindings import IdBindings
from plughost_sdk import __version__ as sdk_version
from plughost_sdk.errors import ManifestError
from plughost_sdk.manifest import MANIFEST_FILE, Manifest, load_manifest, version_in_range
from plughost_sdk.plugin_files import parse_toml, read_file, write_file

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
MAX_WRITTEN_CONFIG = 64 * 1024
"""Bytes of a ``config.toml`` the host writes for a plugin; it is parsed on the caller's thread."""


@dataclass(frozen=True, slots=True)
class PluginSource:
    """A plugin folder whose manifest and configuration are valid."""

    plugin_id: str
    path: Path
    manifest: Manifest
    config: dict[str, Any] = field(default_factory=dict)
    config_version: str = ""
    warnings: tuple[str, ...] = ()
    packages: Path | None = None
    """The directory of the plugin's own packages (plughost.dependencies), if it declares any."""

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
            "packages": str(self.packages) if self.packages is not None else "",
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

    def redacted(self, redact: Callable[[str], str]) -> PluginProblem:
        """This problem with what the plugin reported (reason, file, traceback) masked."""
        reason, file, traceback = map(redact, (self.reason, self.file, self.traceback))
        return replace(self, reason=reason, file=file, traceback=traceback)


def is_plugin_dir(path: Path) -> bool:
    """Whether ``path`` looks like a plugin folder.

    An entry of any kind named ``plugin.py`` or ``_manifest.json`` counts, so a
    folder whose manifest is a link or a FIFO is reported, not silently skipped.
    """
    return path.is_dir() and any(os.path.lexists(path / n) for n in ("plugin.py", MANIFEST_FILE))


def read_config(path: Path) -> tuple[dict[str, Any], str]:
    """Parse ``<path>/config.toml``; return (data, version fingerprint).

    Raises:
        ManifestError: the file is refused (a link, not a regular file, too big,
            nested too deep) or the TOML is invalid (with the line and column).
    """
    raw = read_file(path, CONFIG_FILE)
    if raw is None:
        return {}, ""
    data = parse_toml(raw, str(path / CONFIG_FILE))
    return data, hashlib.sha256(raw).hexdigest()[:12]


def write_config(path: Path, text: str) -> tuple[dict[str, Any], str]:
    """Replace ``<path>/config.toml`` with ``text`` atomically; return (data, version).

    The version is the fingerprint :func:`read_config` computes, so the file
    watcher's echo of this write is recognized as already known.

    Raises:
        OSError: the file cannot be written.
        ManifestError: ``text`` is over the size limit, not valid TOML, or
            ``config.toml`` is not a regular file (never written through).
    """
    raw = text.encode("utf-8", "surrogatepass")  # a lone surrogate fails as not UTF-8, below
    file = str(path / CONFIG_FILE)
    if len(raw) > MAX_WRITTEN_CONFIG:
        raise ManifestError(
            file,
            [
                f"the text planned for it is {len(raw):,} bytes, over the limit of "
                f"{MAX_WRITTEN_CONFIG:,} for a config.toml the host writes"
            ],
        )
    data = parse_toml(raw, file)
    write_file(path, CONFIG_FILE, raw)
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


def scan_plugin_dirs(
    dirs: Iterable[Path], bindings: IdBindings | None = None
) -> tuple[list[PluginSource], list[PluginProblem]]:
    """Find every plugin folder under ``dirs`` (a dir may itself be a plugin folder).

    Which folder gets an id several claim is the ``bindings``' decision (without
    them: none of those folders), never the order of their names.

    Returns:
        The valid plugins, sorted by id, and one problem per folder that is not.
    """
    found: list[PluginSource] = []
    problems: list[PluginProblem] = []
    for folder in _plugin_folders(dirs):
        try:
            found.append(read_plugin(folder))
        except ManifestError as exc:
            problems.append(
                PluginProblem(folder, "manifest", "; ".join(exc.problems), file=exc.path)
            )
    refused = (bindings or IdBindings()).settle((s.plugin_id, s.path) for s in found)
    sources: dict[str, PluginSource] = {}
    for source in found:
        reason = refused.get(source.path)
        if reason is None:
            sources[source.plugin_id] = source
            continue
        file = str(source.path / MANIFEST_FILE)
        problems.append(PluginProblem(source.path, "duplicate", reason, source.plugin_id, file))
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
    return list(dict.fromkeys(found))  # a folder reached twice (a link, nested dirs) is one claim
