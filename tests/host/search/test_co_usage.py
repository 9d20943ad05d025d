"""Tools used together: learned from a conversation's calls, lifting each other in a search."""

from __future__ import annotations

import json

import pytest

from plughost.search import co_usage
from plughost.search.co_usage import CoUsage
from plughost.search.service import ToolSearchService
from plughost.tools.registry import ToolRegistry
from plughost_sdk.models import ToolExecutionContext, ToolInvocation
from tests.host.search.test_quality import _EvalProvider
from tests.host.search.test_semantic import _spec

SPECS = [
    _spec("find_recipe", "Find a recipe for a dish"),
    _spec("recipe_of_the_day", "Show the recipe of the day"),
    _spec("recipe_reviews", "Read reviews of a recipe"),
    _spec("recipe_video", "Play a video of a recipe being cooked"),
    _spec("nutrition_facts", "Calories and nutrients of a food"),
    _spec("grocery_order", "Order groceries for delivery"),
    _spec("send_email", "Send an email"),
]


async def _names(service: ToolSearchService, query: str, limit: int) -> list[str]:
    return (await service.search(query, limit)).names


async def _call(registry: ToolRegistry, session_id: str, *names: str) -> None:
    for name in names:
        result = await registry.invoke(
            ToolInvocation(tool_name=name), ToolExecutionContext(session_id=session_id)
        )
        assert result.success, result.error_message


async def test_tools_a_conversation_called_together_lift_each_other_in_a_search() -> None:
    registry = ToolRegistry()
    registry.register_provider(_EvalProvider(SPECS))
    learning = ToolSearchService(registry, threshold=100)  # every tool sent: no refusals
    unaware = ToolSearchService(registry, threshold=100, used_together=False)
    before = await _names(learning, "recipe for pasta", 6)
    assert len(before) == 4  # the recipe tools; the others share no word with the query

    for session in ("s1", "s2", "s3"):
        await _call(registry, session, "find_recipe", "nutrition_facts", "grocery_order")

    after = await _names(learning, "recipe for pasta", 6)
    assert after[:4] == before  # lifted tools come after the tools that matched
    assert set(after[4:]) == {"nutrition_facts", "grocery_order"}  # never send_email
    assert await _names(unaware, "recipe for pasta", 6) == before
    learning.close()
    unaware.close()


async def test_a_refused_call_teaches_nothing() -> None:
    registry = ToolRegistry()
    registry.register_provider(_EvalProvider(SPECS))
    service = ToolSearchService(registry, threshold=0)  # searching: undiscovered calls refused
    for session in ("s1", "s2", "s3"):
        for name in ("find_recipe", "nutrition_facts"):
            result = await registry.invoke(
                ToolInvocation(tool_name=name), ToolExecutionContext(session_id=session)
            )
            assert result.error_code == "tool_not_discovered"
    assert len(await _names(service, "recipe for pasta", 6)) == 4  # nothing lifted
    service.close()


def test_one_conversation_is_a_hint_not_a_rule() -> None:
    together = CoUsage()
    together.record("s1", "a")
    together.record("s1", "b")
    together.record("s1", "b")  # a second call of the same tool counts once
    assert together.neighbours("a") == pytest.approx({"b": 1 / (1 + co_usage.PRIOR)})
    for session in ("s2", "s3", "s4"):
        together.record(session, "a")
        together.record(session, "b")
    assert together.neighbours("a")["b"] == pytest.approx(4 / (4 + co_usage.PRIOR))
    assert together.neighbours("c") == {}


def test_memory_is_bounded_by_conversations_and_tools_per_conversation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(co_usage, "MAX_SESSIONS", 2)
    monkeypatch.setattr(co_usage, "MAX_TOOLS_PER_SESSION", 2)
    together = CoUsage()
    for tool in ("a", "b", "c"):  # c is past the per-conversation limit
        together.record("s1", tool)
    assert set(together.neighbours("a")) == {"b"}
    together.record("s2", "x")
    together.record("s3", "y")  # s1 is forgotten: a new call of s1 starts afresh
    together.record("s1", "z")
    assert set(together.neighbours("z")) == set()
    assert set(together.neighbours("a")) == {"b"}  # counts already made stay


async def test_what_was_used_together_survives_a_restart_through_export_state() -> None:
    registry = ToolRegistry()
    registry.register_provider(_EvalProvider(SPECS))
    before_restart = ToolSearchService(registry, threshold=100)
    for session in ("s1", "s2", "s3"):
        await _call(registry, session, "find_recipe", "nutrition_facts")
    saved = json.loads(json.dumps(before_restart.export_state()))
    lifted = await _names(before_restart, "recipe for pasta", 6)
    before_restart.close()

    restarted = ToolSearchService(registry, threshold=100)
    with pytest.raises(ValueError, match="used-together state"):
        restarted.restore_state({**saved, "used_together": {"uses": {"find_recipe": "x"}}})
    assert len(await _names(restarted, "recipe for pasta", 6)) == 4  # the bad state changed nothing
    restarted.restore_state({"version": 1, "sessions": {"s9": ["find_recipe"]}})  # an older state
    assert list(restarted.discovery("s9").names) == ["find_recipe"]
    restarted.restore_state(saved)
    assert await _names(restarted, "recipe for pasta", 6) == lifted
    assert "nutrition_facts" in lifted
    restarted.close()


@pytest.mark.parametrize("used_together", [True, False])
async def test_the_host_setting_decides_whether_tools_used_together_lift_each_other(
    used_together: bool,
) -> None:
    from plughost.chat import build_tool_search
    from plughost.settings import ToolSearchSettings

    registry = ToolRegistry()
    registry.register_provider(_EvalProvider(SPECS))
    settings = ToolSearchSettings(
        enabled=True, threshold=100, semantic="off", used_together=used_together
    )
    service = build_tool_search(registry, settings)
    assert service is not None
    for session in ("s1", "s2", "s3"):
        await _call(registry, session, "find_recipe", "nutrition_facts", "grocery_order")

    found = await _names(service, "recipe for pasta", 6)
    assert ("nutrition_facts" in found) is used_together
    service.close()


@pytest.mark.parametrize("used_together", [True, False])
def test_serves_search_table_switches_tools_used_together(used_together: bool) -> None:
    from types import SimpleNamespace

    from plughost.cli.serve import register_host_tools
    from plughost.cli.serve_config import ServeConfig

    config = ServeConfig.model_validate(
        {"search": {"semantic": "off", "used_together": used_together}}
    )
    host = SimpleNamespace(tools=ToolRegistry(), search=None)
    register_host_tools(host, config)  # type: ignore[arg-type]

    assert host.search is not None
    assert ("used_together" in host.search.export_state()) is used_together
    host.search.close()
