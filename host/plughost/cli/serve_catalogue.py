"""What makes a saved tool list still true for ``plughost serve``: each source's fingerprint.

:func:`fingerprints` reads the configuration and the plugin folders it names
and returns one fingerprint per tool source, the keys of
:mod:`plughost.mcp.catalogue`:

- ``plugin:ID``: the SHA-256 of the plugin's folder
  (:func:`plughost_sdk.plugin_digest.plugin_sha256`) with its ``config.toml``,
  which that digest leaves out and which may change the plugin's tools;
- ``mcp:SERVER``: the SHA-256 of the server's ``[mcp.servers.SERVER]`` table;
- ``host``: plughost's version with everything else in the configuration
  (host settings, search, the rest of ``[mcp]``), so a change there drops the
  whole catalogue.

A plugin folder that cannot be digested (a link in it, too many bytes) gets a
fingerprint that matches no other, so while it is there every start is cold:
its tools are never served from the catalogue, and no list without them is.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from importlib import metadata
from typing import Any

from plughost.cli.serve_config import ServeConfig
from plughost.mcp.catalogue import HOST_KEY, ToolCatalogue
from plughost.plugins.source import scan_plugin_dirs
from plughost_sdk.plugin_digest import DigestError, plugin_sha256

__all__ = ["CATALOGUE_FILE", "catalogue_for", "fingerprints"]

CATALOGUE_FILE = "tool-catalogue.json"
"""Beside the per-plugin data directories, in the parent of ``[host] data_dir``."""


def catalogue_for(config: ServeConfig) -> ToolCatalogue:
    """The catalogue file of this configuration's data directory."""
    return ToolCatalogue(config.host.data_dir.parent / CATALOGUE_FILE)


def fingerprints(config: ServeConfig) -> dict[str, str]:
    """Every tool source's fingerprint now; reads each plugin folder whole."""
    found: dict[str, str] = {HOST_KEY: _host_fingerprint(config)}
    for name, server in config.mcp.servers.items():
        found[f"mcp:{name}"] = _digest(server.model_dump(mode="json"))
    sources, _ = scan_plugin_dirs(config.host.plugin_dirs)
    for source in sources:
        try:
            folder = plugin_sha256(source.path)
        except (DigestError, OSError):
            folder = f"not digested {secrets.token_hex(16)}"  # unchanged is unknowable
        found[f"plugin:{source.plugin_id}"] = _digest([folder, source.config_version])
    return found


def _host_fingerprint(config: ServeConfig) -> str:
    try:
        version = metadata.version("plughost")
    except metadata.PackageNotFoundError:
        version = "unknown"
    mcp = config.mcp.model_dump(mode="json", exclude={"servers"})
    host = config.host.model_dump(mode="json")
    search = config.search.model_dump(mode="json")
    return _digest([version, host, search, mcp])


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()
