"""``runner-credentials new --pin FOLDER``: pin a remote plugin to a copy of its folder.

A pin has two halves, because the host can check only one of them itself:

- the digest of the whole folder (:func:`plughost_sdk.plugin_digest.plugin_sha256`),
  which a runner offering the plugin must name. A runner computes it from its
  own copy, so an honest runner whose files were changed is refused, but a
  runner that lies can name any digest;
- what that copy declares when it is loaded (tool, command, API, resource and
  prompt names, see :func:`plughost.runners.reports.declared_names`): the
  plugin is loaded here, in the throwaway sandboxed runners ``plughost check``
  uses, and the host later registers nothing else from a runner offering that
  digest, whatever the runner says.

A plugin that cannot be loaded here (a dependency only the runner's machine
has) cannot be pinned this way; the error gives the digest-only entry
(``--plugin ID==VERSION@sha256:HEX``) for an operator who accepts that.

What does not live here: the allow-list itself (``plughost.remote.keys``).
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from plughost.cli.one_shot import throwaway_settings
from plughost.host import PluginHost
from plughost.remote.keys import AllowEntry
from plughost.runners.reports import declared_names
from plughost_sdk.errors import ManifestError
from plughost_sdk.manifest import load_manifest
from plughost_sdk.plugin_digest import DigestError, plugin_sha256

__all__ = ["PinnedPlugin", "pin_folder"]

_LOAD_SECONDS = 30.0

PinnedPlugin = tuple[AllowEntry, frozenset[str]]
"""The allow-list entry (id, version, digest) and what that copy declares."""


def pin_folder(folder: Path) -> PinnedPlugin:
    """Pin the plugin in ``folder``: its digest, and what it declares when loaded here.

    Runs the plugin's code in sandboxed throwaway runners (as ``plughost
    check`` does); call it where no event loop runs.

    Raises:
        ValueError: no valid manifest, a folder that cannot be digested, or a
            plugin that does not load here; the message says what to do.
    """
    try:
        manifest = load_manifest(folder)
        digest = plugin_sha256(folder)
    except (ManifestError, DigestError, OSError) as exc:
        raise ValueError(f"--pin {folder}: {exc}") from None
    entry = AllowEntry(manifest.id, manifest.version, digest)
    declared, problem = asyncio.run(_declarations(folder, manifest.id))
    if declared is None:
        raise ValueError(
            f"--pin {folder}: plugin {manifest.id} did not load here, so what it declares "
            f"cannot be pinned ({problem}). Install what it needs on this machine and try "
            f"again, or pin its files alone with --plugin {entry} (the host then cannot "
            "check what a runner declares for it)"
        )
    return entry, frozenset(declared)


async def _declarations(folder: Path, plugin_id: str) -> tuple[set[str] | None, str]:
    """What the plugin declares when loaded in a private host, or None and why not."""
    with tempfile.TemporaryDirectory(prefix="plughost-pin-") as scratch:
        settings = throwaway_settings(Path(scratch), _LOAD_SECONDS)
        async with PluginHost([folder], settings=settings) as host:
            runner_process = host.runner_for(plugin_id)
            reported = runner_process.report.get("loaded", []) if runner_process else []
            loaded = next((p for p in reported if p.get("plugin_id") == plugin_id), None)
            if loaded is not None:
                return declared_names(loaded), ""
            problem = host.problems.get(plugin_id) or host.problems.get(str(folder))
            return None, problem.reason if problem is not None else "it did not finish loading"
