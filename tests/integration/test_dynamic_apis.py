"""APIs a plugin publishes while it runs (api.replace_dynamic), through real runners."""

from __future__ import annotations

from typing import Any

from plughost.host import PluginHost
from tests.conftest import TEST_PLUGINS, HostFactory

DYNAMIC = TEST_PLUGINS / "dynamic_api"


async def _publish(host: PluginHost, names: list[str]) -> dict[str, Any]:
    result = await host.invoke("publish", {"names": names})
    assert result.success, result.error_message
    answer: dict[str, Any] = result.structured_content["answer"]
    return answer


async def test_published_apis_are_callable_and_dropped_ones_answer_with_the_reason(
    make_host: HostFactory,
) -> None:
    async with make_host([DYNAMIC]) as host:
        at_load = await host.call_api("tests.dynamic_api.greet", who="Ada")
        answer = await _publish(host, ["wave"])
        wave = await host.call_api("wave", who="Bo")
        greet = await host.call_api("greet", who="Cy")
        fixed = await host.call_api("fixed")

    assert at_load.result == "greet says hi to Ada"
    assert answer == {"success": True, "count": 1, "offlined": 1}
    assert wave.result == "wave says hi to Bo"
    assert (greet.success, greet.error_code, greet.error) == (
        False,
        "api_offline",
        "greet retired; use wave",
    )
    assert fixed.result == "declared"


async def test_a_dynamic_api_cannot_replace_a_declared_one(make_host: HostFactory) -> None:
    async with make_host([DYNAMIC]) as host:
        answer = await _publish(host, ["fixed"])
        fixed = await host.call_api("fixed")

    assert answer["success"] is False
    assert "would replace a declared @API" in answer["error"]
    assert fixed.result == "declared"


async def test_a_maibot_plugin_publishes_an_api_with_sync_dynamic_apis(
    make_host: HostFactory,
) -> None:
    async with make_host([TEST_PLUGINS / "maibot_dynamic_api"]) as host:
        called = await host.call_api("community.dynamic-shouter.shout", text="hi")

    assert (called.success, called.result) == (True, "HI!")
