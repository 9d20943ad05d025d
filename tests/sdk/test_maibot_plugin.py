"""MaiBotPlugin's leniencies and its configuration methods, without a runner."""

from __future__ import annotations

from typing import Any

import pytest

from plughost_sdk.maibot import Field, MaiBotPlugin, PluginConfigBase


class Settings(PluginConfigBase):
    greeting: str = Field(default="你好", description="问候语")
    times: int = Field(default=1, ge=1)


class Unversioned(MaiBotPlugin):
    config_model = Settings


async def test_lifecycle_methods_are_optional_and_a_model_needs_no_config_version() -> None:
    plugin = Unversioned()
    plugin.set_plugin_config({})

    await plugin.on_load()
    await plugin.on_config_update("self", {}, "v1")
    await plugin.on_unload()
    assert plugin.config.greeting == "你好"


def test_set_plugin_config_fills_defaults_and_keeps_a_copy_of_the_data() -> None:
    plugin = Unversioned()
    plugin.set_plugin_config({"times": 3})

    assert (plugin.config.greeting, plugin.config.times) == ("你好", 3)
    assert plugin.get_plugin_config_data() == {"greeting": "你好", "times": 3}


def test_an_invalid_configuration_leaves_config_unset_as_in_maibot() -> None:
    plugin = Unversioned()
    plugin.set_plugin_config({"times": 0})

    assert plugin.get_plugin_config_data() == {"times": 0}
    with pytest.raises(RuntimeError, match="not set"):
        _ = plugin.config


def test_config_reload_subscriptions_accept_bot_and_model_only() -> None:
    class Both(MaiBotPlugin):
        config_reload_subscriptions = ("MODEL", "bot")

    class Wrong(MaiBotPlugin):
        config_reload_subscriptions: Any = "bot"

    assert Both().get_config_reload_subscriptions() == ["bot", "model"]
    with pytest.raises(TypeError):
        Wrong().get_config_reload_subscriptions()


def test_ctx_outside_a_runner_says_so() -> None:
    with pytest.raises(RuntimeError, match="inside a runner"):
        _ = Unversioned().ctx
