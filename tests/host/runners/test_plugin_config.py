"""A MaiBot plugin's ctx.config.get_plugin/get_all, answered by the host from its own config."""

from __future__ import annotations

from typing import Any

import pytest

from plughost.runners.capabilities import CapabilityCall
from plughost.runners.plugin_config import PluginConfigCapability
from plughost_sdk.maibot.context import PluginContext, bridge_rpc_call

CONFIGS = {"community.notes": {"notes": {"max": 3}, "plugin": {"enabled": True}}}


class HostBridge:
    """What the runner's bridge and the host's router do, without processes."""

    def __init__(self) -> None:
        self.answer = PluginConfigCapability(CONFIGS.get)

    async def call_capability(
        self, plugin_id: str, capability: str, args: dict[str, Any], timeout_ms: int | None
    ) -> Any:
        return await self.answer(CapabilityCall(plugin_id, capability, args))


@pytest.fixture
def ctx() -> PluginContext:
    return PluginContext("community.notes", bridge_rpc_call(HostBridge(), "community.notes"))


async def test_a_plugin_reads_its_own_configuration(ctx: PluginContext) -> None:
    assert await ctx.config.get_plugin() == CONFIGS["community.notes"]
    assert await ctx.config.get_all() == CONFIGS["community.notes"]


async def test_one_key_of_it_with_a_default(ctx: PluginContext) -> None:
    answer = PluginConfigCapability(CONFIGS.get)
    found = await answer(
        CapabilityCall("community.notes", "config.get_plugin", {"key": "notes.max"})
    )
    missing = await answer(
        CapabilityCall("community.notes", "config.get_plugin", {"key": "x.y", "default": 9})
    )

    assert found == {"success": True, "value": 3}
    assert missing == {"success": True, "value": 9}


async def test_another_plugins_configuration_is_refused(ctx: PluginContext) -> None:
    assert await ctx.config.get_plugin("community.other") == {}
    answer = await PluginConfigCapability(CONFIGS.get)(
        CapabilityCall("community.notes", "config.get_plugin", {"plugin_name": "community.other"})
    )
    assert answer["success"] is False
    assert "only its own configuration" in answer["error"]
