"""Which of the bot's configuration scopes a plugin subscribed to, as the host accepted it.

A MaiBot plugin lists ``config_reload_subscriptions = ("bot",)`` (or ``"model"``)
to get the embedding bot's own configuration, which can hold the model API
keys. Its runner reports that list once, in the plugin's ``runner.ready``
entry (``config_subscriptions``), and the host keeps the report. When the bot's
configuration changes, the host sends a scope only to the runners whose report
lists it for that plugin, naming only that plugin: a plugin that did not
subscribe at load never has the configuration cross into its process, whatever
its code does there (reads the runner's socket, changes its class attribute
later). Plugins that share one runner share its memory, so they trust each
other (docs/operators.md says so).

What is accepted from the report is validated here: a list of the known scope
names; anything else counts as no subscription at all, so a malformed report
fails closed.

What does not live here: the delivery (:meth:`plughost.reloader.PluginReloader.broadcast_config`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["BOT_SCOPES", "subscribed_scopes"]

log = logging.getLogger(__name__)

BOT_SCOPES: Final = frozenset({"bot", "model"})
"""The scopes of the bot's own configuration a plugin may subscribe to."""


def subscribed_scopes(report: Mapping[str, Any], plugin_id: str) -> frozenset[str]:
    """The scopes ``plugin_id`` subscribed to, from its runner's accepted load report.

    Args:
        report: The runner's ``runner.ready`` report, as the host accepted it.
        plugin_id: The plugin whose entry to read.

    Returns:
        A subset of :data:`BOT_SCOPES`; empty when the plugin did not load there,
        subscribed to nothing, or its entry is malformed.
    """
    for entry in report.get("loaded") or ():
        if isinstance(entry, dict) and entry.get("plugin_id") == plugin_id:
            return _scopes(entry.get("config_subscriptions", []), plugin_id)
    return frozenset()


def _scopes(raw: Any, plugin_id: str) -> frozenset[str]:
    if isinstance(raw, list) and all(isinstance(s, str) and s in BOT_SCOPES for s in raw):
        return frozenset(raw)
    log.warning(
        "plugin %s: its runner reported config_subscriptions %.200r, which are not a list "
        "of %s; it gets none of the bot's configuration",
        plugin_id,
        raw,
        " and ".join(sorted(BOT_SCOPES)),
    )
    return frozenset()
