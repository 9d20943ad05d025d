"""ToolCatalogue: the last tool list ``plughost serve`` served, kept on disk for a warm start.

One JSON file under the host's data directory holds the tools of the last live
listing, each under the source it came from (a plugin, an upstream MCP server,
or one of serve's own providers) with that source's fingerprint at the time:

- a plugin's is the digest of its folder
  (:func:`plughost_sdk.plugin_digest.plugin_sha256`) and of its ``config.toml``;
- an upstream server's is the digest of its ``[mcp.servers.NAME]`` table;
- built-in tools' is the fingerprint of serve's configuration and plughost's
  version;
- any other provider's tools (remote runners) are never served from it.

:meth:`ToolCatalogue.load` returns the saved tools only when every source
there is now has the fingerprint it had then: a plugin whose files changed, a
new plugin or a reconfigured server makes a cold start (its tools are known
only once it is up), so a client never lists a partial set. The tools of a
source that is gone are left out. A file that cannot be read is a cold start,
never an error, and so is one that is a link, or that another user owns or
may write: what it lists is shown to clients as this host's tools.

What does not live here: serving from it while the host starts
(:mod:`plughost.mcp.warm_start`), and computing fingerprints from a
configuration (:mod:`plughost.cli.serve_catalogue`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import mcp_types as types
from pydantic import ValidationError

from plughost.mcp.own_file import read_own, write_own
from plughost_sdk.models import ToolSpec

__all__ = ["ToolCatalogue", "source_of"]

log = logging.getLogger(__name__)

_FORMAT = 1
HOST_KEY = "host"
"""The fingerprint of everything that is not a plugin or an upstream server."""


def source_of(spec: ToolSpec) -> str:
    """The key of the source a listed tool came from.

    ``plugin:ID``, ``mcp:SERVER``, ``host`` for a built-in tool; any other
    provider's tools get a key no fingerprint has, so they are never served
    from the catalogue.
    """
    plugin_id = spec.metadata.get("plugin_id")
    if spec.provider_type == "plugin" and isinstance(plugin_id, str):
        return f"plugin:{plugin_id}"
    server = spec.metadata.get("server")
    if spec.provider_type == "mcp" and isinstance(server, str):
        return f"mcp:{server}"
    if spec.provider_type == "builtin":
        return HOST_KEY
    return f"other:{spec.provider_type}:{spec.provider_name}"


class ToolCatalogue:
    """The tool list of the last live listing, on disk.

    Args:
        path: The file (written atomically, mode 0600).
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self, fingerprints: Mapping[str, str]) -> list[ToolSpec] | None:
        """The saved tools whose source is unchanged, in their listed order.

        Args:
            fingerprints: Each current source's fingerprint by key, ``host`` among them.

        Returns:
            None when the file cannot be used (missing, unreadable, or a source's
            fingerprint differs or is new); else the saved tools of the sources
            there are now.
        """
        try:
            data = json.loads(read_own(self.path))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("tool catalogue unreadable, starting cold path=%s error=%s", self.path, exc)
            return None
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            return None
        saved = data.get("fingerprints")
        if not isinstance(saved, dict) or any(
            saved.get(key) != value for key, value in fingerprints.items()
        ):
            return None  # a source changed or is new: its tools are known only live
        try:
            return [
                _spec_from_json(entry["tool"])
                for entry in data.get("tools", [])
                if _unchanged(entry["source"], saved, fingerprints)
            ]
        except (KeyError, TypeError, ValidationError) as exc:
            log.warning("tool catalogue malformed, starting cold path=%s error=%s", self.path, exc)
            return None

    def save(self, specs: list[ToolSpec], fingerprints: Mapping[str, str]) -> None:
        """Replace the file with ``specs``; a failure to write is logged, not raised."""
        data = {
            "format": _FORMAT,
            "fingerprints": dict(fingerprints),
            "tools": [{"source": source_of(spec), "tool": _spec_to_json(spec)} for spec in specs],
        }
        try:
            write_own(self.path, data)
        except OSError as exc:
            log.warning("tool catalogue not saved path=%s error=%s", self.path, exc)


def _unchanged(source: str, saved: Mapping[str, Any], now: Mapping[str, str]) -> bool:
    current = now.get(source)
    return current is not None and saved.get(source) == current


def _spec_to_json(spec: ToolSpec) -> dict[str, Any]:
    data = spec.model_dump(mode="json")
    if isinstance(spec.mcp_tool, types.Tool):
        data["mcp_tool"] = spec.mcp_tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    return data


def _spec_from_json(data: dict[str, Any]) -> ToolSpec:
    tool = data.pop("mcp_tool", None)
    spec = ToolSpec.model_validate(data)
    if tool is None:
        return spec
    return spec.model_copy(update={"mcp_tool": types.Tool.model_validate(tool)})
