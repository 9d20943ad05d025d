"""Which bot configuration scopes the host believes a plugin subscribed to: well-formed only."""

from __future__ import annotations

from typing import Any

import pytest

from plughost.runners.config_subscriptions import subscribed_scopes


def _report(subscriptions: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"plugin_id": "community.a", "tools": []}
    if subscriptions is not None:
        entry["config_subscriptions"] = subscriptions
    return {"loaded": [entry, {"plugin_id": "community.b", "config_subscriptions": ["bot"]}]}


def test_the_scopes_a_plugins_entry_lists_are_its_subscriptions() -> None:
    assert subscribed_scopes(_report(["model"]), "community.a") == {"model"}
    assert subscribed_scopes(_report(["bot", "model"]), "community.a") == {"bot", "model"}


def test_a_plugin_without_an_entry_or_a_list_subscribes_to_nothing() -> None:
    assert subscribed_scopes(_report(None), "community.a") == frozenset()
    assert subscribed_scopes(_report(["bot"]), "community.missing") == frozenset()


@pytest.mark.parametrize(
    "forged",
    ["model", ["model", "everything"], [["model"]], [{"scope": "model"}], {"model": True}],
)
def test_a_malformed_subscription_list_fails_closed(forged: Any) -> None:
    assert subscribed_scopes(_report(forged), "community.a") == frozenset()
