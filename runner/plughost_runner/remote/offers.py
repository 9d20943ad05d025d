"""The plugins a remote runner offers: each folder under ``--plugins``, read from disk.

:func:`read_spec` reads one folder as it is now (manifest, ``config.toml``, the
digest of its files); the runner offers the result to the host when it joins
(:mod:`plughost_runner.remote.cli`) and again when the folder changes
(:mod:`plughost_runner.remote.service`).
"""

from __future__ import annotations

import hashlib
import sys
import tomllib
from pathlib import Path

from plughost_runner.plugins.loader import PluginSpec
from plughost_sdk.errors import ManifestError
from plughost_sdk.manifest import MANIFEST_FILE, load_manifest
from plughost_sdk.plugin_digest import DigestError, plugin_sha256

__all__ = ["find_plugins", "read_spec"]


def find_plugins(root: Path, data_root: Path) -> list[PluginSpec]:
    """Every plugin folder under ``root`` (or ``root`` itself) with a valid manifest."""
    folders = [root] if (root / MANIFEST_FILE).exists() else sorted(p for p in root.iterdir())
    specs = []
    for folder in folders:
        if not (folder / MANIFEST_FILE).is_file():
            continue
        try:
            specs.append(read_spec(folder, data_root))
        except (ManifestError, OSError, ValueError) as exc:
            print(f"plughost runner: skipping {folder}: {exc}", file=sys.stderr)
    return specs


def read_spec(folder: Path, data_root: Path) -> PluginSpec:
    """What this runner offers and loads for one plugin folder, as it is on disk now.

    Its configuration is the folder's own ``config.toml``: a remote plugin is
    configured on the runner's machine, not by the host.

    Raises:
        ManifestError: the manifest is invalid.
        OSError, ValueError: a file cannot be read, or ``config.toml`` is not TOML.
    """
    manifest = load_manifest(folder)
    config_file = folder / "config.toml"
    raw = config_file.read_bytes() if config_file.is_file() else b""
    try:
        digest, problem = plugin_sha256(folder), ""
    except DigestError as exc:  # refused by the host only where a pin needs the digest
        digest, problem = "", str(exc)
    return PluginSpec(
        plugin_id=manifest.id,
        path=folder.resolve(),
        config=tomllib.loads(raw.decode("utf-8")) if raw else {},
        config_version=hashlib.sha256(raw).hexdigest()[:12] if raw else "",
        data_dir=(data_root / "data" / manifest.id).resolve(),
        temp_dir=(data_root / "temp" / manifest.id).resolve(),
        flavor="maibot" if manifest.targets_maibot else "plughost",
        version=manifest.version,
        plugin_sha256=digest,
        digest_problem=problem,
        capabilities=tuple(manifest.capabilities),
    )
