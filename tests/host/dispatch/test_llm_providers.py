"""Which plugin provider the operator's ``[host.llm]`` choice names, and how a bad choice reads."""

from __future__ import annotations

import pytest

from plughost.dispatch.calls import ComponentCaller
from plughost.dispatch.llm_providers import LLMProviders, NoProviderError
from plughost.plugins.component_info import PluginComponent
from plughost.plugins.components import ComponentRegistry
from plughost.settings import HostSettings, LLMSettings
from plughost_sdk.models import ToolExecutionResult


class Owner:
    async def invoke(self, plugin_id: str, tool: str, arguments: object, timeout: float) -> object:
        return ToolExecutionResult(tool_name=tool)


def _providers(**choice: object) -> LLMProviders:
    registry = ComponentRegistry()
    both = [
        PluginComponent("v", "openai", "LLM_PROVIDER", {"version": "1"}),
        PluginComponent("v", "gemini", "LLM_PROVIDER", {"version": "2"}),
    ]
    registry.replace_plugin("v", [], Owner(), both)
    settings = HostSettings(llm=LLMSettings.model_validate(choice))
    return LLMProviders(registry, ComponentCaller(registry), lambda: settings)


def test_a_plugin_with_several_providers_must_be_chosen_with_a_client_type() -> None:
    providers = _providers(provider="v")

    with pytest.raises(
        NoProviderError, match=r"choose one in \[host\.llm\] as 'v:openai', 'v:gemini'"
    ):
        providers.chosen()


def test_a_model_mapping_wins_over_the_default_provider() -> None:
    providers = _providers(provider="v:openai", models={"flash": "v:gemini"})

    assert providers.chosen("flash").name == "gemini"  # type: ignore[union-attr]
    assert providers.chosen("other").name == "openai"  # type: ignore[union-attr]
    assert providers.chosen("other").summary() == "client type openai, version 1"  # type: ignore[union-attr]


def test_no_choice_means_no_provider() -> None:
    assert _providers().chosen("anything") is None
